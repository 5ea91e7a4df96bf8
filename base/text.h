// Small text helpers shared by the parsers of user input: suggesting the key the user meant.
// Module base/: the vocabulary every module shares; uses the standard library only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sweep {

// Levenshtein distance: insertions, deletions and substitutions, one each.
size_t EditDistance(std::string_view a, std::string_view b);

// The candidate closest to `word`, or "" if none is within `max_distance` edits and differs in
// at most half the letters of the longer of the two.
std::string_view ClosestWord(std::string_view word, const std::vector<std::string_view>& candidates,
                             size_t max_distance = 3);

// " (did you mean 'x'?)" with x the ClosestWord of `word`, or "" if none is close: the one
// wording every "unknown key/name" error uses.
std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates);

}  // namespace sweep
