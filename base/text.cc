// Small text helpers; see text.h.
#include "base/text.h"

#include <cstdint>

#include <algorithm>
#include <string>
#include <vector>

namespace sweep {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string_view ClosestWord(std::string_view word, const std::vector<std::string_view>& candidates,
                             size_t max_distance) {
  std::string_view best;
  size_t best_d = max_distance + 1;
  for (std::string_view c : candidates) {
    size_t d = EditDistance(word, c);
    // Half the letters changed is another word, not a typo ("mbs" is no misspelt "lr").
    if (2 * d > std::max(word.size(), c.size())) continue;
    if (d < best_d) best_d = d, best = c;
  }
  return best;
}

std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best = ClosestWord(word, candidates);
  return best.empty() ? std::string() : " (did you mean '" + std::string(best) + "'?)";
}

size_t CleanCharLength(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return (c >= 0x20 && c != 0x7f) || c == '\t' || c == '\n' || c == '\r' ? 1 : 0;
  size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 0;
  if (n == 0 || c > 0xF4 || i + n > text.size()) return 0;
  uint32_t code = c & (0x7F >> n);
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMinOf[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMinOf[n] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  if (code >= 0x80 && code <= 0x9F) return 0;  // C1 controls
  return n;
}

void AppendCleanText(std::string_view text, std::string& out) {
  for (size_t i = 0; i < text.size();) {
    size_t n = CleanCharLength(text, i);
    if (n == 0) {
      out.append("\xEF\xBF\xBD");  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
}

std::string CleanText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendCleanText(text, out);
  return out;
}

}  // namespace sweep
