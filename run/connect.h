// Opening the transport a study's [cluster] asks for.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <memory>
#include <string>

#include "base/status.h"
#include "slurm/transport.h"
#include "study/study.h"

namespace sweep::run {

// `accept_host_key`: see slurm::SshOptions; empty for the normal, strict check. `study_dir`: where
// transport = "openssh" keeps its master's socket (.slurmsweep-ssh/ under it).
Result<std::unique_ptr<slurm::Transport>> OpenTransport(const study::ClusterSpec& cluster,
                                                        const std::string& accept_host_key = "",
                                                        const std::string& study_dir = "");

// The openssh transport's settings for a study, and the master's socket: the same path for every
// command of one study, so the `ssh -M` command printed for require_master is the one that works.
slurm::OpensshOptions OpensshOptionsFor(const study::ClusterSpec& cluster, const std::string& study_dir);
std::string ControlPathFor(const study::ClusterSpec& cluster, const std::string& study_dir);

}  // namespace sweep::run
