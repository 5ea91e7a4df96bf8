// [notify]: events to a local command, in the background; see notify.h.
#include "run/notify.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "base/trial_state.h"

extern char** environ;

namespace sweep::run {
namespace {

// An anonymous temporary file (unlinked at once) holding `content`, read from its start; -1 on error.
int AnonymousFile(const std::string& content) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/slurmsweep-notify-XXXXXX";
  int fd = ::mkstemp(path.data());
  if (fd < 0) return -1;
  ::unlink(path.c_str());
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  ::lseek(fd, 0, SEEK_SET);
  return fd;
}

// The last line or so of what a command printed, for the log.
std::string Tail(int fd) {
  off_t size = ::lseek(fd, 0, SEEK_END);
  off_t from = std::max<off_t>(0, size - 300);
  std::string text(static_cast<size_t>(size - from), '\0');
  ssize_t n = ::pread(fd, text.data(), text.size(), from);
  text.resize(n > 0 ? static_cast<size_t>(n) : 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (size_t nl = text.rfind('\n'); nl != std::string::npos) text = text.substr(nl + 1);
  return text;
}

bool IsFailedClass(const std::string& state) {
  const TrialStateInfo* info = FindTrialState(state);
  return info && info->final && info->outcome == TrialOutcome::kFailed;
}

}  // namespace

Notifier::Notifier(const study::Study& study, const Clock& clock, Log log)
    : study_(study), clock_(clock), log_(std::move(log)) {}

Notifier::~Notifier() {
  for (Child& c : children_) {
    ::kill(-c.pid, SIGKILL);
    ::waitpid(c.pid, nullptr, 0);
    if (c.output_fd >= 0) ::close(c.output_fd);
  }
}

void Notifier::Send(const std::string& kind, const std::string& message, nlohmann::json details) {
  if (!study_.notify) return;
  const auto& events = study_.notify->events;
  if (std::find(events.begin(), events.end(), kind) == events.end()) return;
  nlohmann::json event = std::move(details);
  event["version"] = kNotifyJsonVersion;
  event["event"] = kind;
  event["time"] = FormatUtc(clock_.Now());
  event["study"] = study_.name;
  event["study_file"] = study_.path;
  event["message"] = message;
  std::string json = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  int in = AnonymousFile(json);
  int out = AnonymousFile("");
  if (in < 0 || out < 0) {
    if (in >= 0) ::close(in);
    if (out >= 0) ::close(out);
    log_("notify_failed", fmt::format("notify {}: cannot create a temporary file: {}", kind, std::strerror(errno)));
    return;
  }
  // Built before fork: the child of a threaded process calls nothing that allocates.
  std::string env_event = "SLURMSWEEP_EVENT=" + kind;
  std::vector<char*> envp;
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "SLURMSWEEP_EVENT=", 17) != 0) envp.push_back(*e);
  }
  envp.push_back(env_event.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/sh", "-c", study_.notify->command.c_str(), nullptr};
  pid_t pid = ::fork();
  if (pid == 0) {
    // The child: its own process group (a timeout kills the whole command, and a Ctrl-C on the
    // terminal does not reach it), no signal blocked (`run` blocks SIGINT/SIGTERM in its threads).
    ::setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in, 0);
    ::dup2(out, 1);
    ::dup2(out, 2);
    ::execve("/bin/sh", const_cast<char**>(argv), envp.data());
    ::_exit(127);
  }
  ::close(in);
  if (pid < 0) {
    ::close(out);
    log_("notify_failed", fmt::format("notify {}: cannot start the command: {}", kind, std::strerror(errno)));
    return;
  }
  ::setpgid(pid, pid);  // also here, so a kill right after fork finds the group
  children_.push_back({pid, clock_.Now() + study_.notify->timeout_s, kind, out});
  log_("notify", fmt::format("notify {}: started the [notify] command (pid {})", kind, pid));
}

void Notifier::Reap(Child& c, int status) {
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    ::close(c.output_fd);
    return;
  }
  std::string said = Tail(c.output_fd);
  ::close(c.output_fd);
  std::string how = WIFEXITED(status) ? fmt::format("exited {}", WEXITSTATUS(status))
                                      : fmt::format("was killed by signal {}", WTERMSIG(status));
  log_("notify_failed", fmt::format("notify {}: the [notify] command {}{}; the run goes on", c.kind, how,
                                    said.empty() ? "" : ": " + said));
}

void Notifier::Poll() {
  double now = clock_.Now();
  for (auto it = children_.begin(); it != children_.end();) {
    int status = 0;
    pid_t r = ::waitpid(it->pid, &status, WNOHANG);
    if (r == it->pid) {
      Reap(*it, status);
      it = children_.erase(it);
      continue;
    }
    if (now >= it->deadline) {
      ::kill(-it->pid, SIGKILL);
      ::waitpid(it->pid, &status, 0);
      std::string said = Tail(it->output_fd);
      ::close(it->output_fd);
      log_("notify_failed", fmt::format("notify {}: the [notify] command ran longer than timeout_s = {} and was "
                                        "killed{}; the run goes on",
                                        it->kind, study_.notify->timeout_s, said.empty() ? "" : ": " + said));
      it = children_.erase(it);
      continue;
    }
    ++it;
  }
}

void Notifier::Drain() {
  while (!children_.empty()) {
    Poll();
    if (!children_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void Notifier::OnTick(bool unavailable, const std::vector<TrialFacts>& trials) {
  Poll();
  if (!unavailable && unreachable_since_) {
    double minutes = (clock_.Now() - *unreachable_since_) / 60;
    if (unreachable_sent_) {
      Send("cluster_reachable", fmt::format("the cluster answers again after {:.0f} minute(s)", minutes),
           {{"minutes", minutes}});
    }
    unreachable_since_.reset();
    unreachable_sent_ = false;
  }
  for (const TrialFacts& t : trials) {
    if (!IsFailedClass(t.state)) {
      failed_.erase(t.key);  // retried: a later failure is news again
      continue;
    }
    if (!failed_.insert(t.key).second) continue;
    Send("trial_failed",
         fmt::format("trial {} failed: {}{}", t.key, t.state, t.reason.empty() ? "" : " (" + t.reason + ")"),
         {{"trial",
           {{"key", t.key},
            {"class", t.state},
            {"reason", t.reason},
            {"job_id", t.job_id},
            {"log_path", t.log_path},
            {"log_host", study_.cluster.remote() ? study_.cluster.host : "localhost"}}}});
  }
}

void Notifier::OnRunEvent(const std::string& kind, const std::string& message) {
  if (kind == "submit_paused") {
    Send("quota_pause", message);
  } else if (kind == "unavailable") {
    double now = clock_.Now();
    if (!unreachable_since_) unreachable_since_ = now;
    last_unreachable_ = message;
    double minutes = (now - *unreachable_since_) / 60;
    if (study_.notify && !unreachable_sent_ && minutes >= study_.notify->unreachable_minutes) {
      unreachable_sent_ = true;
      Send("cluster_unreachable",
           fmt::format("the cluster has been unreachable for {:.0f} minute(s); the run keeps retrying: {}", minutes,
                       message),
           {{"minutes", minutes}});
    }
  }
  Poll();
}

void Notifier::Finished(const std::string& message, const nlohmann::json& details) {
  Send("study_finished", message, details);
}

}  // namespace sweep::run
