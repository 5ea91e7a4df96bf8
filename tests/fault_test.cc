// Fault tests on the real test cluster: the orchestrator killed at random moments, jobs that
// end in each failure class, a second orchestrator on the same study. Tagged [cluster].
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "base/trial_state.h"
#include "base/clock.h"
#include "logs/metrics_parser.h"
#include "run/job_marks.h"
#include "results/phases.h"
#include "planner/planner.h"
#include "run/runner.h"
#include "study/loader.h"
#include "slurm/transport.h"
#include "store/store.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

// A study run with the local transport (as on a login node): the orchestrator process gets
// SLURM_CONF from the test cluster's env file.
std::string WriteLocalStudy(const testing::TempDir& dir, const std::string& name, const std::string& space,
                            const std::string& vars, const std::string& tmpl, int max_concurrent,
                            const std::string& extra = "", const std::string& cluster_extra = "") {
  testing::WriteAll(dir.file("job.sbatch"), tmpl);
  std::string text = fmt::format(R"([study]
name = "{}"

[cluster]
transport = "local"
partition = "{}"
workdir = "{}"
max_concurrent = {}
poll_interval_s = 0.3
{}

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "100M"
time_limit = "00:05:00"
stage = ["{}/bin/mlp_train"]

[job.vars]
{}

{}

{}
)",
                                 name, testing::ClusterVar("SLURMSWEEP_PARTITION"), dir.file("work"), max_concurrent,
                                 cluster_extra, SLURMSWEEP_BINARY_DIR, vars, extra, space);
  testing::WriteAll(dir.file("study.toml"), text);
  return dir.file("study.toml");
}

// A study run to the end in this process through `transport` and `clock` (where a test injects
// its fault), with the test cluster's SLURM_CONF: the run loop's log, Slurm command counts, trials.
struct InProcessRun {
  std::string log;
  slurm::SlurmClient::Stats stats;
  std::vector<store::TrialRecord> trials;
};
InProcessRun RunInProcess(const std::string& path, slurm::Transport& transport, Clock& clock, int max_ticks) {
  setenv("SLURM_CONF", testing::ClusterVar("SLURM_CONF").c_str(), 1);
  auto study = study::LoadStudy(path);
  REQUIRE(study.ok());
  auto db = store::Store::Open(study->database);
  REQUIRE(db.ok());
  std::ostringstream log;
  run::Runner runner(*study, **db, transport, clock, log);
  Status st = runner.Run(max_ticks);
  InProcessRun run;
  run.log = log.str();
  INFO(run.log);
  REQUIRE(st.ok());
  run.stats = runner.slurm_stats();
  auto trials = (*db)->ListTrials(runner.study_id());
  REQUIRE(trials.ok());
  run.trials = *trials;
  return run;
}

// Job ids (array tasks as "123_4") of every job of this study that ran and ended, with how many
// runs each had: Slurm's own record of job ends (the lab's JobCompLoc file), which outlives squeue
// (MinJobAge is a few seconds in the fault tests' production profile). Jobs of the study are named
// ss-STUDY-TRIAL or, as arrays, ss-STUDY-arrN-A.
std::map<std::string, int> StudyJobs(const std::string& study) {
  std::map<std::string, int> jobs;
  std::istringstream in(testing::ReadAll(testing::ClusterVar("SLURMSWEEP_LAB") + "/log/jobcomp.txt"));
  auto field = [](const std::string& line, const std::string& key) {
    size_t p = line.find(" " + key + "=");
    if (p == std::string::npos) p = line.rfind(key + "=", 0) == 0 ? 0 : std::string::npos;
    else ++p;
    if (p == std::string::npos) return std::string();
    p += key.size() + 1;
    return line.substr(p, line.find(' ', p) - p);
  };
  for (std::string line; std::getline(in, line);) {
    if (field(line, "Name").rfind("ss-" + study + "-", 0) != 0) continue;
    std::string array = field(line, "ArrayJobId");
    ++jobs[array.empty() ? field(line, "JobId") : array + "_" + field(line, "ArrayTaskId")];
  }
  return jobs;
}

constexpr const char* kTrainTemplate = R"(#!/bin/bash
exec {{workdir}}/mlp_train --micro-batch-size {{mbs}} --lr {{lr}} --optimizer {{optimizer}} \
  --hidden 16 --train-iters {{iters}} --log-interval 5 --sleep-ms {{sleep_ms}}
)";

// Starts `slurmsweep ARGS...` with the cluster's SLURM_CONF; returns its pid.
pid_t Spawn(const std::vector<std::string>& args, const std::string& log_path) {
  std::string slurm_conf = testing::ClusterVar("SLURM_CONF");
  pid_t pid = fork();
  if (pid == 0) {
    FILE* log = std::fopen(log_path.c_str(), "a");
    dup2(fileno(log), 1);
    dup2(fileno(log), 2);
    setenv("SLURM_CONF", slurm_conf.c_str(), 1);
    std::string bin = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";
    std::vector<char*> argv = {bin.data()};
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

int WaitExit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::unique_ptr<store::Store> OpenDb(const testing::TempDir& dir, const std::string& name) {
  auto st = store::Store::OpenReadOnly(dir.file(name + ".db"));
  INFO(st.status().ToString());
  REQUIRE(st.ok());
  return std::move(*st);
}

std::vector<store::TrialRecord> Trials(store::Store& db, const std::string& name) {
  auto study = db.GetStudy(name);
  REQUIRE(study.ok());
  auto trials = db.ListTrials(study->id);
  REQUIRE(trials.ok());
  return *trials;
}

// `slurmsweep run STUDY` as a separate process, to its end: exit code and everything it printed.
struct FinishedRun {
  int code = -1;
  std::string log;
};
FinishedRun RunToEnd(const testing::TempDir& dir, const std::string& path) {
  FinishedRun r;
  r.code = WaitExit(Spawn({"run", path}, dir.file("orchestrator.log")));
  r.log = testing::ReadAll(dir.file("orchestrator.log"));
  return r;
}

}  // namespace

TEST_CASE("kill -9 at random moments: every attempt has exactly one job and no metric is lost or doubled",
          "[cluster][versions][fault]") {
  testing::TempDir dir;
  const std::string name = "killed" + std::to_string(getpid());  // jobs of earlier runs stay in squeue a while
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01, 0.02, 0.03, 0.04, 0.05]\nmbs = [2, 4, 6, 8]\n",
                                     "iters = 60\nsleep_ms = 15\noptimizer = \"adam\"\n", kTrainTemplate, 6);
  std::mt19937 rng(20261202);
  std::string log = dir.file("orchestrator.log");
  for (int i = 0; i < 12; ++i) {
    pid_t pid = Spawn({"run", path}, log);
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 2500));
    kill(pid, SIGKILL);
    WaitExit(pid);
  }
  pid_t last = Spawn({"run", path}, log);
  int code = WaitExit(last);
  INFO(testing::ReadAll(log));
  REQUIRE(code == 0);

  auto db = OpenDb(dir, name);
  auto trials = Trials(*db, name);
  REQUIRE(trials.size() == 20);

  // Slurm's own record: every job (or array task) whose comment tags it as this study's.
  std::map<std::string, int> jobs_by_id = StudyJobs(name);
  for (const auto& t : trials) {
    INFO(t.trial_key << " state " << t.state << " attempt " << t.attempt << " reason " << t.reason);
    CHECK(t.state == "completed");
    CHECK(t.attempt == 1);
    CHECK(jobs_by_id[t.job_id] == 1);
    // Every iteration line of the log is in the store once: 60 iterations, one line per 5.
    std::string trial_log = testing::ReadAll(t.log_path);
    size_t lines = 0;
    for (size_t p = trial_log.find("| lm loss:"); p != std::string::npos; p = trial_log.find("| lm loss:", p + 1))
      ++lines;
    CHECK(lines == 12);
    CHECK(testing::CountPoints(*db, t.id, "lm_loss") == lines);
    CHECK(t.log_offset == static_cast<int64_t>(trial_log.size()));
  }
  CHECK(jobs_by_id.size() == trials.size());  // no job Slurm ran for this study is unknown to the store
}

