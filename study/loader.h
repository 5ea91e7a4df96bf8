// The study file's loader: reads a study file (TOML) into a Study (study.h) and checks it before
// anything touches the cluster. Every error names the file, line and key; unknown keys are errors
// (with the closest known key suggested), so a typo never silently becomes a default.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "study/study.h"

namespace sweep::study {

// The largest study file read (README: limits): a [space] of 100k values is about 1 MiB.
inline constexpr uint64_t kMaxStudyFileBytes = 16u << 20;

// `path` must be a regular file of at most kMaxStudyFileBytes.
Result<Study> LoadStudy(const std::string& path);
// For tests and tools: `text` as if read from `path`.
Result<Study> ParseStudy(const std::string& text, const std::string& path);

}  // namespace sweep::study
