// Parsing of training logs into metric points: Megatron-LM iteration lines, JSON lines, the
// Hugging Face Trainer, PyTorch Lightning / NeMo, torchtitan and DeepSpeed, and per-metric regular
// expressions from the study file; "auto" picks one from the first metric line.
// Works on raw chunks read from a byte offset; only complete lines are consumed, so a line
// cut by a read boundary (or still being written) is parsed once it is whole.
// Module logs/ (namespace sweep::logs): reading training logs; uses base/ only. One of its four public
// headers (metrics_parser.h, log_summary.h, telemetry_parser.h, classify.h); the rest is internal.
#pragma once

#include <string>
#include <string_view>

#include "logs/log_format.h"

namespace sweep::logs {

// Parses the complete lines of `chunk`. Lines that are not metric lines (start-up banners,
// warnings) are skipped silently; metric-looking lines that fail to parse are counted in
// `malformed`, never fatal. Lines longer than kMaxLineBytes are skipped and counted malformed.
ParseOutput ParseMetrics(std::string_view chunk, const LogFormat& format, ParserState& state);

inline constexpr size_t kMaxLineBytes = 1 << 20;

// A metric name is stored as the log printed it (Megatron's fields snake_cased, JSON keys as they
// are, nested ones joined with '.'), if it is 1-128 bytes of printable UTF-8; a point with any
// other name is dropped and its line counted malformed.
inline constexpr size_t kMaxMetricNameBytes = 128;
bool IsStorableMetricName(std::string_view name);

}  // namespace sweep::logs