// The host OOM is real: 400 MiB touched under a 100M limit, killed by Slurm's memory enforcement
// (OverMemoryKill samples every 30 s, so this test takes about that long).
TEST_CASE(
    "ended jobs are classed: diverged (also at exit 0), CUDA OOM, host OOM, cancelled outside slurmsweep; none retried",
    "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "classes";
  std::string tmpl = R"TPL(#!/bin/bash
case {{kind}} in
  diverge) exec {{workdir}}/mlp_train --optimizer sgd --lr 50 --train-iters 50 --log-interval 1 ;;
  cudaoom) echo " [2024-09-03 15:56:55] iteration        1/      10 | elapsed time per iteration (ms): 10.0 | lm loss: 2.0E+00 |"
           echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.10 GiB total capacity)" >&2
           exit 1 ;;
  hostoom) python3 -c 'import time; x = bytearray(400 << 20); x[::4096] = b"\1" * len(x[::4096]); time.sleep(120)' ;;
  external) sleep 300 ;;
  ok) exec {{workdir}}/mlp_train --train-iters 10 --log-interval 5 ;;
  nanok) echo " [2024-09-03 15:56:55] iteration        1/      10 | elapsed time per iteration (ms): 10.0 | lm loss: 2.0E+00 |"
         echo " [2024-09-03 15:56:56] iteration        2/      10 | elapsed time per iteration (ms): 10.0 | lm loss: nan |"
         exit 0 ;;
  badarg) exec {{workdir}}/mlp_train --hidden big ;;
esac
)TPL";
  std::string path = WriteLocalStudy(
      dir, name,
      "[space]\nkind = [\"diverge\", \"cudaoom\", \"hostoom\", \"external\", \"ok\", \"badarg\", \"nanok\"]\n",
      "x = 1\n", tmpl, 7);
  pid_t pid = Spawn({"run", path}, dir.file("orchestrator.log"));
  // Someone else cancels the sleeping job (an admin, or the user with scancel by hand).
  bool cancelled = false;
  for (int i = 0; i < 120 && !cancelled; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // The trial's job id is in the database.
    auto st = store::Store::OpenReadOnly(dir.file(name + ".db"));
    if (!st.ok()) continue;
    auto study = (*st)->GetStudy(name);
    if (!study.ok()) continue;
    auto trials = (*st)->ListTrials(study->id);
    if (!trials.ok()) continue;
    for (const auto& t : *trials) {
      if (t.params_json.find("external") != std::string::npos && t.state == "running") {
        testing::Capture(fmt::format("SLURM_CONF={} scancel {}", testing::ClusterVar("SLURM_CONF"), t.job_id));
        cancelled = true;
      }
    }
  }
  REQUIRE(cancelled);
  int code = WaitExit(pid);
  INFO(testing::ReadAll(dir.file("orchestrator.log")));
  REQUIRE(code == 0);
  auto db = OpenDb(dir, name);
  std::map<std::string, store::TrialRecord> by_kind;
  for (const auto& t : Trials(*db, name)) {
    for (const char* k : {"diverge", "cudaoom", "hostoom", "external", "ok", "badarg", "nanok"}) {
      if (t.params_json.find(std::string("\"") + k + "\"") != std::string::npos) by_kind[k] = t;
    }
  }
  CHECK(by_kind["diverge"].state == "diverged");
  CHECK_THAT(by_kind["diverge"].reason, Catch::Contains("nan"));
  CHECK(by_kind["cudaoom"].state == "cuda_oom");
  CHECK_THAT(by_kind["cudaoom"].reason, Catch::Contains("Tried to allocate 2.00 GiB"));
  CHECK(by_kind["hostoom"].state == "out_of_memory");
  CHECK(by_kind["external"].state == "cancelled");
  CHECK_THAT(by_kind["external"].reason, Catch::Contains("outside slurmsweep"));
  CHECK(by_kind["ok"].state == "completed");
  // Exit 0 with a NaN objective: diverged, not completed with a final nan.
  CHECK(by_kind["nanok"].state == "diverged");
  CHECK_THAT(by_kind["nanok"].reason, Catch::Contains("lm_loss is nan at step 2"));
  // Its usage text documents exit code "4 diverged": a failure, with the error line as the reason.
  CHECK(by_kind["badarg"].state == "failed");
  CHECK_THAT(by_kind["badarg"].reason, Catch::Contains("invalid value 'big' for --hidden"));
  for (const auto& [k, t] : by_kind) CHECK(t.attempt == 1);  // none of these classes is retried by default
}

