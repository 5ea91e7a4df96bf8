// Small text helpers; see text.h.
#include "base/text.h"

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

}  // namespace sweep
