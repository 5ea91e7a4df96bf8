// @revoked and @cert-authority lines of known_hosts; see known_hosts.h.
#include "slurm/known_hosts.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cctype>

namespace sweep::slurm {
namespace {

std::string_view NextField(std::string_view& rest) {
  size_t start = rest.find_first_not_of(" \t");
  if (start == std::string_view::npos) {
    rest = {};
    return {};
  }
  rest.remove_prefix(start);
  size_t end = rest.find_first_of(" \t");
  std::string_view field = rest.substr(0, end);
  rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
  return field;
}

// OpenSSH's match_pattern: '*' any run, '?' any one character; host names compare case-insensitively.
bool Glob(std::string_view pattern, std::string_view name) {
  size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  auto same = [](char a, char b) {
    return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
  };
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || same(pattern[p], name[n]))) {
      ++p, ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++, mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1, n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::string Base64(const unsigned char* data, size_t len) {
  std::string out(4 * ((len + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), data, static_cast<int>(len));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

// |1|SALT|HASH: HASH = base64(HMAC-SHA1(key = base64-decoded SALT, data = name)).
bool HashedMatch(std::string_view entry, std::string_view name) {
  entry.remove_prefix(3);
  size_t bar = entry.find('|');
  if (bar == std::string_view::npos) return false;
  std::string salt64(entry.substr(0, bar)), hash64(entry.substr(bar + 1));
  unsigned char salt[64];
  if (salt64.size() > 4 * sizeof salt / 3) return false;
  int salt_len =
      EVP_DecodeBlock(salt, reinterpret_cast<const unsigned char*>(salt64.data()), static_cast<int>(salt64.size()));
  if (salt_len < 0) return false;
  // EVP_DecodeBlock counts the '=' padding as zero bytes.
  salt_len -= static_cast<int>(std::count(salt64.end() - std::min<size_t>(2, salt64.size()), salt64.end(), '='));
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (!HMAC(EVP_sha1(), salt, salt_len, reinterpret_cast<const unsigned char*>(name.data()), name.size(), mac,
            &mac_len)) {
    return false;
  }
  return Base64(mac, mac_len) == hash64;
}

}  // namespace

std::string KnownHostsName(std::string_view host, int port) {
  if (port == 22) return std::string(host);
  return "[" + std::string(host) + "]:" + std::to_string(port);
}

bool KnownHostsPatternsMatch(std::string_view patterns, std::string_view name) {
  if (patterns.starts_with("|1|")) return HashedMatch(patterns, name);
  bool matched = false;
  while (!patterns.empty()) {
    size_t comma = patterns.find(',');
    std::string_view pattern = patterns.substr(0, comma);
    patterns.remove_prefix(comma == std::string_view::npos ? patterns.size() : comma + 1);
    bool negated = pattern.starts_with('!');
    if (negated) pattern.remove_prefix(1);
    if (pattern.empty() || !Glob(pattern, name)) continue;
    if (negated) return false;  // a negated match overrides every other pattern
    matched = true;
  }
  return matched;
}

KnownHostsMarkers ScanKnownHostsMarkers(std::string_view text, const std::string& file, std::string_view name,
                                        std::string_view key_type, std::string_view key_base64) {
  KnownHostsMarkers out;
  int line_no = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view rest = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    std::string_view marker = NextField(rest);
    if (marker != "@revoked" && marker != "@cert-authority") continue;  // plain lines: libssh's job
    std::string_view patterns = NextField(rest);
    std::string_view type = NextField(rest);
    std::string_view blob = NextField(rest);
    if (blob.empty()) continue;
    std::string where = file + ":" + std::to_string(line_no);
    if (marker == "@revoked") {
      // The blob carries its type inside; the type field is compared too, as OpenSSH does.
      if (type == key_type && blob == key_base64) out.revoked_at.push_back(where);
    } else if (KnownHostsPatternsMatch(patterns, name)) {
      out.cert_authority_at.push_back(where);
    }
  }
  return out;
}

}  // namespace sweep::slurm