TEST_CASE("a second orchestrator on the same study is refused while the first runs detached", "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "locked";
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01, 0.02]\nmbs = [4]\n",
                                     "iters = 200\nsleep_ms = 20\noptimizer = \"sgd\"\n", kTrainTemplate, 2);
  // One tick submits both trials and stops; it says they go on and how to follow them.
  pid_t one_tick = Spawn({"run", "--max-ticks", "1", path}, dir.file("one_tick.log"));
  REQUIRE(WaitExit(one_tick) == 0);
  CHECK_THAT(testing::ReadAll(dir.file("one_tick.log")),
             Catch::Contains("stopped after --max-ticks 1 with 2 trial(s) not ended; `slurmsweep run " + path));
  pid_t first = Spawn({"run", "--detach", path}, dir.file("first.log"));
  REQUIRE(WaitExit(first) == 0);  // the parent returns at once; the child goes on
  CHECK_THAT(testing::ReadAll(dir.file("first.log")), Catch::Contains("running in the background"));
  std::string pid_text;
  for (int i = 0; i < 100 && pid_text.empty(); ++i) {  // the child writes it just after the parent exits
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    pid_text = testing::ReadAll(dir.file(name + ".db.pid"));
  }
  REQUIRE_FALSE(pid_text.empty());
  pid_t child = static_cast<pid_t>(std::stol(pid_text));
  CHECK(kill(child, 0) == 0);

  pid_t second = Spawn({"run", path}, dir.file("second.log"));
  CHECK(WaitExit(second) == 4);
  CHECK_THAT(testing::ReadAll(dir.file("second.log")), Catch::Contains("already running"));

  // status works from another terminal meanwhile.
  pid_t status = Spawn({"status", path}, dir.file("status.log"));
  CHECK(WaitExit(status) == 0);
  CHECK_THAT(testing::ReadAll(dir.file("status.log")), Catch::Contains("2 trials"));

  // The detached run finishes on its own and logs to DATABASE.log.
  for (int i = 0; i < 240 && kill(child, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(kill(child, 0) != 0);
  CHECK_THAT(testing::ReadAll(dir.file(name + ".db.log")), Catch::Contains("every trial has ended"));
  CHECK_FALSE(std::filesystem::exists(dir.file(name + ".db.pid")));  // gone with the run
  auto db = OpenDb(dir, name);
  for (const auto& t : Trials(*db, name)) CHECK(t.state == "completed");
}

namespace {

// The real local transport, except that the first sbatch's answer is lost after the job was
// submitted: what a dropped SSH link or a killed orchestrator looks like from the inside.
class LoseFirstSbatchAnswer final : public slurm::Transport {
 public:
  explicit LoseFirstSbatchAnswer(std::unique_ptr<slurm::Transport> real) : real_(std::move(real)) {}
  Result<slurm::CommandOutput> Run(const std::string& command) override {
    auto r = real_->Run(command);
    if (command.find("sbatch --parsable") != std::string::npos && !dropped_) {
      dropped_ = true;
      return Status::Unavailable("connection lost (injected) after sbatch ran");
    }
    return r;
  }
  Status WriteFile(const std::string& p, std::string_view c, int mode) override { return real_->WriteFile(p, c, mode); }
  Result<std::string> ReadFrom(const std::string& p, uint64_t o, size_t n) override { return real_->ReadFrom(p, o, n); }
  std::string Describe() const override { return "local with a lost sbatch answer"; }

 private:
  std::unique_ptr<slurm::Transport> real_;
  bool dropped_ = false;
};

// The real local transport on a cluster without accounting: sacct answers as Slurm does when
// AccountingStorageType is none. For tests of what slurmsweep does where there is no slurmdbd.
class NoAccounting final : public slurm::Transport {
 public:
  explicit NoAccounting(std::unique_ptr<slurm::Transport> real) : real_(std::move(real)) {}
  Result<slurm::CommandOutput> Run(const std::string& command) override {
    if (command.rfind("sacct ", 0) == 0) {
      return slurm::CommandOutput{1, "", "sacct: error: Slurm accounting storage is disabled\n"};
    }
    return real_->Run(command);
  }
  Status WriteFile(const std::string& p, std::string_view c, int mode) override { return real_->WriteFile(p, c, mode); }
  Result<std::string> ReadFrom(const std::string& p, uint64_t o, size_t n) override { return real_->ReadFrom(p, o, n); }
  std::string Describe() const override { return "local without accounting"; }

 private:
  std::unique_ptr<slurm::Transport> real_;
};

}  // namespace

TEST_CASE("a submission whose answer was lost is found and adopted, never submitted twice", "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "lostanswer" + std::to_string(getpid());
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01, 0.02]\nmbs = [4]\n",
                                     "iters = 20\nsleep_ms = 0\noptimizer = \"sgd\"\n", kTrainTemplate, 4);
  LoseFirstSbatchAnswer transport(slurm::NewLocalTransport());
  SystemClock clock;
  InProcessRun run = RunInProcess(path, transport, clock, 200);
  INFO(run.log);
  CHECK_THAT(run.log, Catch::Contains("adopted job"));
  CHECK(run.stats.sbatch == 1);  // the lost answer (of the array of both) was not followed by a second sbatch
  for (const auto& t : run.trials) {
    CHECK(t.state == "completed");
    CHECK(t.attempt == 1);
  }
  auto jobs = StudyJobs(name);
  CHECK(jobs.size() == 2);
  for (const auto& t : run.trials) CHECK(jobs[t.job_id] == 1);
}

namespace {

// The real local transport, except that sbatch answers "submit quota full" the first `refusals`
// times without running, with the words Slurm 22.05 prints for QOSMaxSubmitJobPerUserLimit.
class SubmitQuotaFull final : public slurm::Transport {
 public:
  SubmitQuotaFull(std::unique_ptr<slurm::Transport> real, int refusals) : real_(std::move(real)), left_(refusals) {}
  Result<slurm::CommandOutput> Run(const std::string& command) override {
    if (command.find("sbatch --parsable") != std::string::npos && left_ > 0) {
      --left_;
      return slurm::CommandOutput{1, "",
                                  "sbatch: error: QOSMaxSubmitJobPerUserLimit\n"
                                  "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy "
                                  "(job submit limit, user's size and/or time limits)\n"};
    }
    return real_->Run(command);
  }
  Status WriteFile(const std::string& p, std::string_view c, int mode) override { return real_->WriteFile(p, c, mode); }
  Result<std::string> ReadFrom(const std::string& p, uint64_t o, size_t n) override { return real_->ReadFrom(p, o, n); }
  std::string Describe() const override { return "local with a full submit quota"; }

 private:
  std::unique_ptr<slurm::Transport> real_;
  int left_;
};

// Real time, except that long waits pass at once: a minutes-long submit pause takes no test time
// while the jobs on the cluster run in real time.
class FastForwardClock final : public Clock {
 public:
  double Now() const override { return real_.Now() + skipped_; }
  void SleepFor(double seconds) override {
    double real = std::min(seconds, 0.1);
    real_.SleepFor(real);
    skipped_ += seconds - real;
  }

 private:
  SystemClock real_;
  double skipped_ = 0;
};

}  // namespace

TEST_CASE("a full submit quota pauses submission, then smaller arrays go in; no trial fails", "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "quota" + std::to_string(getpid());
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]\nmbs = [4]\n",
                                     "iters = 20\nsleep_ms = 0\noptimizer = \"sgd\"\n", kTrainTemplate, 6);
  SubmitQuotaFull transport(slurm::NewLocalTransport(), 2);
  FastForwardClock clock;
  double start = clock.Now();
  InProcessRun run = RunInProcess(path, transport, clock, 400);
  INFO(run.log);
  // Two refusals: 60 s, then 120 s of waiting, and the array halved each time (6 -> 3 -> 1).
  CHECK_THAT(run.log, Catch::Contains("then go in arrays of at most 3"));
  CHECK_THAT(run.log, Catch::Contains("then go in arrays of at most 1"));
  CHECK(clock.Now() - start >= 180);
  for (const auto& t : run.trials) {
    INFO(t.trial_key << " " << t.state << " " << t.reason);
    CHECK(t.state == "completed");
    CHECK(t.attempt == 1);  // a refused submission is no attempt
  }
  CHECK(StudyJobs(name).size() == 6);
}

namespace {

// The real store, except that once, inside a transaction that has already stored two or more
// log lines of some trial, the next trial's AppendMetrics fails as a lock held past busy_timeout does
// (kUnavailable: the run loop retries next tick). Everything else goes to the real store.
class LockedOnceStore final : public store::Store {
 public:
  explicit LockedOnceStore(store::Store& real) : real_(real) {}
  bool fired() const { return fired_; }

