// Reading a trial's telemetry file (base/telemetry.h: what the sampler in its script writes) into
// metric points named under "system/", and nvidia-smi's CSV lines, which it embeds.
// Module logs/ (namespace sweep::logs): reading training logs; uses base/ only. One of its four public
// headers (metrics_parser.h, log_summary.h, telemetry_parser.h, classify.h); the rest is internal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_point.h"

namespace sweep::logs {

struct TelemetryOutput {
  // Each point's step and time are the sample's Unix seconds (the file's lines carry them), so a
  // replayed line gives the same keys and is stored once.
  std::vector<MetricPoint> points;
  size_t consumed = 0;  // bytes of whole lines read; a last line without its newline waits
  int malformed = 0;    // lines that are not samples of a known kind
};

// The samples in `chunk`, which starts at a line's beginning. Values nvidia-smi cannot give
// ("[N/A]", "[Not Supported]") and node fields left empty yield no point, not an error.
TelemetryOutput ParseTelemetry(std::string_view chunk);

// The run a telemetry file was written by, from the sampler's header, its first line.
struct TelemetryHeader {
  std::string job_id;  // "" in a header from before the field
  int restart = 0;
};

// The header that `chunk`, a telemetry file from its first byte, starts with; nullopt while its
// first line is not complete, or when that line is not a header.
std::optional<TelemetryHeader> ParseTelemetryHeader(std::string_view chunk);

// One line of nvidia-smi --query-gpu output (--format=csv, with or without noheader and
// nounits) whose columns are the comma-separated `query` fields, taken at `unix_s`: appends
// system/gpuN/util_pct (utilization.gpu), mem_used_gib and mem_total_gib (memory.used and
// memory.total, MiB / 1024) and power_w (power.draw), N being the line's `index` field. Other
// fields are skipped. False, with nothing appended, for a line with fewer columns than fields,
// no index, or a number that does not parse.
bool ParseNvidiaSmiLine(std::string_view line, std::string_view query, int64_t unix_s, std::vector<MetricPoint>& out);

}  // namespace sweep::logs
