// OpensshTransport: the Transport through the system's OpenSSH client. Every call is one `ssh`
// process over one ControlMaster connection, so ~/.ssh/config applies in full and a second
// factor is met once, by whoever opens the master (the run, or the user with require_master).
//
// Failure model, as SshTransport's: a call never retries by itself. ssh exits 255 for its own
// errors; a remote command may too, so a 255 is the command's own only while the master still
// answers `ssh -O check`. A lost master makes the call kUnavailable and the next call reopens it
// once (or, with require_master, finds the user's again). A master that cannot be reopened
// because the server wants a login only a human can give is Cause::kReauthNeeded.
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "slurm/sbatch_script.h"
#include "slurm/transport.h"

namespace sweep::slurm {
namespace {

namespace bp = boost::process;

struct Exited {
  int code = 0;
  std::string out, err;
};

// Runs `program args...` with `input` on stdin, both pipes drained by one io_context. kUnavailable
// when it cannot start at all (no ssh on PATH is the user's to fix, hence the advice).
Result<Exited> Exec(const std::string& program, const std::vector<std::string>& args, std::string_view input = {}) {
  std::filesystem::path exe =
      program.find('/') == std::string::npos ? bp::search_path(program) : std::filesystem::path(program);
  if (exe.empty()) {
    return Status::FailedPrecondition(fmt::format(
        "cannot run {}: not found on PATH (transport = \"openssh\" and ProxyJump need OpenSSH's client)", program));
  }
  boost::asio::io_context io;
  std::future<std::string> out, err;
  Exited r;
  try {
    bp::child child(exe, bp::args = args, bp::std_in<boost::asio::buffer(input.data(), input.size()), bp::std_out> out,
                    bp::std_err > err, io);
    io.run();
    child.wait();
    int raw = child.native_exit_code();
    r.code = WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : WEXITSTATUS(raw);
    r.out = out.get();
    r.err = err.get();
  } catch (const std::exception& e) {
    return Status::Unavailable(fmt::format("cannot run {}: {}", exe.string(), e.what()));
  }
  return r;
}

// ssh's stderr without the banner noise LogLevel=VERBOSE adds, on one line for a message.
std::string SshMessage(const std::string& err) {
  std::istringstream in(err);
  std::string line, text;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("Authenticated ", 0) == 0 || line.rfind("Warning: Permanently", 0) == 0) continue;
    if (line.rfind("Transferred: ", 0) == 0 || line.rfind("Bytes per second", 0) == 0) continue;
    text += (text.empty() ? "" : " / ") + line;
  }
  return text.empty() ? "no message from ssh" : text;
}

// What the login shell on the far side runs: /bin/sh, whatever the user's shell (single quotes survive
// them all), with the command in a child sh so that a command killed by signal N exits 128+N as
// LocalTransport reports it (ssh itself would turn the signal into its own 255).
std::string RemoteCommand(const std::string& command) {
  return "/bin/sh -c " + ShellQuote("/bin/sh -c " + ShellQuote(command) + "; exit $?");
}

bool Contains(const std::string& s, std::string_view what) { return s.find(what) != std::string::npos; }

std::string Quoted(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words) {
    bool plain = !w.empty() && w.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                   "@%+=:,./-_") == std::string::npos;
    s += (s.empty() ? "" : " ") + (plain ? w : ShellQuote(w));
  }
  return s;
}

// The options every ssh call shares. BatchMode: no prompt ever, a run is unattended.
// StrictHostKeyChecking=yes: the libssh transport's rule, never trust on first use.
std::vector<std::string> CommonArgs(const OpensshOptions& o) {
  std::vector<std::string> a;
  if (!o.ssh_config.empty()) a.insert(a.end(), {"-F", o.ssh_config});
  a.insert(a.end(), {"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "-o", "ControlPath=" + o.control_path,
                     "-o", fmt::format("ConnectTimeout={}", o.connect_timeout_s)});
  if (!o.known_hosts_file.empty()) {
    // An explicit file is the whole truth: the global file must not vouch for a key.
    a.insert(a.end(), {"-o", "UserKnownHostsFile=" + o.known_hosts_file, "-o", "GlobalKnownHostsFile=/dev/null"});
  }
  if (o.port != 22) a.insert(a.end(), {"-p", std::to_string(o.port)});
  if (!o.user.empty()) a.insert(a.end(), {"-l", o.user});
  if (!o.identity_file.empty()) a.insert(a.end(), {"-i", o.identity_file});
  return a;
}

// What `ssh -G` resolves from the config: the real user, host, port and hop.
struct Resolved {
  std::string where;  // USER@HOST:PORT
  std::string hop;    // "jump host X" or "proxy command X"; empty for a direct connection
};

