// The study file's loader: reads a study file (TOML) into a Study (study.h) and checks it before
// anything touches the cluster. Every error names the file, line and key; unknown keys are errors
// (with the closest known key suggested), so a typo never silently becomes a default.
#pragma once

#include <string>

#include "base/status.h"
#include "study/study.h"

namespace sweep::study {

Result<Study> LoadStudy(const std::string& path);
// For tests and tools: `text` as if read from `path`.
Result<Study> ParseStudy(const std::string& text, const std::string& path);

}  // namespace sweep::study
