// Text helpers shared by the log parsers of logs/ (Megatron-LM, framework formats): spaces,
// numbers as trainers print them, snake_case names, log-line timestamps.
// Internal to logs/ (its public headers: metrics_parser.h, log_summary.h,
// telemetry_parser.h, classify.h).
// Module logs/ (namespace sweep::logs): reading training logs; uses base/ only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sweep::logs {

inline bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string_view Trim(std::string_view s);
std::string_view SkipSpaces(std::string_view s);
bool ConsumePrefix(std::string_view& s, std::string_view prefix);
// Digits at the front of `s` as an int64, advancing `s`; false if none or overflow.
bool ConsumeInt(std::string_view& s, int64_t* out);
// The whole of `s` as a double, "nan"/"inf"/"NAN" included: a diverged run prints them and
// divergence detection must see them.
bool ParseDouble(std::string_view s, double* out);
// The first "key: value" field of `fields`, a '|'-separated list as Megatron-LM and NeMo print it,
// split off its front: the key and the value's text, both trimmed (the last ':' divides them). False
// for a field without a colon (blank, or a bare word), which holds nothing to measure.
bool NextField(std::string_view& fields, std::string_view* key, std::string_view* value);
// "throughput per GPU (TFLOP/s/GPU)" -> "throughput_per_gpu_tflop_s_gpu".
void SnakeCase(std::string_view key, std::string* out);
// "2025-06-04 08:51:48,074" or "2025-06-04T08:51:48.074" at the front of `s` as seconds since
// 1970 (the zone is ignored: only differences are used); nullopt if `s` does not start with one.
std::optional<double> ParseTimestamp(std::string_view s);
// Removes ANSI colour sequences ("\x1b[31m"), which torchtitan prints by default.
std::string StripAnsi(std::string_view s);

}  // namespace sweep::logs
