// The markers of an OpenSSH known_hosts file that libssh 0.10 skips: `@revoked` (a key that must
// never be accepted, even when a plain line names it too) and `@cert-authority` (a CA that vouches
// for the host's certificates, which libssh 0.10 cannot verify). Read from the file itself, before
// libssh's own check, with OpenSSH's host matching: patterns with * and ?, negation with !,
// [HOST]:PORT for ports other than 22, and hashed names (|1|SALT|HMAC-SHA1). Internal to slurm/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sweep::slurm {

// What the marker lines of a known_hosts file say about one host.
struct KnownHostsMarkers {
  // "@revoked" lines that name the key (whatever their host pattern: OpenSSH refuses a revoked key
  // for every host), as "FILE:LINE".
  std::vector<std::string> revoked_at;
  // "@cert-authority" lines whose patterns match the host, as "FILE:LINE".
  std::vector<std::string> cert_authority_at;
};

// The name known_hosts uses for `host` at `port`: "host" for 22, else "[host]:port".
std::string KnownHostsName(std::string_view host, int port);

// Whether `name` (a KnownHostsName) matches the comma-separated `patterns` of a known_hosts line:
// one pattern matches and no negated one does. A hashed entry (|1|...) matches by its HMAC.
bool KnownHostsPatternsMatch(std::string_view patterns, std::string_view name);

// Scans `text` (the file's content; `file` names it in results) for the markers that concern the
// host `name` presenting `key_type` `key_base64` (the public key's blob as known_hosts writes it).
KnownHostsMarkers ScanKnownHostsMarkers(std::string_view text, const std::string& file, std::string_view name,
                                        std::string_view key_type, std::string_view key_base64);

}  // namespace sweep::slurm