Resolved Resolve(const OpensshOptions& o) {
  Resolved r{fmt::format("{}{}:{}", o.user.empty() ? "" : o.user + "@", o.host, o.port), ""};
  auto args = CommonArgs(o);
  args.insert(args.end(), {"-G", "--", o.host});
  auto g = Exec(o.ssh_program, args);
  if (!g.ok() || g->code != 0) return r;
  std::map<std::string, std::string> v;
  std::istringstream in(g->out);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    if (sp != std::string::npos) v.emplace(line.substr(0, sp), line.substr(sp + 1));
  }
  r.where = fmt::format("{}@{}:{}", v["user"], v["hostname"], v["port"]);
  if (!v["proxyjump"].empty() && v["proxyjump"] != "none") r.hop = "jump host " + v["proxyjump"];
  else if (!v["proxycommand"].empty() && v["proxycommand"] != "none") r.hop = "proxy command " + v["proxycommand"];
  return r;
}

class OpensshTransport final : public Transport {
 public:
  OpensshTransport(OpensshOptions o, Resolved r) : o_(std::move(o)), r_(std::move(r)) {}

  // Ready to run commands: the master answers, or was opened now.
  Status EnsureMaster(bool at_start) {
    if (master_ok_) return Status::OK();
    // The socket's directory exists before anyone opens a master there: the run or the user.
    std::string dir = o_.control_path.substr(0, o_.control_path.rfind('/'));
    if (!dir.empty() && ::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::IOError(
          fmt::format("cannot create {} for the ssh master's socket: {}", dir, std::strerror(errno)));
    }
    if (MasterAlive()) return master_ok_ = true, Status::OK();
    if (o_.require_master) {
      Status st = Status::Unavailable(fmt::format(
          "no live ssh master connection to {}{} at {} (require_master = true: slurmsweep never opens one); "
          "open it, answering the second factor, with:\n  {}",
          r_.where, Via(), o_.control_path, OpensshMasterCommand(o_)));
      return at_start ? Status::FailedPrecondition(st.message()) : st.WithCause(Status::Cause::kReauthNeeded);
    }
    SWEEP_RETURN_IF_ERROR(OpenMaster(at_start));
    master_ok_ = true;
    return Status::OK();
  }

  Result<CommandOutput> Run(const std::string& command) override { return RunRemote(command, {}); }

  Status WriteFile(const std::string& path, std::string_view content, int mode) override {
    // The temporary file is 0600 until complete (umask 077), then renamed: readers never see half.
    std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
    std::string cmd =
        fmt::format("umask 077 && cat >{0} && chmod {1:o} {0} && mv -f {0} {2} || {{ rm -f {0}; exit 1; }}",
                    ShellQuote(tmp), mode, ShellQuote(path));
    auto r = RunRemote(cmd, content);
    if (!r.ok()) return r.status();
    if (r->exit_code != 0) {
      // A missing parent directory is the caller's setup problem, not a missing file to poll.
      return Status::IOError(fmt::format("{}: cannot write {}: {}", r_.where, path, SshMessage(r->err)));
    }
    return Status::OK();
  }

  Result<std::string> ReadFrom(const std::string& path, uint64_t offset, size_t max_bytes) override {
    return std::move(ReadManyByCommand(*this, {ReadRequest{path, offset, max_bytes}})[0]);
  }

  // Every read is a process and a round trip: one command reads them all.
  std::vector<Result<std::string>> ReadMany(const std::vector<ReadRequest>& requests) override {
    return ReadManyByCommand(*this, requests);
  }
  size_t ReadManyCalls(size_t n) const override { return (n + kReadManyBatch - 1) / kReadManyBatch; }

  std::string Describe() const override { return "openssh " + r_.where + Via(); }

 private:
  std::string Via() const { return r_.hop.empty() ? "" : " via " + r_.hop; }

  bool MasterAlive() {
    auto args = CommonArgs(o_);
    args.insert(args.end(), {"-O", "check", "--", o_.host});
    auto r = Exec(o_.ssh_program, args);
    return r.ok() && r->code == 0;
  }

  // Opens the master and leaves it in the background (-f after authentication) for persist_s of
  // idleness, so `status` and `logs` after the run reuse it too. VERBOSE: ssh then says when a
  // key was accepted with partial success, which is how a second factor is told from a refusal.
  Status OpenMaster(bool at_start) {
    auto args = CommonArgs(o_);
    args.insert(args.end(), {"-o", "ControlMaster=yes", "-o", fmt::format("ControlPersist={}", o_.persist_s), "-o",
                             "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4", "-o", "LogLevel=VERBOSE", "-N",
                             "-f", "--", o_.host});
    auto r = Exec(o_.ssh_program, args);
    if (!r.ok()) return r.status();
    if (r->code == 0 && MasterAlive()) return Status::OK();
    return Classify(r_.hop.empty() ? r->err : HopDiagnosis(r->err), at_start);
  }