  Status AppendTelemetry(int64_t trial_id, const std::vector<store::MetricRow>& rows, int64_t new_offset) override {
    return real_.AppendTelemetry(trial_id, rows, new_offset);
  }
  Status AppendMetrics(int64_t trial_id, const std::vector<store::MetricRow>& rows, int64_t new_offset) override {
    if (!rows.empty() && depth_ > 0 && !fired_ && appended_in_txn_ > 0) {
      fired_ = true;
      // As the store says it (store/sqlite_db.cc's SqliteError): the message, and the cause the run loop reads.
      return Status::Unavailable("test: database is locked (another process holds the database lock)")
          .WithCause(Status::Cause::kDatabaseBusy);
    }
    // Two lines or more (10 metrics a line): a one-line chunk parses to the same time either way.
    if (rows.size() >= 20 && depth_ > 0) ++appended_in_txn_;
    return real_.AppendMetrics(trial_id, rows, new_offset);
  }
  Status InTransaction(const std::function<Status()>& fn) override {
    if (depth_ == 0) appended_in_txn_ = 0;
    ++depth_;
    Status s = real_.InTransaction(fn);
    --depth_;
    return s;
  }

  Result<int64_t> UpsertStudy(const std::string& n, const std::string& p, const std::string& h, double now) override {
    return real_.UpsertStudy(n, p, h, now);
  }
  Result<store::StudyRecord> GetStudy(const std::string& n) override { return real_.GetStudy(n); }
  Status InsertTrialsIfAbsent(int64_t id, std::vector<store::TrialRecord>& t) override {
    return real_.InsertTrialsIfAbsent(id, t);
  }
  Result<std::vector<store::TrialRecord>> ListTrials(int64_t id) override { return real_.ListTrials(id); }
  Result<store::TrialRecord> GetTrial(int64_t id) override { return real_.GetTrial(id); }
  Status UpdateTrial(const store::TrialRecord& t) override { return real_.UpdateTrial(t); }
  Status ResetMetrics(int64_t id) override { return real_.ResetMetrics(id); }
  Result<std::vector<store::MetricRow>> Metrics(int64_t id) override { return real_.Metrics(id); }
  Result<std::vector<store::MetricColumns>> MetricTable(int64_t id) override { return real_.MetricTable(id); }
  Result<store::TrialSummary> Summary(int64_t id, const std::vector<std::string>& s) override {
    return real_.Summary(id, s);
  }
  Result<std::vector<store::TrialSummary>> Summaries(int64_t id, const std::vector<std::string>& s) override {
    return real_.Summaries(id, s);
  }
  Result<std::vector<store::MetricRow>> MetricSeries(int64_t id, const std::string& n) override {
    return real_.MetricSeries(id, n);
  }
  Result<std::optional<store::MetricRow>> LastMetric(int64_t id, const std::string& n) override {
    return real_.LastMetric(id, n);
  }
  Result<int64_t> CountMetrics(int64_t id) override { return real_.CountMetrics(id); }
  Result<std::vector<double>> MetricTail(int64_t id, const std::string& n, size_t k) override {
    return real_.MetricTail(id, n, k);
  }
  Result<std::vector<CurvePoint>> MetricRange(int64_t id, const std::string& n, int64_t first, int64_t last,
                                              size_t before) override {
    return real_.MetricRange(id, n, first, last, before);
  }
  Status AddEvent(int64_t s, std::optional<int64_t> t, double at, const std::string& k, const std::string& m) override {
    return real_.AddEvent(s, t, at, k, m);
  }
  Result<std::vector<store::EventRecord>> Events(int64_t id) override { return real_.Events(id); }
  Result<std::optional<store::LeaseRecord>> ReadLease() override { return real_.ReadLease(); }
  Status WriteLease(const store::LeaseRecord& l) override { return real_.WriteLease(l); }
  Result<bool> RenewLease(const std::string& t, double now, int64_t pid) override {
    return real_.RenewLease(t, now, pid);
  }
  Status ReleaseLease(const std::string& t) override { return real_.ReleaseLease(t); }
  const std::string& JournalNote() const override { return real_.JournalNote(); }

 private:
  store::Store& real_;
  int depth_ = 0;
  int appended_in_txn_ = 0;
  bool fired_ = false;
};

}  // namespace

// The run loop stores every trial's new log lines in one transaction per tick. When a write in
// it fails, all of that tick's lines roll back, and what the loop had parsed in memory (offsets,
// parser state, the time axis) must roll back too: the next tick reads the same bytes again, and
// the stored curves come out exactly as one parse of each whole log gives them.
TEST_CASE("a tick whose metrics transaction fails is read again: the curves are the logs' exactly once",
          "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "rollback" + std::to_string(getpid());
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01, 0.02, 0.03]\nmbs = [4]\n",
                                     "iters = 80\nsleep_ms = 40\noptimizer = \"sgd\"\n", kTrainTemplate, 3);
  setenv("SLURM_CONF", testing::ClusterVar("SLURM_CONF").c_str(), 1);
  auto study = study::LoadStudy(path);
  REQUIRE(study.ok());
  auto db = store::Store::Open(study->database);
  REQUIRE(db.ok());
  LockedOnceStore locked(**db);
  auto transport = slurm::NewLocalTransport();
  SystemClock clock;
  std::ostringstream log;
  run::Runner runner(*study, locked, *transport, clock, log);
  Status st = runner.Run(2000);
  INFO(log.str());
  REQUIRE(st.ok());
  REQUIRE(locked.fired());
  CHECK_THAT(log.str(), Catch::Contains("database busy, will retry: test: database is locked"));
  auto trials = (*db)->ListTrials(runner.study_id());
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 3);
  for (const auto& t : *trials) {
    INFO(t.trial_key << " " << t.state);
    CHECK(t.state == "completed");
    std::string whole = testing::ReadAll(t.log_path);
    logs::ParserState fresh;
    logs::ParseOutput expected = logs::ParseMetrics(whole, MetricFormat::kMegatron, fresh);
    REQUIRE(expected.points.size() > 100);
    // The run's length ("iteration N/ M") is stored once, as train_iters.
    REQUIRE(expected.train_iters);
    expected.points.push_back(*expected.train_iters);
    auto stored = (*db)->Metrics(t.id);
    REQUIRE(stored.ok());
    REQUIRE(stored->size() == expected.points.size());
    std::map<std::pair<std::string, int64_t>, std::pair<double, double>> want;
    for (const auto& p : expected.points) want[{p.name, p.step}] = {p.time_s, p.value};
    for (const auto& r : *stored) {
      auto it = want.find({r.name, r.step});
      REQUIRE(it != want.end());
      CHECK(r.time_s == Approx(it->second.first));  // the time axis was not advanced twice
      CHECK(r.value == it->second.second);
    }
    CHECK(t.log_offset == static_cast<int64_t>(whole.size()));
  }
}

