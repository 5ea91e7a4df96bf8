// Line parsers for the training frameworks' own log output (Hugging Face Trainer, PyTorch
// Lightning / NeMo, torchtitan, DeepSpeed), per-metric regular expressions, and the detection
// behind metric_format = "auto"; metrics_parser.cc drives them line by line.
// Internal to logs/ (its public headers: metrics_parser.h, log_summary.h,
// telemetry_parser.h, classify.h).
// Module logs/ (namespace sweep::logs): reading training logs; uses base/ only.
#pragma once

#include <string_view>
#include <vector>

#include "logs/log_format.h"

namespace sweep::logs {

// Each returns whether `line` is a metric line of its format (points appended to out.points,
// or out.malformed counted); other lines (banners, warnings) are left alone.
bool ParseHuggingFaceLine(std::string_view line, ParseOutput& out, ParserState& state);
bool ParseLightningLine(std::string_view line, ParseOutput& out, ParserState& state);
bool ParseTorchtitanLine(std::string_view line, ParseOutput& out, ParserState& state);
bool ParseDeepSpeedLine(std::string_view line, ParseOutput& out, ParserState& state);

// The study's expressions over one line. `own_format`: the regexes are the whole format (the
// "step" expression sets the step); otherwise they add metrics at the step the format last read.
void ParseRegexLine(std::string_view line, const std::vector<MetricRegex>& regexes, bool own_format, ParseOutput& out,
                    ParserState& state);

// The format a line is a metric line of, by cheap signatures; kAuto when none.
MetricFormat DetectFormat(std::string_view line);

}  // namespace sweep::logs
