// The study file's loader: reads a study file (TOML) into a Study (study.h) and checks it before
// anything touches the cluster. Every error names the file, line and key; unknown keys are errors
// (with the closest known key suggested), so a typo never silently becomes a default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"
#include "study/study.h"

namespace sweep::study {

// The largest study file read (README: limits): a [space] of 100k values is about 1 MiB.
inline constexpr uint64_t kMaxStudyFileBytes = 16u << 20;

// `path` must be a regular file of at most kMaxStudyFileBytes.
Result<Study> LoadStudy(const std::string& path);
// The hash of a study file's bytes (Study::hash), for who watches the file for edits.
std::string StudyFileHash(std::string_view text);
// For tests and tools: `text` as if read from `path`.
Result<Study> ParseStudy(const std::string& text, const std::string& path);

}  // namespace sweep::study
