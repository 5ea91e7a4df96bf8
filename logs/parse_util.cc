// Text helpers shared by the log parsers (see parse_util.h).
#include "logs/parse_util.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <system_error>

namespace sweep::logs {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

std::string_view SkipSpaces(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  return s;
}

bool ConsumePrefix(std::string_view& s, std::string_view prefix) {
  if (s.substr(0, prefix.size()) != prefix) return false;
  s.remove_prefix(prefix.size());
  return true;
}

bool ConsumeInt(std::string_view& s, int64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(end - s.data());
  return true;
}

bool ParseDouble(std::string_view s, double* out) {
  if (s.empty()) return false;
  // from_chars rejects a leading '+', which C's "%+g" prints.
  if (s.front() == '+') {
    s.remove_prefix(1);
    if (s.empty() || s.front() == '-') return false;
  }
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, *out);
  if (p != end) return false;
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves the value alone out of range. Below the smallest double (1e-400) the
    // value is 0, as strtod says; above the largest (1e400) it is no number a trainer computed in
    // doubles: refused (the line counts malformed) rather than stored as an inf that would rank
    // as a result. A diverged run prints "inf" or "nan", which are read above.
    char buf[64];
    if (s.size() >= sizeof(buf)) return false;
    std::memcpy(buf, s.data(), s.size());
    buf[s.size()] = '\0';
    *out = std::strtod(buf, nullptr);
    return std::isfinite(*out);
  }
  return ec == std::errc();
}

bool NextField(std::string_view& fields, std::string_view* key, std::string_view* value) {
  size_t bar = fields.find('|');
  std::string_view field = fields.substr(0, bar);
  fields = bar == std::string_view::npos ? std::string_view() : fields.substr(bar + 1);
  size_t colon = field.rfind(':');
  if (colon == std::string_view::npos) return false;
  *key = Trim(field.substr(0, colon));
  *value = Trim(field.substr(colon + 1));
  return true;
}

void SnakeCase(std::string_view key, std::string* out) {
  out->clear();
  bool pending_sep = false;
  for (char c : key) {
    bool alnum = IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alnum) {
      pending_sep = true;
      continue;
    }
    if (pending_sep && !out->empty()) out->push_back('_');
    pending_sep = false;
    out->push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
  }
  while (!out->empty() && out->back() == '_') out->pop_back();
}

namespace {

// Fixed-width digits at s[pos..pos+n), or -1.
int Digits(std::string_view s, size_t pos, size_t n) {
  if (pos + n > s.size()) return -1;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (!IsDigit(s[i])) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil-days algorithm).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

}  // namespace

std::optional<double> ParseTimestamp(std::string_view s) {
  // YYYY-MM-DD?HH:MM:SS[,.]fff
  int year = Digits(s, 0, 4), month = Digits(s, 5, 2), day = Digits(s, 8, 2);
  int hour = Digits(s, 11, 2), minute = Digits(s, 14, 2), second = Digits(s, 17, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || hour < 0 || hour > 23 || minute < 0 ||
      minute > 59 || second < 0 || second > 60)
    return std::nullopt;
  if (s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') || s[13] != ':' || s[16] != ':') return std::nullopt;
  double t = static_cast<double>(DaysFromCivil(year, month, day)) * 86400.0 + hour * 3600.0 + minute * 60.0 + second;
  if (s.size() > 19 && (s[19] == ',' || s[19] == '.')) {
    double scale = 0.1;
    for (size_t i = 20; i < s.size() && IsDigit(s[i]) && i < 29; ++i, scale /= 10) t += (s[i] - '0') * scale;
  }
  return t;
}

std::string StripAnsi(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
      size_t j = i + 2;
      while (j < s.size() && !(s[j] >= '@' && s[j] <= '~')) ++j;
      i = j;  // the final byte of the sequence
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace sweep::logs
