// Control characters written visibly; see terminal.h.
#include "base/terminal.h"

#include <cstdio>

namespace sweep {
namespace {

// How byte `c` is written, or "" to write it as it is (`keep_lines`: \n and \t too).
std::string Visible(unsigned char c, bool keep_lines) {
  if (keep_lines && (c == '\n' || c == '\t')) return "";
  switch (c) {
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    case 0x1b:
      return "\\e";
    default:
      break;
  }
  if (c < 0x20 || c == 0x7f) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    return buf;
  }
  return "";
}

std::string C1(unsigned char second) {
  char buf[12];
  std::snprintf(buf, sizeof buf, "\\u{%02x}", second);
  return buf;
}

}  // namespace

std::string TerminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      out += C1(static_cast<unsigned char>(text[++i]));
      continue;
    }
    std::string v = Visible(c, false);
    if (v.empty()) out.push_back(static_cast<char>(c));
    else out += v;
  }
  return out;
}

TerminalGuard::TerminalGuard(std::ostream& out) : out_(out), original_(out.rdbuf()), filter_(original_) {
  out_.rdbuf(&filter_);
}

TerminalGuard::~TerminalGuard() {
  out_.flush();
  out_.rdbuf(original_);
}

bool TerminalGuard::Filter::Put(unsigned char c) {
  auto write = [&](std::string_view s) {
    return sink_->sputn(s.data(), static_cast<std::streamsize>(s.size())) == static_cast<std::streamsize>(s.size());
  };
  if (c2_) {
    c2_ = false;
    if (c >= 0x80 && c <= 0x9f) return write(C1(c));
    if (sink_->sputc(static_cast<char>(0xc2)) == traits_type::eof()) return false;
  }
  if (c == 0xc2) {
    c2_ = true;
    return true;
  }
  std::string v = Visible(c, true);
  if (v.empty()) return sink_->sputc(static_cast<char>(c)) != traits_type::eof();
  return write(v);
}

TerminalGuard::Filter::int_type TerminalGuard::Filter::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  return Put(static_cast<unsigned char>(traits_type::to_char_type(c))) ? c : traits_type::eof();
}

std::streamsize TerminalGuard::Filter::xsputn(const char* s, std::streamsize n) {
  for (std::streamsize i = 0; i < n; ++i) {
    if (!Put(static_cast<unsigned char>(s[i]))) return i;
  }
  return n;
}

}  // namespace sweep
