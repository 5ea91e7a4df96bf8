// Transport: the one way slurmsweep reaches the cluster. Run a command, write a file,
// read a file from a byte offset. Local (Boost.Process) for login nodes, SSH (libssh)
// from a workstation. Nothing is installed on the cluster side.
// Module slurm/ (namespace sweep::slurm): reaching the cluster and speaking Slurm; uses base/ only.
// One of its three public headers (transport.h, slurm_client.h with job_state.h, sbatch_script.h);
// the rest is internal.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sweep::slurm {

struct CommandOutput {
  int exit_code = 0;
  std::string out;
  std::string err;
};

struct ReadRequest {
  std::string path;
  uint64_t offset = 0;
  size_t max_bytes = 0;
};

/// Abstract so tests can inject faults (a dropped link, sbatch failing). The real
/// implementations are LocalTransport (transport_local.cc) and SshTransport (transport_ssh.cc).
/// Not thread-safe: one run loop owns one transport.
class Transport {
 public:
  virtual ~Transport() = default;

  // Runs `command` with /bin/sh -c on the cluster side. A non-zero exit is NOT an error
  // Status; an error Status means the command could not be run at all (kUnavailable for a
  // lost connection, so callers retry instead of marking trials failed).
  virtual Result<CommandOutput> Run(const std::string& command) = 0;

  // Writes `content` to `path` (replacing it) with permission bits `mode`. The parent
  // directory must exist. Written to a temporary name and renamed, so readers never see half.
  virtual Status WriteFile(const std::string& path, std::string_view content, int mode) = 0;

  // Reads at most `max_bytes` starting at byte `offset`. Returns "" at or past EOF.
  // kNotFound if the file does not exist (a pending job has no log yet).
  virtual Result<std::string> ReadFrom(const std::string& path, uint64_t offset, size_t max_bytes) = 0;

  // "local" or "ssh root@127.0.0.1:22022", for logs and reports.
  virtual std::string Describe() const = 0;

  // ReadFrom for several files, each with its own result. This default reads them one by one;
  // SSH sends one remote command for many (ReadManyByCommand): one round trip, not one per log.
  virtual std::vector<Result<std::string>> ReadMany(const std::vector<ReadRequest>& requests) {
    std::vector<Result<std::string>> out;
    out.reserve(requests.size());
    for (const auto& r : requests) out.push_back(ReadFrom(r.path, r.offset, r.max_bytes));
    return out;
  }
  // The cluster calls ReadMany makes for `n` requests, for the counters.
  virtual size_t ReadManyCalls(size_t n) const { return n; }
};

// ReadMany as shell commands run through `transport`: each prints the requested bytes of up to
// kReadManyBatch files, framed by their lengths (tail -c | head -c, via a temporary file on the
// cluster side, removed at exit). A file that does not exist gets kNotFound, as from ReadFrom;
// a command that cannot run gives its Status to every request of its batch.
inline constexpr size_t kReadManyBatch = 100;  // keeps one command far below Linux's 128 KiB per argument
std::vector<Result<std::string>> ReadManyByCommand(Transport& transport, const std::vector<ReadRequest>& requests);

std::unique_ptr<Transport> NewLocalTransport();

// Counts the calls that cross to the cluster (over SSH each is at least one round trip), so the
// run loop's log and the benchmarks show the load per tick.
class CountingTransport final : public Transport {
 public:
  struct Counts {
    int64_t commands = 0, writes = 0, reads = 0;
    int64_t total() const { return commands + writes + reads; }
  };
  explicit CountingTransport(Transport& inner) : inner_(inner) {}
  Result<CommandOutput> Run(const std::string& command) override {
    ++counts_.commands;
    return inner_.Run(command);
  }
  Status WriteFile(const std::string& path, std::string_view content, int mode) override {
    ++counts_.writes;
    return inner_.WriteFile(path, content, mode);
  }
  Result<std::string> ReadFrom(const std::string& path, uint64_t offset, size_t max_bytes) override {
    ++counts_.reads;
    return inner_.ReadFrom(path, offset, max_bytes);
  }
  std::vector<Result<std::string>> ReadMany(const std::vector<ReadRequest>& requests) override {
    counts_.reads += static_cast<int64_t>(inner_.ReadManyCalls(requests.size()));
    return inner_.ReadMany(requests);
  }
  size_t ReadManyCalls(size_t n) const override { return inner_.ReadManyCalls(n); }
  std::string Describe() const override { return inner_.Describe(); }
  const Counts& counts() const { return counts_; }

 private:
  Transport& inner_;
  Counts counts_;
};

struct SshOptions {
  std::string host;
  int port = 22;
  std::string user;                // empty: from ~/.ssh/config or the local user name
  std::string identity_file;       // empty: ssh-agent, then ~/.ssh/config and default keys, as ssh(1)
  std::string known_hosts_file;    // empty: ~/.ssh/known_hosts
  bool process_ssh_config = true;  // tests turn this off to stay hermetic
  std::string ssh_config;          // empty: ~/.ssh/config (when process_ssh_config)
  int connect_timeout_s = 15;
  // "SHA256:..." the user verified out of band: an unknown host key with exactly this
  // fingerprint is accepted and recorded in known_hosts. Never overrides a CHANGED key.
  std::string accept_host_key;
};

// Connects and authenticates once; the session is reused for every call. The server's host
// key must already be in known_hosts: unknown or changed keys are refused (kFailedPrecondition
// with the fingerprint in the message), never silently accepted.
Result<std::unique_ptr<Transport>> ConnectSsh(const SshOptions& options);

// The system's OpenSSH client (transport_openssh.cc): every call is one `ssh` process over one
// ControlMaster connection, so all of ~/.ssh/config applies (ProxyJump, Match, certificates,
// GSSAPI, FIDO keys) and a second factor is met once, when the master opens.
struct OpensshOptions {
  std::string host;
  int port = 22;                 // 22: ~/.ssh/config may set another, as for ssh(1)
  std::string user;              // empty: ~/.ssh/config or the local user name
  std::string identity_file;     // empty: ~/.ssh/config, ssh-agent and default keys
  std::string known_hosts_file;  // empty: ssh's own (~/.ssh/known_hosts and the global file)
  std::string ssh_config;        // empty: ~/.ssh/config (of the user database's home, as ssh reads it)
  std::string control_path;      // the master's socket; its directory is created 0700
  // true: use a master the user opened (after a second factor) and never open one; without a
  // live master, fail at once with the `ssh -M ...` command that opens it.
  bool require_master = false;
  int connect_timeout_s = 15;
  int persist_s = 600;  // an idle master the run opened ends this long after the last call
  std::string ssh_program = "ssh";
};

// Checks (or opens) the master. The errors are the libssh transport's classes: kInvalidArgument
// for a refused login at start, kFailedPrecondition for host keys, kUnavailable for the network,
// and kUnavailable with Cause::kReauthNeeded when only a new login by a human can go on.
Result<std::unique_ptr<Transport>> ConnectOpenssh(const OpensshOptions& options);

// The command a user runs to open the master that `options` use, quoted for a POSIX shell.
std::string OpensshMasterCommand(const OpensshOptions& options);

}  // namespace sweep::slurm
