// Opening the transport a study's [cluster] asks for.
#pragma once

#include <memory>

#include "base/status.h"
#include "orchestrator/study.h"
#include "slurm/transport.h"

namespace sweep {

Result<std::unique_ptr<slurm::Transport>> OpenTransport(const ClusterSpec& cluster);

}  // namespace sweep