TEST_CASE("a trial longer than its time limit runs as a chain of jobs and its curve is one curve", "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "chain" + std::to_string(getpid());
  // The batch shell traps the early warning Slurm sends (B:USR1, 45 s before the 1-minute limit)
  // and passes it on; the trainer saves a checkpoint and stops; the next job resumes from it.
  std::string tmpl = R"TPL(#!/bin/bash
#SBATCH --signal=B:USR1@45
mkdir -p {{trial_dir}}
{{workdir}}/mlp_train --micro-batch-size 4 --lr 0.01 --optimizer adam --hidden 16 --train-iters {{iters}} \
  --log-interval 5 --sleep-ms 100 --checkpoint {{trial_dir}}/checkpoint.bin &
pid=$!
trap 'kill -USR1 $pid' USR1
wait $pid
wait $pid
)TPL";
  std::string path = WriteLocalStudy(dir, name, "[space]\niters = [300]\n", "x = 1\n", tmpl, 1);
  // time_limit and chaining go in [job]: rewrite the generated study's [job] lines.
  std::string text = testing::ReadAll(path);
  text.replace(text.find("time_limit = \"00:05:00\""), 23, "time_limit = \"00:01:00\"\nmax_chain = 6");
  testing::WriteAll(path, text);
  FinishedRun run = RunToEnd(dir, path);
  const std::string& log = run.log;
  INFO(log);
  REQUIRE(run.code == 0);
  auto db = OpenDb(dir, name);
  auto trials = Trials(*db, name);
  REQUIRE(trials.size() == 1);
  const auto& t = trials[0];
  CHECK(t.state == "completed");
  CHECK(t.attempt >= 2);
  CHECK_THAT(log, Catch::Contains("continuing in a new job"));
  auto rows = db->Metrics(t.id);
  REQUIRE(rows.ok());
  std::vector<store::MetricRow> loss;
  for (const auto& m : *rows)
    if (m.name == "lm_loss") loss.push_back(m);
  REQUIRE_FALSE(loss.empty());
  CHECK(loss.back().step == 300);
  for (size_t i = 1; i < loss.size(); ++i) {
    CHECK(loss[i].step > loss[i - 1].step);
    CHECK(loss[i].time_s >= loss[i - 1].time_s);  // one time axis across the jobs
  }
  // Every logged step of every job is there once: 60 lines of 5 iterations, minus the steps a
  // job trained past its last log line before stopping (they are logged again by the next).
  CHECK(loss.size() >= 58);
}

TEST_CASE("early stopping cancels clearly worse trials while they run; the best runs to the end", "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "prune" + std::to_string(getpid());
  // Adam at lr 1e-4 barely moves; the others converge. Compared at equal training time.
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.0001, 0.005, 0.01, 0.02]\nmbs = [4]\n",
                                     "iters = 400\nsleep_ms = 30\noptimizer = \"adam\"\n", kTrainTemplate, 4,
                                     "[stopping.median]\ngrace_s = 2\nmin_trials = 2\n");
  FinishedRun run = RunToEnd(dir, path);
  const std::string& log = run.log;
  INFO(log);
  REQUIRE(run.code == 0);
  auto db = OpenDb(dir, name);
  auto trials = Trials(*db, name);
  REQUIRE(trials.size() == 4);
  auto last_loss = [&](const store::TrialRecord& t) {
    auto m = db->LastMetric(t.id, "lm_loss");
    REQUIRE(m.ok());
    REQUIRE(m->has_value());
    return **m;
  };
  const store::TrialRecord* slow = nullptr;
  const store::TrialRecord* best = nullptr;
  for (const auto& t : trials) {
    if (t.params_json.find("0.0001") != std::string::npos) slow = &t;
    if (t.state == "completed" && (!best || last_loss(t).value < last_loss(*best).value)) best = &t;
  }
  REQUIRE(slow);
  CHECK(slow->state == "pruned");
  CHECK_THAT(slow->reason, Catch::Contains("median rule"));
  CHECK_THAT(slow->slurm_state, Catch::StartsWith("CANCELLED"));  // Slurm cancelled it while it ran
  CHECK(last_loss(*slow).step < 400);                             // before its end, metrics kept
  REQUIRE(best);
  CHECK(last_loss(*best).step == 400);
  for (const auto& t : trials) {
    if (t.state == "pruned") CHECK(last_loss(t).value > last_loss(*best).value);
  }
}

TEST_CASE("after a CUDA OOM, configurations that need at least as much memory never reach sbatch", "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "oomlearn" + std::to_string(getpid());
  // Stands in for a model that does not fit: micro-batch 4+ without tensor parallelism OOMs.
  std::string tmpl = R"TPL(#!/bin/bash
if [ {{mbs}} -ge 4 ] && [ {{tp}} -le 1 ]; then
  echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB" >&2; exit 1
fi
exec {{workdir}}/mlp_train --micro-batch-size {{mbs}} --train-iters 10 --log-interval 5
)TPL";
  // One at a time, in grid order: (4,1) runs first and OOMs; (8,1) needs more and is skipped;
  // (4,2) and (8,2) have more tensor parallelism and run; (2,1) needs less and runs.
  std::string path =
      WriteLocalStudy(dir, name, "[space]\nmbs = [4, 8, 2]\ntp = [1, 2]\n", "x = 1\n", tmpl, 1, "", "queue_ahead = 0");
  FinishedRun run = RunToEnd(dir, path);
  const std::string& log = run.log;
  INFO(log);
  REQUIRE(run.code == 0);
  auto db = OpenDb(dir, name);
  std::map<std::string, store::TrialRecord> by;
  for (const auto& t : Trials(*db, name)) by[t.params_json] = t;
  CHECK(by[R"({"mbs":4,"tp":1})"].state == "cuda_oom");
  const auto& skipped = by[R"({"mbs":8,"tp":1})"];
  CHECK(skipped.state == "skipped");
  CHECK_THAT(skipped.reason, Catch::Contains("dominated by the CUDA OOM"));
  CHECK(skipped.job_id.empty());  // never submitted
  CHECK(skipped.attempt == 0);
  CHECK(by[R"({"mbs":4,"tp":2})"].state == "completed");
  CHECK(by[R"({"mbs":8,"tp":2})"].state == "completed");
  CHECK(by[R"({"mbs":2,"tp":1})"].state == "completed");
  CHECK_THAT(log, Catch::Contains("slurm commands: 5 sbatch"));  // 6 trials, 1 skipped
}

