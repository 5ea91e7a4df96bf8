// Escaping and number formats for the HTML report; see html_text.h.
#include "reports/html_text.h"

#include "base/text.h"

#include <fmt/format.h>

#include <cmath>

namespace sweep::reports {

void AppendHtmlEscaped(std::string_view text, std::string& out) {
  for (size_t i = 0; i < text.size();) {
    char c = text[i];
    switch (c) {
      case '&':
        out.append("&amp;");
        break;
      case '<':
        out.append("&lt;");
        break;
      case '>':
        out.append("&gt;");
        break;
      case '"':
        out.append("&quot;");
        break;
      case '\'':
        out.append("&#39;");
        break;
      default: {
        // Control bytes and invalid UTF-8 have no business in a report and some parsers
        // mishandle them: each such byte becomes U+FFFD (base/text.h).
        size_t n = CleanCharLength(text, i);
        if (n == 0) {
          out.append("&#xFFFD;");
          n = 1;
        } else {
          out.append(text.substr(i, n));
        }
        i += n;
        continue;
      }
    }
    ++i;
  }
}

std::string HtmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendHtmlEscaped(text, out);
  return out;
}

std::string Ellipsize(std::string_view text, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    bool starts_char = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_char && chars++ == max_chars) {
      // Cut before the character that does not fit, leaving room for the ellipsis.
      size_t cut = i;
      do --cut;
      while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80);
      return std::string(text.substr(0, cut)) + "…";
    }
  }
  return std::string(text);
}

std::string FormatSig(double value, int digits) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "∞" : "−∞";
  if (value == 0) return "0";
  double magnitude = std::fabs(value);
  if (magnitude != 0 && (magnitude >= 1e6 || magnitude < 1e-4)) return fmt::format("{:.{}e}", value, digits - 1);
  // Fixed notation with as many decimals as the significant digits need: 1.23, 12.3, 123, 12345.
  int int_digits = magnitude >= 1 ? static_cast<int>(std::floor(std::log10(magnitude))) + 1 : 0;
  int decimals = std::max(0, digits - int_digits);
  if (magnitude > 0 && magnitude < 1) decimals = digits - 1 - static_cast<int>(std::floor(std::log10(magnitude)));
  std::string s = fmt::format("{:.{}f}", value, decimals);
  if (s == "-0" || (s.starts_with("-0.") && s.find_first_not_of("0.", 1) == std::string::npos)) s.erase(0, 1);
  return s;
}

std::string FormatSigOr(const std::optional<double>& value, int digits) {
  return value ? FormatSig(*value, digits) : "–";
}

std::string FormatCompact(double value) {
  double magnitude = std::fabs(value);
  if (!std::isfinite(value) || magnitude < 1e4) return FormatSig(value, 3);
  if (magnitude < 1e6) return FormatSig(value / 1e3, 3) + "k";
  if (magnitude < 1e9) return FormatSig(value / 1e6, 3) + "M";
  return FormatSig(value / 1e9, 3) + "G";
}

std::string FormatDuration(double seconds) {
  if (std::isnan(seconds)) return "–";
  if (seconds < 120) return FormatSig(seconds, seconds < 10 ? 2 : 3) + " s";
  if (seconds < 2 * 3600) return fmt::format("{:.1f} min", seconds / 60);
  if (seconds < 2 * 86400) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} d", seconds / 86400);
}

std::string FormatFactor(double factor) { return "×" + fmt::format("{:.2f}", factor); }

}  // namespace sweep::reports
