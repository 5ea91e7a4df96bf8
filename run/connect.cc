// Opening the transport a study's [cluster] asks for; see connect.h.
#include "run/connect.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>

namespace sweep::run {
namespace {

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// A Unix socket's path holds at most 107 bytes; ssh appends a random suffix of ~17 while it
// binds, so 88 is the most a ControlPath may use.
constexpr size_t kMaxControlPath = 88;

}  // namespace

std::string ControlPathFor(const study::ClusterSpec& c, const std::string& study_dir) {
  // One master per study directory and destination: studies side by side share it.
  std::string name = fmt::format(
      "{:012x}", Fnv1a(fmt::format("{}@{}:{} {}", c.user, c.host, c.port, c.ssh_config)) & 0xffffffffffffull);
  std::string path = fmt::format("{}/.slurmsweep-ssh/{}", study_dir.empty() ? "." : study_dir, name);
  if (path.size() <= kMaxControlPath) return path;
  // Too deep for a socket: a directory of this user's own under /tmp (ssh refuses a socket in a
  // directory others may write, so this one is 0700 and ours).
  return fmt::format("/tmp/slurmsweep-ssh-{}/{:012x}", ::getuid(), Fnv1a(path) & 0xffffffffffffull);
}

Result<std::unique_ptr<slurm::Transport>> OpenTransport(const study::ClusterSpec& c, const std::string& accept_host_key,
                                                        const std::string& study_dir) {
  if (c.transport == "local") return slurm::NewLocalTransport();
  if (c.transport == "openssh") {
    if (!accept_host_key.empty()) {
      return Status::InvalidArgument(
          "--accept-host-key is for transport = \"ssh\"; with \"openssh\" add the key with one interactive ssh login");
    }
    return slurm::ConnectOpenssh(OpensshOptionsFor(c, study_dir));
  }
  slurm::SshOptions o;
  o.host = c.host;
  o.port = c.port;
  o.user = c.user;
  o.identity_file = c.identity_file;
  o.known_hosts_file = c.known_hosts;
  o.ssh_config = c.ssh_config;
  o.accept_host_key = accept_host_key;
  return slurm::ConnectSsh(o);
}

slurm::OpensshOptions OpensshOptionsFor(const study::ClusterSpec& c, const std::string& study_dir) {
  slurm::OpensshOptions o;
  o.host = c.host;
  o.port = c.port;
  o.user = c.user;
  o.identity_file = c.identity_file;
  o.known_hosts_file = c.known_hosts;
  o.ssh_config = c.ssh_config;
  o.require_master = c.require_master;
  o.control_path = ControlPathFor(c, study_dir);
  return o;
}

}  // namespace sweep::run