// Issue 5: the measured peak memory of a finished trial feeds the memory plan. The first trial
// reports (as Megatron's report_memory does) 12 GiB more than the planner predicted for it: the
// headroom grows to 12 GiB, and the one queued-later configuration that no longer fits is skipped
// before it reaches sbatch.
TEST_CASE("a measured memory peak above the plan grows the headroom and skips configs that no longer fit",
          "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "calibrate" + std::to_string(getpid());
  std::string tmpl = R"TPL(#!/bin/bash
echo " [2026-12-02 10:00:00] iteration       10/      20 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0E+00 |"
echo "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1000.0 | max allocated: 2000.0 | reserved: 3000.0 | max reserved:" {{observed_mb}}
)TPL";
  auto write = [&](double observed_mb) {
    return WriteLocalStudy(dir, name, "[space]\nmbs = [1, 2, 4, 8]\nrecompute = [\"full\", \"selective\", \"none\"]\n",
                           fmt::format("model = \"llama3.1-8b\"\ngpu_mem_gib = 80\nglobal_batch_size = 64\n"
                                       "seq_length = 4096\nobserved_mb = {:.1f}",
                                       observed_mb),
                           tmpl, 1, "", "queue_ahead = 0\n");
  };
  // The prediction for (mbs 1, full recompute), the first configuration that fits.
  auto planned = study::LoadStudy(write(1));
  REQUIRE(planned.ok());
  planned->job.gpus_per_node = 8;
  auto plan = results::PlanStudy(*planned);
  REQUIRE(plan.ok());
  std::map<std::string, double> predicted_gib;  // model + activations, without headroom
  for (const auto& row : plan->rows) {
    if (row.verdict == planner::PlanRow::Verdict::kFits)
      predicted_gib[row.trial.params_json] = row.memory->Peak().Total() / (1 << 30);
  }
  REQUIRE(predicted_gib.size() == 3);
  double first = predicted_gib[R"({"mbs":1,"recompute":"full"})"];
  double second = predicted_gib[R"({"mbs":2,"recompute":"full"})"];
  double third = predicted_gib[R"({"mbs":4,"recompute":"full"})"];
  REQUIRE(second + 12 <= 80);  // still fits with 12 GiB of headroom
  REQUIRE(third + 12 > 80);    // no longer does
  REQUIRE(third + 4 <= 80);    // but did with the planned 4 GiB
  std::string path = write((first + 12) * 1024);
  // One node with 8 GPUs per trial, as the plan assumes.
  std::string text = testing::ReadAll(path);
  text.replace(text.find("cpus_per_task = 1"), 17, "cpus_per_task = 1\nnodes = 1\ngpus_per_node = 8");
  testing::WriteAll(path, text);

  FinishedRun run = RunToEnd(dir, path);
  INFO(run.log);
  REQUIRE(run.code == 0);
  CHECK_THAT(run.log, Catch::Contains("memory plan recalibrated"));
  auto db = OpenDb(dir, name);
  std::map<std::string, store::TrialRecord> by;
  for (const auto& t : Trials(*db, name)) by[t.params_json] = t;
  CHECK(by[R"({"mbs":1,"recompute":"full"})"].state == "completed");
  CHECK(by[R"({"mbs":2,"recompute":"full"})"].state == "completed");
  const auto& skipped = by[R"({"mbs":4,"recompute":"full"})"];
  CHECK(skipped.state == "skipped");
  CHECK_THAT(skipped.reason, Catch::Contains("memory plan calibrated on trial"));
  CHECK(skipped.job_id.empty());  // never reached sbatch
  CHECK_THAT(run.log, Catch::Contains("slurm commands: 2 sbatch"));
}

// Issue 13, item 4. Killed between sbatch and storing the job id, and started again only after
// Slurm has run the jobs and purged them (MinJobAge): squeue knows nothing of them. Accounting
// (sacct) still has them, with their end; on a cluster without it (sacct hidden here), their start
// marks (written beside the logs when a job starts) show them. Either way they are adopted, not
// submitted a second time.
TEST_CASE("an interrupted submission whose jobs Slurm has purged is adopted from sacct or the start marks",
          "[cluster][versions][fault]") {
  // As one job array (both trials in the lost sbatch), or as plain jobs (the first trial's).
  const bool arrays = GENERATE(true, false);
  // With the lab's accounting, and with sacct hidden as on a cluster without one.
  const bool accounting = GENERATE(true, false);
  if (accounting && testing::ClusterEnv()["SLURMSWEEP_ACCOUNTING"] != "slurmdbd") {
    SUCCEED("this lab keeps no accounting");
    return;
  }
  const size_t interrupted = arrays ? 2 : 1;
  testing::TempDir dir;
  const std::string name =
      std::string(arrays ? "purgedarr" : "purged") + (accounting ? "acct" : "") + std::to_string(getpid());
  // [retry] lost = 0: without accounting, how a purged job ended is not known (lost); a retry of
  // it would be a second job for the trial, which is what this test must not see.
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01, 0.02]\nmbs = [4]\n",
                                     "iters = 20\nsleep_ms = 0\noptimizer = \"sgd\"\n", kTrainTemplate, 4,
                                     "[retry]\nlost = 0\n", arrays ? "" : "arrays = false");
  setenv("SLURM_CONF", testing::ClusterVar("SLURM_CONF").c_str(), 1);
  {
    auto study = study::LoadStudy(path);
    REQUIRE(study.ok());
    auto db = store::Store::Open(study->database);
    REQUIRE(db.ok());
    LoseFirstSbatchAnswer transport(slurm::NewLocalTransport());
    SystemClock clock;
    std::ostringstream log;
    run::Runner runner(*study, **db, transport, clock, log);
    auto tick = runner.Tick();
    INFO(log.str());
    REQUIRE(tick.ok());
    REQUIRE(tick->unavailable);  // sbatch ran, its answer was lost: the orchestrator stops here
    auto trials = (*db)->ListTrials(runner.study_id());
    REQUIRE(trials.ok());
    CHECK(std::count_if(trials->begin(), trials->end(), [](const auto& t) { return t.state == "submitting"; }) ==
          static_cast<long>(interrupted));
  }
  // Until both jobs have ended (Slurm's job-end record has them) and squeue has forgotten them.
  auto in_squeue = [&] {
    return testing::Capture(fmt::format("SLURM_CONF={} squeue -h -t all -o %j | grep -c '^ss-{}-' || true",
                                        testing::ClusterVar("SLURM_CONF"), name));
  };
  bool purged = false;
  for (int i = 0; i < 600 && !purged; ++i) {
    purged = StudyJobs(name).size() == interrupted && std::stoi(in_squeue()) == 0;
    if (!purged) std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  REQUIRE(purged);

  std::unique_ptr<slurm::Transport> transport = slurm::NewLocalTransport();
  if (!accounting) transport = std::make_unique<NoAccounting>(std::move(transport));
  SystemClock clock;
  InProcessRun run = RunInProcess(path, *transport, clock, 200);
  INFO(run.log);
  CHECK(run.stats.sbatch == 2 - static_cast<int>(interrupted));  // only a trial that was never submitted
  CHECK_THAT(run.log, Catch::Contains("adopted job"));
  if (accounting) CHECK_THAT(run.log, !Catch::Contains("found by its start mark"));  // sacct found them
  else CHECK_THAT(run.log, Catch::Contains("found by its start mark"));
  auto jobs = StudyJobs(name);
  CHECK(jobs.size() == 2);  // Slurm ran one job per trial, and no other
  auto db = OpenDb(dir, name);
  size_t lost = 0;
  for (const auto& t : run.trials) {
    INFO(t.trial_key << " " << t.state << " " << t.reason);
    CHECK(jobs[t.job_id] == 1);
    CHECK(t.attempt == 1);
    // Without accounting an adopted job's end is known to no one (squeue forgot it): lost.
    CHECK((t.state == "lost" || t.state == "completed"));
    lost += t.state == "lost";
    CHECK(testing::CountPoints(*db, t.id, "lm_loss") == 4);  // its log was read all the same
  }
  CHECK(lost == (accounting ? 0 : interrupted));
}

