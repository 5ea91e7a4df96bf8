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

// The length of the character at text[i] if it is valid UTF-8 (shortest form, no surrogate, at
// most U+10FFFF) and printable: not a control character (C0 other than tab, line feed and
// carriage return; DEL; C1). 0 otherwise: the byte is to be replaced.
size_t CleanCharLength(std::string_view text, size_t i);

// `text` with every byte that does not start a CleanCharLength character replaced by U+FFFD:
// what the reports write of text that came from a study, its logs or its metric names.
void AppendCleanText(std::string_view text, std::string& out);
std::string CleanText(std::string_view text);

}  // namespace sweep
