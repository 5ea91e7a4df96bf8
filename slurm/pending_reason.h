// Pending reasons that never clear by themselves. Most reasons a job waits for (Priority,
// Resources, JobArrayTaskLimit, QOSMaxJobsPerUserLimit, ...) clear as other jobs end; some say the
// job asks for what its partition, account or QOS will never give (Slurm's default
// EnforcePartLimits=NO accepts such a job and leaves it pending forever). Those stop the study's
// submission at first sight, with the reason and the way on.
// Module slurm/: Slurm's commands and what they print; uses base/ only.
#pragma once

#include <string>
#include <string_view>

namespace sweep::slurm {

// What to change when a job is pending for `reason` (squeue's %r, e.g. "PartitionTimeLimit" or
// "ReqNodeNotAvail, UnavailableNodes:n9"), or "" when the reason may clear by itself.
std::string NeverClearingReason(std::string_view reason);

}  // namespace sweep::slurm