// Issue 13, item 3. `scontrol requeue` (as after a node failure or a completion lost in a
// slurmctld restart, with JobRequeue=1) runs the job again under the same id and rewrites its
// log. The first run is an attempt of its own: its points are dropped, never spliced onto the
// second run's, its time counts, and an event says what happened.
TEST_CASE("a job Slurm runs again under the same id is a new attempt: the curve is the new run's alone",
          "[cluster][versions][fault]") {
  testing::TempDir dir;
  const std::string name = "requeue" + std::to_string(getpid());
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01]\nmbs = [4]\n",
                                     "iters = 100\nsleep_ms = 40\noptimizer = \"sgd\"\n", kTrainTemplate, 1);
  setenv("SLURM_CONF", testing::ClusterVar("SLURM_CONF").c_str(), 1);
  testing::Harness h(path);
  REQUIRE(h.TickUntil(200, [&](const std::vector<store::TrialRecord>& trials) {
    return trials[0].state == "running" && testing::CountPoints(*h.store, trials[0].id, "lm_loss") >= 3;
  }));
  store::TrialRecord first = h.Trials()[0];
  REQUIRE(testing::RunShell(
              fmt::format("SLURM_CONF={} scontrol requeue {}", testing::ClusterVar("SLURM_CONF"), first.job_id))
              .first == 0);
  REQUIRE(h.TickUntil(
      400, [](const std::vector<store::TrialRecord>& trials) { return IsFinalTrialState(trials[0].state); }));
  INFO(h.log.str());
  store::TrialRecord t = h.Trials()[0];
  CHECK(t.state == "completed");
  CHECK(t.job_id == first.job_id);  // no new job: Slurm's own rerun is the new attempt
  CHECK(t.attempt == 2);
  CHECK(t.job_restarts == 1);
  CHECK(t.prior_run_s > 0);  // the first run's time is part of the trial's cost
  CHECK_THAT(h.log.str(), Catch::Contains("was started again by Slurm (restart 1: preempted or requeued)"));
  auto events = h.store->Events(h.runner->study_id());
  REQUIRE(events.ok());
  CHECK(std::any_of(events->begin(), events->end(),
                    [&](const store::EventRecord& e) { return e.kind == "requeue" && e.trial_id == t.id; }));
  // The stored curve is exactly the second run's log: no point of the first run survives.
  std::string whole = testing::ReadAll(t.log_path);
  logs::ParserState fresh;
  logs::ParseOutput expected = logs::ParseMetrics(whole, MetricFormat::kMegatron, fresh);
  std::vector<std::pair<int64_t, double>> want;
  for (const auto& p : expected.points)
    if (p.name == "lm_loss") want.emplace_back(p.step, p.value);
  auto stored = h.store->MetricSeries(t.id, "lm_loss");
  REQUIRE(stored.ok());
  std::vector<std::pair<int64_t, double>> got;
  for (const auto& m : *stored) got.emplace_back(m.step, m.value);
  CHECK(want.size() == 20);
  CHECK(got == want);
  CHECK(run::ParseStartMarks(testing::ReadAll(run::MarksPath(t.log_path))).size() == 2);  // one line per run
}

// Issue 13, item 3 with preemption for real: a job of the high-priority partition takes the
// node, Slurm requeues the trial's job (PreemptMode=REQUEUE). With [retry] preempted = 0 the
// attempt ends preempted, and the run Slurm queued again is cancelled.
TEST_CASE("a preempted job is of the preempted class; with no retry left the trial ends and its rerun is cancelled",
          "[cluster][versions][fault]") {
  testing::TempDir dir;
  const std::string name = "preempt" + std::to_string(getpid());
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01]\nmbs = [4]\n",
                                     "iters = 400\nsleep_ms = 40\noptimizer = \"sgd\"\n", kTrainTemplate, 1,
                                     "[retry]\npreempted = 0\n");
  std::string conf = testing::ClusterVar("SLURM_CONF");
  setenv("SLURM_CONF", conf.c_str(), 1);
  testing::Harness h(path);
  REQUIRE(h.TickUntil(200, [&](const std::vector<store::TrialRecord>& trials) {
    return trials[0].state == "running" && testing::CountPoints(*h.store, trials[0].id, "lm_loss") >= 2;
  }));
  store::TrialRecord first = h.Trials()[0];
  auto starts = run::ParseStartMarks(testing::ReadAll(run::MarksPath(first.log_path)));
  REQUIRE(starts.size() == 1);
  // The whole node, in the partition that preempts.
  REQUIRE(testing::RunShell(fmt::format("SLURM_CONF={} sbatch -p {} -w {} --exclusive -o /dev/null --wrap 'sleep 1'",
                                        conf, testing::ClusterVar("SLURMSWEEP_URGENT_PARTITION"), starts[0].host))
              .first == 0);
  REQUIRE(h.TickUntil(
      200, [](const std::vector<store::TrialRecord>& trials) { return IsFinalTrialState(trials[0].state); }));
  INFO(h.log.str());
  store::TrialRecord t = h.Trials()[0];
  CHECK(t.state == "preempted");
  CHECK_THAT(t.reason, Catch::Contains("no retry left ([retry] preempted = 0)"));
  CHECK(t.attempt == 1);
  CHECK(testing::CountPoints(*h.store, t.id, "lm_loss") >= 2);  // an ended attempt keeps its points
  // Slurm does not run it a second time: its requeued run was cancelled (or is already forgotten).
  std::string state =
      testing::Capture(fmt::format("SLURM_CONF={} squeue -h -t all -j {} -o %T 2>/dev/null", conf, t.job_id));
  CHECK((state.empty() || state.rfind("CANCELLED", 0) == 0));
}

// The lm_loss points of a log, by step: what a trial that read it to its end stores.
std::vector<std::pair<int64_t, double>> LogLoss(const std::string& text) {
  logs::ParserState fresh;
  logs::ParseOutput parsed = logs::ParseMetrics(text, MetricFormat::kMegatron, fresh);
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& p : parsed.points)
    if (p.name == "lm_loss") out.emplace_back(p.step, p.value);
  return out;
}

std::vector<std::pair<int64_t, double>> StoredLoss(store::Store& db, int64_t trial_id) {
  auto stored = db.MetricSeries(trial_id, "lm_loss");
  REQUIRE(stored.ok());
  std::vector<std::pair<int64_t, double>> out;
  for (const auto& m : *stored) out.emplace_back(m.step, m.value);
  return out;
}

