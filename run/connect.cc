// Opening the transport a study's [cluster] asks for; see connect.h.
#include "run/connect.h"

namespace sweep::run {

Result<std::unique_ptr<slurm::Transport>> OpenTransport(const study::ClusterSpec& c,
                                                        const std::string& accept_host_key) {
  if (c.transport == "local") return slurm::NewLocalTransport();
  slurm::SshOptions o;
  o.host = c.host;
  o.port = c.port;
  o.user = c.user;
  o.identity_file = c.identity_file;
  o.known_hosts_file = c.known_hosts;
  o.accept_host_key = accept_host_key;
  return slurm::ConnectSsh(o);
}

}  // namespace sweep::run
