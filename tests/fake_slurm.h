// FakeSlurm: an in-memory Slurm cluster behind the Transport interface, for driving the run loop
// (tests/runner_test.cc) through every decision in milliseconds. It answers the exact command lines
// SlurmClient and Runner issue (sbatch, squeue, sacct, scontrol, scancel, mkdir) from a table of
// jobs, keeps files (scripts, logs, start marks) as strings, and nothing runs on its own: the test
// starts, logs to, ends, requeues and purges jobs, and sets knobs that inject faults.
//
// Deliberately not a Slurm simulator: no scheduling, no throttling of arrays, no time passing. A
// job does what the test says, so each test states its scenario in the order it happens. Command
// lines it does not understand exit 127 and stay in commands(), so a new one fails loudly.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <ctime>
#include <stdexcept>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "run/job_marks.h"
#include "slurm/transport.h"

namespace sweep::testing {

// Time that moves only when told: SleepFor advances it at once.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(double start = 1'800'000'000) : now_(start) {}
  double Now() const override { return now_; }
  void SleepFor(double seconds) override { now_ += seconds; }
  void Advance(double seconds) { now_ += seconds; }

 private:
  double now_;
};

class FakeSlurm final : public slurm::Transport {
 public:
  struct Job {
    std::string id;  // "100", or "100_3" for task 3 of array 100
    std::string name, comment, log;
    std::string state = "PENDING";
    std::string reason = "Priority";
    int exit_code = 0, signal = 0;
    int restarts = 0;
    std::string node;
    std::string reqnodes;  // scontrol show job's ReqNodeList (--nodelist), as Slurm prints it
    double start = 0, end = 0;
    bool purged = false;   // gone from squeue (MinJobAge); accounting, if on, still has it
    bool outside = false;  // the same user's, outside the study (another study, by hand): AddOutside
  };

  explicit FakeSlurm(const Clock& clock) : clock_(clock) {}

  // --- knobs ---------------------------------------------------------------------------------
  int refuse_sbatch_quota = 0;  // the next N sbatch calls are refused: submit quota full
  int submit_quota = 0;  // > 0: a QOS MaxSubmitJobsPerUser: sbatch is refused when the jobs not ended (each array
                         // task counts) plus the new ones would exceed it
  int lose_sbatch_answers = 0;     // the next N sbatch calls submit, then the link drops before the answer
  int time_out_calls = 0;          // the next N Slurm commands fail as when slurmctld does not answer
  std::string refuse_sbatch_with;  // non-empty: the next sbatch exits 1 with this on stderr
  int sbatch_hangs = 0;            // the next N sbatch calls submit, then are killed by `timeout` (exit 124, silent)
  bool accounting = true;          // false: sacct says accounting storage is disabled
  int max_array_size = 1001;       // `scontrol show config`'s MaxArraySize; a larger --array is refused
  // `scontrol show config`'s MaxJobCount: as slurmctld, sbatch takes no job that would bring the jobs it
  // holds (each array task one, ended ones until purged) to it; sbatch retries until `timeout` kills it.
  int max_job_count = 10000;
  int config_exit = 0;                  // `scontrol show config`'s exit (nonzero: a site that does not show it)
  int min_job_age = 300;                // `scontrol show config`'s MinJobAge; the test purges (PurgeEnded, purged)
  std::set<std::string> missing_nodes;  // nodes `scontrol show node` does not know
  // `squeue --me -t all` (the user's jobs counted for MaxJobCount) exits with this and says `count_err`.
  int count_exit = 0;
  std::string count_err = "squeue: error: Invalid user: --me\n";
  std::string count_extra;  // printed after the ids by that squeue (a line that is no job id: not a count)
  // Called after each sbatch slurmctld took: the jobs it holds then (a test checks a bound there).
  std::function<void(FakeSlurm&)> after_sbatch;
  // Called before each squeue answer: a test's scheduler, moving jobs on as time passes.
  std::function<void(FakeSlurm&)> on_squeue;

