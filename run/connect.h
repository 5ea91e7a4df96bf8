// Opening the transport a study's [cluster] asks for.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <memory>

#include "base/status.h"
#include "study/study.h"
#include "slurm/transport.h"

namespace sweep::run {

// `accept_host_key`: see slurm::SshOptions; empty for the normal, strict check.
Result<std::unique_ptr<slurm::Transport>> OpenTransport(const study::ClusterSpec& cluster,
                                                        const std::string& accept_host_key = "");

}  // namespace sweep::run
