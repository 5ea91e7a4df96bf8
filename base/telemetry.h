// Telemetry ([job] monitor = true): what the sampler slurm/ puts in a trial's script writes, and
// the names its points are stored under. Shared by the script's writer (slurm/), its parser
// (logs/), the run loop and the reports, none of which may depend on another for it.
//
// The file (`LOG.telemetry`, beside the trial's log), version 1, one sample per line, each line
// written by one printf (O_APPEND), so lines never interleave:
//   slurmsweep-telemetry 1 host=n1 interval=10 job=123_4 restart=0
//   node 1764790010 cpu_permille=125 mem_total_kib=16384000 mem_avail_kib=9000000
//   gpu 1764790010 2026/12/03 18:00:10.123, 0, 87, 30000, 81559, 350.12
// The header names the run that writes the file: `job` as slurmsweep stores the job's id ("123",
// or "123_4" for a task of array 123) and `restart`, Slurm's SLURM_RESTART_COUNT (0 on the first
// run); samplers from before they were added write neither.
// `node`: Unix seconds, CPU busy share of the whole node in per mille since the previous sample
// (absent on the first), /proc/meminfo's MemTotal and MemAvailable. `gpu`: Unix seconds, then
// one line of nvidia-smi --query-gpu=kGpuQuery --format=csv,noheader,nounits as it printed it.
// Module base/: uses the standard library only.
#pragma once

#include <string_view>

namespace sweep {

// Every telemetry metric is named under this prefix ("system/gpu0/util_pct",
// "system/node/cpu_pct"), so none can be taken for a training metric: the objective, the step
// count and the time axis ignore them, and a log line naming one is not stored.
inline constexpr std::string_view kTelemetryPrefix = "system/";

inline bool IsTelemetryMetric(std::string_view name) {
  return name.substr(0, kTelemetryPrefix.size()) == kTelemetryPrefix;
}

// The fields the sampler asks nvidia-smi for, in this order.
inline constexpr std::string_view kGpuQuery = "timestamp,index,utilization.gpu,memory.used,memory.total,power.draw";

// The telemetry file of a trial that logs to `log_path`.
inline constexpr std::string_view kTelemetrySuffix = ".telemetry";

}  // namespace sweep