  // --- what a test does to jobs ----------------------------------------------------------------
  // The job starts on `host`: running, its log truncated (a new run rewrites it) and a start mark
  // appended beside it, as the mark line slurmsweep puts in the script would.
  void Start(const std::string& id, const std::string& host = "n1") {
    Job& j = job(id);
    j.state = "RUNNING";
    j.reason = "None";
    j.node = host;
    j.start = clock_.Now();
    j.end = 0;
    files_[j.log] = "";
    files_[run::MarksPath(j.log)] +=
        fmt::format("start job={} restart={} host={} time={:.0f}\n", j.id, j.restarts, host, clock_.Now());
  }
  // The job waits for `reason` ("ReqNodeNotAvail, ...") and asked for the nodes `reqnodes` ("n1,n9").
  void Pend(const std::string& id, const std::string& reason, const std::string& reqnodes) {
    Job& j = job(id);
    j.state = "PENDING";
    j.reason = reason;
    j.reqnodes = reqnodes;
  }
  void AppendLog(const std::string& id, std::string_view text) { files_[job(id).log] += text; }
  // A file on the cluster as a job's own code would write it (a sampler beside the trainer).
  void PutFile(const std::string& path, std::string text) { files_[path] = std::move(text); }
  // Ends the job: "COMPLETED", "FAILED" (exit_code 1 unless given), "TIMEOUT", "OUT_OF_MEMORY", ...
  void End(const std::string& id, const std::string& state, int exit_code = -1) {
    Job& j = job(id);
    j.state = state;
    j.exit_code = exit_code >= 0 ? exit_code : state == "COMPLETED" ? 0 : 1;
    j.reason = state == "FAILED" ? "NonZeroExitCode" : "None";
    if (j.start == 0) j.start = clock_.Now();
    j.end = clock_.Now();
  }
  // Slurm runs the job again under the same id (JobRequeue=1): pending, restart count + 1.
  void Requeue(const std::string& id) {
    Job& j = job(id);
    j.state = "PENDING";
    j.reason = "BeginTime";
    j.restarts += 1;
    j.end = 0;
  }
  // The node goes down and Slurm requeues every job that ran on it.
  void FailNode(const std::string& host) {
    nodes_[host] = "DOWN*";
    for (auto& [id, j] : jobs_) {
      if (j.node == host && j.state == "RUNNING") Requeue(id);
    }
  }
  // `n` jobs of the same user outside the study (another study's, or by hand), pending: squeue --me
  // lists them and slurmctld counts them toward MaxJobCount; the study's own squeue (by id) never does.
  // Their ids, for End and `purged`.
  std::vector<std::string> AddOutside(int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      Job j;
      j.id = std::to_string(next_id_++);
      j.name = "other-" + j.id;
      j.outside = true;
      jobs_[j.id] = j;
      ids.push_back(j.id);
    }
    return ids;
  }
  // MinJobAge has passed: ended jobs leave squeue.
  void PurgeEnded() {
    for (auto& [id, j] : jobs_) {
      if (j.state != "PENDING" && j.state != "RUNNING") j.purged = true;
    }
  }

  // --- what a test inspects --------------------------------------------------------------------
  Job& job(const std::string& id) {
    auto it = jobs_.find(id);
    if (it == jobs_.end()) throw std::out_of_range("FakeSlurm: no job " + id);
    return it->second;
  }
  std::vector<std::string> job_ids() const {
    std::vector<std::string> ids;
    for (const auto& [id, j] : jobs_) ids.push_back(id);
    return ids;
  }
  const std::vector<std::string>& commands() const { return commands_; }
  // The commands run with `tool` ("sbatch", "squeue", "scancel", ...).
  std::vector<std::string> issued(std::string_view tool) const {
    std::vector<std::string> out;
    for (const auto& c : commands_) {
      if (Tool(c) == tool) out.push_back(c);
    }
    return out;
  }
  std::optional<std::string> file(const std::string& path) const {
    auto it = files_.find(path);
    if (it == files_.end()) return std::nullopt;
    return it->second;
  }

  // --- Transport -------------------------------------------------------------------------------
  Result<slurm::CommandOutput> Run(const std::string& command) override {
    commands_.push_back(command);
    std::string_view tool = Tool(command);
    if (tool == "umask" || tool == "mkdir") return MkdirAndClaim(command);
    bool slurm_tool =
        tool == "sbatch" || tool == "squeue" || tool == "sacct" || tool == "scontrol" || tool == "scancel";
    if (slurm_tool && time_out_calls > 0) {
      --time_out_calls;
      return slurm::CommandOutput{1, "", fmt::format("{}: error: Socket timed out on send/recv operation\n", tool)};
    }
    if (tool == "sbatch") return Sbatch(command);
    if (tool == "squeue") return Squeue(command);
    if (tool == "sacct") return Sacct(command);
    if (tool == "scontrol") return Scontrol(command);
    if (tool == "scancel") return Scancel(command);
    return slurm::CommandOutput{127, "", "FakeSlurm: unknown command\n"};
  }
  Status WriteFile(const std::string& path, std::string_view content, int) override {
    files_[path] = std::string(content);
    return Status::OK();
  }
  Result<std::string> ReadFrom(const std::string& path, uint64_t offset, size_t max_bytes) override {
    auto it = files_.find(path);
    if (it == files_.end()) return Status::NotFound("no such file: " + path);
    if (offset >= it->second.size()) return std::string();
    return it->second.substr(offset, max_bytes);
  }
  std::string Describe() const override { return "fake slurm"; }

 private:
  // "timeout 60 sbatch --parsable X" -> "sbatch"; "squeue -h ..." -> "squeue".
  static std::string_view Tool(std::string_view c) {
    if (c.rfind("timeout ", 0) == 0) {
      c.remove_prefix(8);
      c.remove_prefix(std::min(c.size(), c.find(' ') + 1));
    }
    return c.substr(0, c.find(' '));
  }
  // The value after `flag` up to the next space, without single quotes ("-j 1,2" or "--name='a,b'").
  static std::vector<std::string> ListAfter(std::string_view c, std::string_view flag) {
    size_t p = c.find(flag);
    if (p == std::string_view::npos) return {};
    std::string_view v = c.substr(p + flag.size());
    if (!v.empty() && v.front() == '\'') v = v.substr(1, v.find('\'', 1) - 1);
    else v = v.substr(0, v.find(' '));
    std::vector<std::string> out;
    while (!v.empty()) {
      size_t comma = v.find(',');
      out.emplace_back(v.substr(0, comma));
      if (comma == std::string_view::npos) break;
      v.remove_prefix(comma + 1);
    }
    return out;
  }
  static std::string Directive(const std::string& script, const std::string& option) {
    std::string key = "#SBATCH --" + option + "=";
    size_t p = script.find(key);
    if (p == std::string::npos) return "";
    p += key.size();
    return script.substr(p, script.find('\n', p) - p);
  }
  static std::string Base(const std::string& id) { return id.substr(0, id.find('_')); }
  static std::string Time(double t, const char* none) {
    if (t == 0) return none;
    std::time_t s = static_cast<std::time_t>(t);
    std::tm tm{};
    localtime_r(&s, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
    return buf;
  }

  // The run loop's "umask 077 && mkdir -p DIRS && chmod 700 OWN && { ln -s 'TOKEN' 'CLAIM'; readlink 'CLAIM'; }": the
  // claim is made if absent ("ln -sfn": replaced), kept among the files, and printed as it stands.
  Result<slurm::CommandOutput> MkdirAndClaim(const std::string& command) {
    size_t ln = command.find("ln -s");
    if (ln == std::string::npos) return slurm::CommandOutput{};
    bool replace = command.compare(ln, 7, "ln -sfn") == 0;
    size_t token_at = command.find('\'', ln) + 1, token_end = command.find('\'', token_at);
    size_t path_at = command.find('\'', token_end + 1) + 1, path_end = command.find('\'', path_at);
    std::string path = command.substr(path_at, path_end - path_at);
    std::string token = command.substr(token_at, token_end - token_at);
    if (replace) files_[path] = token;
    else files_.emplace(path, token);
    return slurm::CommandOutput{0, files_[path] + "\n", ""};
  }

  Result<slurm::CommandOutput> Sbatch(const std::string& command) {
    std::string path = command.substr(command.find("--parsable ") + 11);
    if (!path.empty() && path.front() == '\'') path = path.substr(1, path.size() - 2);
    if (refuse_sbatch_quota > 0) {
      --refuse_sbatch_quota;
      return slurm::CommandOutput{1, "",
                                  "sbatch: error: QOSMaxSubmitJobPerUserLimit\n"
                                  "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
                                  "(job submit limit, user's size and/or time limits)\n"};
    }
    if (!refuse_sbatch_with.empty()) {
      return slurm::CommandOutput{1, "", std::exchange(refuse_sbatch_with, "")};
    }
    auto script = file(path);
    if (!script) return slurm::CommandOutput{1, "", "sbatch: error: Unable to open file " + path + "\n"};
    if (int adding = JobsIn(*script), held = Held(); held + adding >= max_job_count) {
      return slurm::CommandOutput{124, "",
                                  "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying\n"};
    }
    if (submit_quota > 0) {
      int adding = JobsIn(*script);
      int live = 0;
      for (const auto& [id, j] : jobs_) live += j.state == "PENDING" || j.state == "RUNNING" ? 1 : 0;
      if (live + adding > submit_quota) {
        return slurm::CommandOutput{1, "",
                                    "sbatch: error: QOSMaxSubmitJobPerUserLimit\n"
                                    "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
                                    "(job submit limit, user's size and/or time limits)\n"};
      }
    }
    std::string id = std::to_string(next_id_++);
    std::string output = Directive(*script, "output");
    Job proto;
    proto.name = Directive(*script, "job-name");
    proto.comment = Directive(*script, "comment");
    if (std::string array = Directive(*script, "array"); !array.empty()) {
      if (std::stoi(array.substr(array.find('-') + 1)) >= max_array_size) {
        return slurm::CommandOutput{1, "",
                                    "sbatch: error: Batch job submission failed: Invalid job array specification\n"};
      }
      // "0-N%M": tasks 0..N, each logging to the output path with %a replaced by its index.
      int last = std::stoi(array.substr(array.find('-') + 1));
      for (int i = 0; i <= last; ++i) {
        Job j = proto;
        j.id = fmt::format("{}_{}", id, i);
        j.log = output;
        if (size_t a = j.log.find("%a"); a != std::string::npos) j.log.replace(a, 2, std::to_string(i));
        jobs_[j.id] = j;
      }
    } else {
      proto.id = id;
      proto.log = output;
      jobs_[id] = proto;
    }
    if (sbatch_hangs > 0) {
      --sbatch_hangs;
      return slurm::CommandOutput{124, "", ""};
    }
    if (after_sbatch) after_sbatch(*this);
    if (lose_sbatch_answers > 0) {
      --lose_sbatch_answers;
      return Status::Unavailable("connection lost (injected) after sbatch ran");
    }
    return slurm::CommandOutput{0, id + "\n", ""};
  }

  // The jobs an sbatch of `script` adds: one, or an array's tasks ("0-N%M").
  static int JobsIn(const std::string& script) {
    std::string array = Directive(script, "array");
    return array.empty() ? 1 : std::stoi(array.substr(array.find('-') + 1)) + 1;
  }

 public:
  // The jobs slurmctld holds, as it counts them for MaxJobCount: every job not purged yet.
  int Held() const {
    return static_cast<int>(std::count_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return !j.second.purged; }));
  }
  // Of those, the study's own (not AddOutside's).
  int HeldOwn() const {
    return static_cast<int>(
        std::count_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return !j.second.purged && !j.second.outside; }));
  }

 private:
  std::string SqueueLine(const Job& j) const {
    return fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}\n", j.id, j.state, j.reason, (j.exit_code << 8) | j.signal, j.name,
                       Time(j.start, "N/A"), Time(j.end, "N/A"), j.comment.empty() ? "(null)" : j.comment, j.restarts);
  }
  std::string SacctLine(const Job& j) const {
    return fmt::format("{}|{}|{}:{}|{}|{}|{}|{}|{}\n", j.id, j.state, j.exit_code, j.signal, j.reason, j.name,
                       Time(j.start, "Unknown"), Time(j.end, "Unknown"), j.comment);
  }

  Result<slurm::CommandOutput> Squeue(const std::string& command) {
    if (on_squeue) on_squeue(*this);
    slurm::CommandOutput out;
    auto ids = ListAfter(command, " -j ");
    auto names = ListAfter(command, "--name=");
    // "squeue -h -r --me -t all -o %i": every job of the user slurmctld holds, one id a line (each
    // array task on its own, as -r prints them), ended ones until purged.
    if (command.find(" --me -t all -o %i") != std::string::npos) {
      if (count_exit != 0) return slurm::CommandOutput{count_exit, "", count_err};
      for (const auto& [id, j] : jobs_) {
        if (!j.purged) out.out += id + "\n";
      }
      out.out += count_extra;
      return out;
    }
    // "squeue --me -t PENDING,RUNNING,...": every job of ours that has not ended.
    bool live = command.find(" --me ") != std::string::npos;
    for (const auto& [id, j] : jobs_) {
      if (j.purged) continue;
      bool match = live          ? j.state == "PENDING" || j.state == "RUNNING"
                   : ids.empty() ? std::find(names.begin(), names.end(), j.name) != names.end()
                                 : std::find(ids.begin(), ids.end(), Base(id)) != ids.end();
      if (match) out.out += SqueueLine(j);
    }
    if (!ids.empty() && out.out.empty()) {
      out.exit_code = 1;
      out.err = "slurm_load_jobs error: Invalid job id specified\n";
    }
    return out;
  }

  Result<slurm::CommandOutput> Sacct(const std::string& command) {
    if (!accounting) return slurm::CommandOutput{1, "", "sacct: error: Slurm accounting storage is disabled\n"};
    slurm::CommandOutput out;
    auto ids = ListAfter(command, " -j ");
    auto names = ListAfter(command, "--name=");
    for (const auto& [id, j] : jobs_) {
      bool match = ids.empty() ? std::find(names.begin(), names.end(), j.name) != names.end()
                               : std::find(ids.begin(), ids.end(), id) != ids.end() ||
                                     std::find(ids.begin(), ids.end(), Base(id)) != ids.end();
      if (match) out.out += SacctLine(j);
    }
    return out;
  }

  Result<slurm::CommandOutput> Scontrol(const std::string& command) {
    if (command == "scontrol show config") {
      if (config_exit != 0) return slurm::CommandOutput{config_exit, "", "slurm_load_ctl_conf error: Access denied"};
      return slurm::CommandOutput{
          0,
          fmt::format("MaxArraySize            = {}\nMaxJobCount             = {}\nMinJobAge               = {} sec\n",
                      max_array_size, max_job_count, min_job_age),
          ""};
    }
    std::string last = command.substr(command.rfind(' ') + 1);
    if (command.rfind("scontrol -o show job ", 0) == 0) {
      auto it = jobs_.find(last);
      if (it == jobs_.end()) return slurm::CommandOutput{1, "", "Invalid job id specified"};
      return slurm::CommandOutput{
          0,
          fmt::format("JobId={} JobName={} ReqNodeList={} ExcNodeList=(null)\n", last, it->second.name,
                      it->second.reqnodes.empty() ? "(null)" : it->second.reqnodes),
          ""};
    }
    if (command.rfind("scontrol show hostnames ", 0) == 0) {  // a plain comma list, quoted
      std::string list = command.substr(24), out;
      for (char c : list) {
        if (c != '\'') out += c == ',' ? '\n' : c;
      }
      return slurm::CommandOutput{0, out + "\n", ""};
    }
    const std::string& node = last;
    if (missing_nodes.count(node)) return slurm::CommandOutput{1, "", "Node " + node + " not found"};
    auto it = nodes_.find(node);
    std::string state = it == nodes_.end() ? "IDLE" : it->second;
    return slurm::CommandOutput{0, fmt::format("NodeName={} Arch=x86_64 State={} CPUTot=4\n", node, state), ""};
  }

  // "scancel 100_2 101": a task, a plain job, or an array by its id (every task of it). As Slurm does,
  // a job cancelled while pending never started (no start time); with `cancel_purges_pending` it also
  // leaves squeue at once, as Slurm's array tasks do (accounting keeps it).
  // `before_scancel` runs first: what happened on the cluster just before the cancel reached it.
  Result<slurm::CommandOutput> Scancel(const std::string& command) {
    if (before_scancel) std::exchange(before_scancel, nullptr)();
    std::string_view rest = std::string_view(command).substr(8);
    while (!rest.empty()) {
      std::string id(rest.substr(0, rest.find(' ')));
      rest.remove_prefix(std::min(rest.size(), id.size() + 1));
      for (auto& [jid, j] : jobs_) {
        if ((jid == id || Base(jid) == id) && (j.state == "PENDING" || j.state == "RUNNING")) {
          j.purged = cancel_purges_pending && j.state == "PENDING";
          j.state = "CANCELLED";
          j.reason = "None";
          j.exit_code = 0;
          j.signal = j.start > 0 ? 15 : 0;
          j.end = clock_.Now();
        }
      }
    }
    return slurm::CommandOutput{};
  }

 public:
  std::function<void()> before_scancel;
  bool cancel_purges_pending = false;

 private:
  const Clock& clock_;
  int next_id_ = 100;
  std::map<std::string, Job> jobs_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> nodes_;  // node -> scontrol State; absent: IDLE
  std::vector<std::string> commands_;
};

// One Megatron training log line (the format logs/metrics_parser.h reads), 1 s per iteration.
inline std::string MegatronLine(int iteration, int total, double loss) {
  return fmt::format(
      " [2026-12-03 10:00:00] iteration {:>8}/{:>8} | consumed samples: {:>8} | elapsed time per "
      "iteration (ms): 1000.0 | lm loss: {:.6E} | number of nan iterations:   0 |\n",
      iteration, total, iteration * 8, loss);
}

}  // namespace sweep::testing
