// Pending reasons that never clear; see pending_reason.h.
#include "slurm/pending_reason.h"

#include <array>
#include <utility>

namespace sweep::slurm {
namespace {

constexpr const char* kTimeLimit =
    "the job's time limit is above what it may ask for: lower [job] time_limit, or pick a [cluster] partition or "
    "qos that allows it (`sinfo -o '%P %l'` shows each partition's limit)";
constexpr const char* kResources =
    "the job asks for more than one job may have there: lower [job] nodes, gpus_per_node, cpus_per_task or mem, or "
    "pick a [cluster] partition or qos that allows it";

// Slurm's reason codes (squeue(1), "JOB REASON CODES") that no other job's end can clear.
constexpr std::array<std::pair<std::string_view, const char*>, 22> kNever = {{
    {"PartitionTimeLimit", kTimeLimit},
    {"QOSMaxWallDurationPerJobLimit", kTimeLimit},
    {"AssocMaxWallDurationPerJobLimit", kTimeLimit},
    {"PartitionNodeLimit", kResources},
    {"QOSMaxCpuPerJobLimit", kResources},
    {"QOSMaxNodePerJobLimit", kResources},
    {"QOSMaxGRESPerJob", kResources},
    {"QOSMaxMemoryPerJob", kResources},
    {"QOSMinCpuNotSatisfied", kResources},
    {"QOSMinGRES", kResources},
    {"AssocMaxCpuPerJobLimit", kResources},
    {"AssocMaxNodePerJobLimit", kResources},
    {"AssocMaxGRESPerJob", kResources},
    {"AssocMaxMemPerJob", kResources},
    {"MaxMemPerLimit", kResources},
    {"BadConstraints", "no node has the features the job asks for: check the template's --constraint"},
    {"AccountNotAllowed", "the account may not use this partition: set [cluster] account or partition"},
    {"InvalidAccount", "the account is not valid here: set [cluster] account (`sacctmgr show assoc user=$USER`)"},
    {"QOSNotAllowed", "this qos may not be used here: set [cluster] qos or partition"},
    {"InvalidQOS", "the qos is not valid here: set [cluster] qos (`sacctmgr show assoc user=$USER`)"},
    {"DependencyNeverSatisfied", "a dependency of the job can never be satisfied: check the template's --dependency"},
    {"InactiveLimit", "the job reached the cluster's InactiveLimit: submit it again"},
}};

}  // namespace

std::string NeverClearingReason(std::string_view reason) {
  // "ReqNodeNotAvail, UnavailableNodes:n9": the code is the first word.
  std::string_view code = reason.substr(0, reason.find_first_of(", "));
  for (const auto& [name, way_on] : kNever) {
    if (code == name) return way_on;
  }
  return "";
}

}  // namespace sweep::slurm