  // A master sends its proxy's stderr to /dev/null (it is meant to outlive the terminal), so a failure
  // through a hop says only "Connection closed". One plain login attempt, no master, shows the hop's own
  // words (its host down, its host key unknown, no ssh on PATH); `master_err` when it says nothing more.
  std::string HopDiagnosis(const std::string& master_err) {
    auto args = CommonArgs(o_);
    for (auto& a : args) {
      if (a.rfind("ControlPath=", 0) == 0) a = "ControlPath=none";
    }
    args.insert(args.end(), {"-o", "LogLevel=VERBOSE", "--", o_.host, "true"});
    auto r = Exec(o_.ssh_program, args);
    if (!r.ok() || r->code != 255 || r->err.empty()) return master_err;
    return r->err;
  }

  // ssh's failure as the libssh transport's error classes.
  Status Classify(const std::string& err, bool at_start) const {
    std::string msg = SshMessage(err);
    std::string to = r_.where + Via();
    if (Contains(err, "Host key verification failed") || Contains(err, "IDENTIFICATION HAS CHANGED") ||
        Contains(err, "host key is known") || Contains(err, "HOST KEY")) {
      return Status::FailedPrecondition(fmt::format(
          "host key check for {} failed (StrictHostKeyChecking=yes: unknown and changed keys are refused): {}; verify "
          "the key out of band, then add it with one interactive `ssh` login",
          to, msg));
    }
    if (Contains(err, "Permission denied")) {
      bool partial = Contains(err, "partial success");
      std::string why = partial
                            ? fmt::format(
                                  "the server accepted the key and asks for a second factor (keyboard-interactive); "
                                  "open a master yourself and set require_master = true:\n  {}",
                                  OpensshMasterCommand(o_))
                            : "check [cluster] user and identity_file, ssh-agent, and ~/.ssh/config";
      std::string text = fmt::format("ssh login to {} was refused: {}: {}", to, msg, why);
      // At start a refusal is a setting to fix; mid-run it is a login only a human can give.
      if (at_start) return Status::InvalidArgument(text);
      return Status::Unavailable(text).WithCause(Status::Cause::kReauthNeeded);
    }
    return Status::Unavailable(fmt::format("cannot connect to {}: {}", to, msg));
  }

  Result<CommandOutput> RunRemote(const std::string& command, std::string_view input) {
    SWEEP_RETURN_IF_ERROR(EnsureMaster(false));
    auto args = CommonArgs(o_);
    // ControlMaster=no with a proxy that always fails: a call goes through the master or not at
    // all, never a second login of its own.
    args.insert(args.end(), {"-o", "ControlMaster=no", "-o", "ProxyCommand=/bin/false", "-o", "ProxyJump=none", "--",
                             o_.host, RemoteCommand(command)});
    auto r = Exec(o_.ssh_program, args, input);
    if (!r.ok()) return r.status();
    if (r->code == 255 && !MasterAlive()) {
      master_ok_ = false;
      return Status::Unavailable(
          fmt::format("{}{}: lost the master connection while running {}: {} (will reconnect "
                      "on the next call)",
                      r_.where, Via(), command.substr(0, 60), SshMessage(r->err)));
    }
    return CommandOutput{r->code, std::move(r->out), std::move(r->err)};
  }

  OpensshOptions o_;
  Resolved r_;
  bool master_ok_ = false;
};

}  // namespace

std::string OpensshMasterCommand(const OpensshOptions& o) {
  std::vector<std::string> words{o.ssh_program, "-M", "-N", "-f", "-o", "ControlPersist=yes"};
  auto common = CommonArgs(o);
  // The user's master may prompt: no BatchMode in the command they run.
  for (size_t i = 0; i < common.size(); ++i) {
    if (common[i] == "-o" && i + 1 < common.size() && common[i + 1] == "BatchMode=yes") {
      ++i;
      continue;
    }
    words.push_back(common[i]);
  }
  words.push_back(o.host);
  return Quoted(words);
}

Result<std::unique_ptr<Transport>> ConnectOpenssh(const OpensshOptions& options) {
  auto t = std::make_unique<OpensshTransport>(options, Resolve(options));
  SWEEP_RETURN_IF_ERROR(t->EnsureMaster(true));
  return std::unique_ptr<Transport>(std::move(t));
}

}  // namespace sweep::slurm
