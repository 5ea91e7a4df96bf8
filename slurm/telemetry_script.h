// The telemetry sampler slurmsweep puts in a trial's sbatch script when the study asks for it
// ([job] monitor = true): a few lines of POSIX sh, so nothing is installed on the cluster. It runs
// in the background beside the trainer on the batch host and appends one line per sample to a
// file beside the trial's log, in the format base/telemetry.h describes.
// Module slurm/: reaching the cluster and speaking Slurm; uses base/ only.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace sweep::slurm {

// Refuses a template the sampler cannot go into: its first line names an interpreter that is not
// a POSIX shell (python, perl, ...). `where` names the study's key asking for it (file:line: key).
Status CheckTelemetryShell(std::string_view tmpl, std::string_view template_name, std::string_view where);

// `script` with the sampler inserted where its first command begins (after the shebang and the
// #SBATCH block, so sbatch still reads every directive), writing to `file` every `interval_s`
// seconds. With nvidia-smi on the PATH it also runs nvidia-smi's query loop over the job's GPUs
// (CUDA_VISIBLE_DEVICES) every interval. The sampler ends within one interval of the script's
// own process (the trainer too, when the script execs it: same pid), and Slurm ends what is left
// with the job. It never stops the job: a file that cannot be written ends the sampler only.
std::string WithTelemetrySampler(std::string_view script, const std::string& file, int interval_s);

}  // namespace sweep::slurm