// Issue 27 §5: nothing of a preempted trial's last run is lost. The run goes on logging after the
// last tick read its log; then a job of the urgent partition takes both nodes, so Slurm requeues
// the trial's job and cannot run it again (which would rewrite the log) before the trial is marked.
// With [retry] preempted = 0 the trial ends preempted: every point of its log is stored.
TEST_CASE("a trial that ends preempted with no retry left keeps every point its last run logged", "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "preempttail" + std::to_string(getpid());
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01]\nmbs = [4]\n",
                                     "iters = 2000\nsleep_ms = 40\noptimizer = \"sgd\"\n", kTrainTemplate, 1,
                                     "[retry]\npreempted = 0\n");
  std::string conf = testing::ClusterVar("SLURM_CONF");
  setenv("SLURM_CONF", conf.c_str(), 1);
  testing::Harness h(path);
  REQUIRE(h.TickUntil(200, [&](const std::vector<store::TrialRecord>& trials) {
    return trials[0].state == "running" && testing::CountPoints(*h.store, trials[0].id, "lm_loss") >= 2;
  }));
  store::TrialRecord first = h.Trials()[0];
  size_t stored = testing::CountPoints(*h.store, first.id, "lm_loss");
  // No tick from here on until Slurm has requeued the job: the run logs more than was read.
  for (int i = 0; i < 600 && LogLoss(testing::ReadAll(first.log_path)).size() < stored + 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(LogLoss(testing::ReadAll(first.log_path)).size() >= stored + 3);
  std::string urgent = testing::Capture(
      fmt::format("SLURM_CONF={} sbatch --parsable -p {} -N 2 --exclusive -o /dev/null --wrap 'sleep 600'", conf,
                  testing::ClusterVar("SLURMSWEEP_URGENT_PARTITION")));
  while (!urgent.empty() && (urgent.back() == '\n' || urgent.back() == ' ')) urgent.pop_back();
  REQUIRE_FALSE(urgent.empty());
  struct CancelUrgent {
    std::string conf, id;
    ~CancelUrgent() { testing::RunShell(fmt::format("SLURM_CONF={} scancel {}", conf, id)); }
  } cancel_urgent{conf, urgent};
  std::string requeued;
  for (int i = 0; i < 600; ++i) {
    requeued = testing::Capture(fmt::format("SLURM_CONF={} squeue -h -j {} -o %T 2>/dev/null", conf, first.job_id));
    if (requeued.rfind("PENDING", 0) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(requeued.rfind("PENDING", 0) == 0);
  REQUIRE(h.TickUntil(
      200, [](const std::vector<store::TrialRecord>& trials) { return IsFinalTrialState(trials[0].state); }));
  INFO(h.log.str());
  store::TrialRecord t = h.Trials()[0];
  CHECK(t.state == "preempted");
  CHECK(t.attempt == 1);
  // The log is still the preempted run's (its rerun was cancelled before it started): all of it is stored.
  auto want = LogLoss(testing::ReadAll(t.log_path));
  CHECK(want.size() >= stored + 3);
  CHECK(StoredLoss(*h.store, t.id) == want);
}

// Issue 27 §2: every file of a study belongs to that study. Two studies with the same [space] and the
// same [cluster] workdir, run at the same time by two slurmsweep processes: each stores exactly its
// own trials' curves (their iteration counts differ, so a mix shows), and each job's start mark names
// its own study. One runs its trials as a job array, the other as plain jobs.
TEST_CASE("two studies of one space in one workdir, run at the same time, each store only their own points",
          "[cluster][fault]") {
  testing::TempDir dir;
  const std::string a = "mixa" + std::to_string(getpid()), b = "mixb" + std::to_string(getpid());
  const std::string space = "[space]\nlr = [0.01, 0.02]\nmbs = [4]\n";
  WriteLocalStudy(dir, a, space, "iters = 30\nsleep_ms = 20\noptimizer = \"sgd\"\n", kTrainTemplate, 2);
  std::filesystem::rename(dir.file("study.toml"), dir.file("a.toml"));
  WriteLocalStudy(dir, b, space, "iters = 50\nsleep_ms = 20\noptimizer = \"sgd\"\n", kTrainTemplate, 2, "",
                  "arrays = false");
  std::filesystem::rename(dir.file("study.toml"), dir.file("b.toml"));
  pid_t pa = Spawn({"run", dir.file("a.toml")}, dir.file("a.log"));
  pid_t pb = Spawn({"run", dir.file("b.toml")}, dir.file("b.log"));
  int code_a = WaitExit(pa), code_b = WaitExit(pb);
  INFO(testing::ReadAll(dir.file("a.log")) << "\n----\n" << testing::ReadAll(dir.file("b.log")));
  CHECK(code_a == 0);
  CHECK(code_b == 0);
  for (const auto& [study, iters] : {std::pair{a, 30}, std::pair{b, 50}}) {
    auto db = OpenDb(dir, study);
    auto trials = Trials(*db, study);
    REQUIRE(trials.size() == 2);
    for (const auto& t : trials) {
      INFO(study << " " << t.trial_key << " " << t.log_path);
      CHECK(t.state == "completed");
      CHECK(t.log_path.rfind(dir.file("work") + "/logs/" + study + "/", 0) == 0);
      auto got = StoredLoss(*db, t.id);
      CHECK(got == LogLoss(testing::ReadAll(t.log_path)));
      REQUIRE_FALSE(got.empty());
      CHECK(got.back().first == iters);
      auto starts = run::ParseStartMarks(testing::ReadAll(run::MarksPath(t.log_path)));
      REQUIRE(starts.size() == 1);
      CHECK(starts[0].study == study);
      CHECK(starts[0].trial == t.trial_key);
    }
  }
}

// Issue 13, item 3 for a node failure: the node's link is cut, Slurm declares it down and requeues
// the job (JobRequeue=1). The class is node_fail (the node the run was on is down), and with
// [retry] node_fail = 0 the trial ends there and the rerun is cancelled.
TEST_CASE("a job requeued after its node failed is of the node_fail class; with no retry left the trial ends",
          "[cluster][fault]") {
  testing::TempDir dir;
  const std::string name = "nodefail" + std::to_string(getpid());
  std::string path = WriteLocalStudy(dir, name, "[space]\nlr = [0.01]\nmbs = [4]\n",
                                     "iters = 3000\nsleep_ms = 40\noptimizer = \"sgd\"\n", kTrainTemplate, 1,
                                     "[retry]\nnode_fail = 0\n");
  std::string conf = testing::ClusterVar("SLURM_CONF");
  setenv("SLURM_CONF", conf.c_str(), 1);
  testing::Harness h(path);
  REQUIRE(h.TickUntil(200, [&](const std::vector<store::TrialRecord>& trials) {
    return trials[0].state == "running" && testing::CountPoints(*h.store, trials[0].id, "lm_loss") >= 2;
  }));
  auto starts = run::ParseStartMarks(testing::ReadAll(run::MarksPath(h.Trials()[0].log_path)));
  REQUIRE(starts.size() == 1);
  const std::string node = starts[0].host;
  const std::string link = testing::ClusterVar("SLURMSWEEP_NET_PREFIX") + "-" + node;
  // The link comes back however the test ends, and the node is idle again for the next test.
  struct Restore {
    std::string link, node, conf;
    ~Restore() {
      testing::RunShell("ip link set " + link + " up");
      for (int i = 0; i < 240; ++i) {
        std::string state = testing::Capture(fmt::format("SLURM_CONF={} sinfo -h -n {} -o %t", conf, node));
        if (state.rfind("idle", 0) == 0) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
      }
    }
  } restore{link, node, conf};
  REQUIRE(testing::RunShell("ip link set " + link + " down").first == 0);
  REQUIRE(h.TickUntil(
      400, [](const std::vector<store::TrialRecord>& trials) { return IsFinalTrialState(trials[0].state); }));
  INFO(h.log.str());
  store::TrialRecord t = h.Trials()[0];
  CHECK(t.state == "node_fail");
  CHECK_THAT(t.reason, Catch::Contains("its node " + node + " failed"));
  CHECK_THAT(t.reason, Catch::Contains("no retry left ([retry] node_fail = 0)"));
  CHECK(t.attempt == 1);
}
