// The run loop against a fake Slurm (tests/fake_slurm.h): one test per decision the loop takes,
// each in milliseconds and asserting what a user would see (trial states, stored metrics, events)
// and the Slurm commands it cost. The [cluster] and [fault] tests run the same decisions for real.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <sstream>

#include "results/phases.h"
#include "run/runner.h"
#include "store/store.h"
#include "study/study.h"
#include "tests/fake_slurm.h"
#include "tests/fake_sweep.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::FakeClock;
using testing::FakeSlurm;
using testing::MegatronLine;

namespace {

using Sweep = testing::FakeSweep;

// The real store, counting the metric rows each read returns, by trial: what a run reads of the
// points it stored.
class CountingStore final : public store::Store {
 public:
  explicit CountingStore(store::Store& real) : real_(real) {}
  std::map<int64_t, int64_t> rows_read;  // by trial
  std::map<std::string, int> reads;      // by method and metric: "MetricSeries lm_loss"
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
  // >= 0: AppendMetrics fails after this many more have succeeded (a tick whose write fails midway).
  int appends_left = -1;
  Status AppendMetrics(int64_t id, const std::vector<store::MetricRow>& rows, int64_t offset) override {
    if (appends_left == 0) {
      appends_left = -1;
      return Status::IOError("disk I/O error (injected)");
    }
    if (appends_left > 0) --appends_left;
    return real_.AppendMetrics(id, rows, offset);
  }
  Status AppendTelemetry(int64_t id, const std::vector<store::MetricRow>& rows, int64_t offset) override {
    return real_.AppendTelemetry(id, rows, offset);
  }
  Status ResetMetrics(int64_t id) override { return real_.ResetMetrics(id); }
  Result<std::vector<store::MetricRow>> Metrics(int64_t id) override {
    ++reads["Metrics"];
    auto r = real_.Metrics(id);
    if (r.ok()) rows_read[id] += static_cast<int64_t>(r->size());
    return r;
  }
  Result<std::vector<store::MetricColumns>> MetricTable(int64_t id) override {
    ++reads["MetricTable"];
    auto r = real_.MetricTable(id);
    if (r.ok()) {
      for (const auto& c : *r) rows_read[id] += static_cast<int64_t>(c.steps.size());
    }
    return r;
  }
  Result<std::vector<store::MetricRow>> MetricSeries(int64_t id, const std::string& n) override {
    ++reads["MetricSeries " + n];
    auto r = real_.MetricSeries(id, n);
    if (r.ok()) rows_read[id] += static_cast<int64_t>(r->size());
    return r;
  }
  Result<std::vector<double>> MetricTail(int64_t id, const std::string& n, size_t k) override {
    ++reads["MetricTail " + n];
    auto r = real_.MetricTail(id, n, k);
    if (r.ok()) rows_read[id] += static_cast<int64_t>(r->size());
    return r;
  }
  Result<std::vector<CurvePoint>> MetricRange(int64_t id, const std::string& n, int64_t first, int64_t last,
                                              size_t before) override {
    ++reads["MetricRange " + n];
    auto r = real_.MetricRange(id, n, first, last, before);
    if (r.ok()) rows_read[id] += static_cast<int64_t>(r->size());
    return r;
  }
  Result<std::optional<store::MetricRow>> LastMetric(int64_t id, const std::string& n) override {
    return real_.LastMetric(id, n);
  }
  Result<store::TrialSummary> Summary(int64_t id, const std::vector<std::string>& s) override {
    return real_.Summary(id, s);
  }
  Result<std::vector<store::TrialSummary>> Summaries(int64_t id, const std::vector<std::string>& s) override {
    return real_.Summaries(id, s);
  }
  Result<int64_t> CountMetrics(int64_t id) override { return real_.CountMetrics(id); }
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
  Status InTransaction(const std::function<Status()>& fn) override { return real_.InTransaction(fn); }

 private:
  store::Store& real_;
};

}  // namespace

TEST_CASE("restart: the first tick of a new run reads each trial's stored points at most once", "[runner]") {
  // Stopping on, so the rules need each running trial's curve; Megatron lines log four metrics.
  Sweep s("[space]\nlr = [0.1, 0.2]\n\n[stopping.median]\ngrace_s = 0\nmin_trials = 3\n", 2);
  s.Tick();
  for (int i = 0; i < 2; ++i) s.slurm.Start(fmt::format("100_{}", i));
  for (int step = 1; step <= 40; ++step) {
    for (int i = 0; i < 2; ++i) s.slurm.AppendLog(fmt::format("100_{}", i), MegatronLine(step, 100, 3.0 - 0.01 * step));
  }
  s.Tick();
  std::map<int64_t, int64_t> stored;
  for (const auto& t : s.Trials()) stored[t.id] = s.db().CountMetrics(t.id).value();

  // The orchestrator is restarted: a new Runner over the same database; the logs have grown.
  for (int i = 0; i < 2; ++i) s.slurm.AppendLog(fmt::format("100_{}", i), MegatronLine(41, 100, 2.5));
  CountingStore counting(s.db());
  std::ostringstream log;
  run::Runner restarted(s.study(), counting, s.slurm, s.clock, log);
  auto r = restarted.Tick();
  INFO(log.str());
  REQUIRE(r.ok());
  CHECK(r->points > 0);
  // The parsers resume from the summaries: no trial's rows are read whole.
  CHECK(counting.reads["Metrics"] == 0);
  CHECK(counting.reads["MetricTable"] == 0);
  // The rules' curves: the objective and Megatron's NaN counts, each read once per trial.
  CHECK(counting.reads["MetricSeries lm_loss"] == 2);
  CHECK(counting.reads["MetricSeries nan_iters"] == 2);
  for (const auto& [id, n] : stored) {
    INFO("trial " << id << ": " << n << " rows stored");
    CHECK(counting.rows_read[id] <= n);
  }
  // A second tick reads nothing more.
  counting.rows_read.clear();
  REQUIRE(restarted.Tick().ok());
  CHECK(counting.rows_read.empty());
}

// What the stopping rules of `runner` see of each trial, against a series built from the trial's
// stored curves at once (what a restarted run starts from). Returns how many trials have a series
// (one forgotten after a failed write is rebuilt from the store when next needed).
int CheckSeriesAsStored(run::Runner& runner, const study::Study& study, store::Store& db,
                        const std::vector<int64_t>& ids) {
  int checked = 0;
  for (int64_t id : ids) {
    INFO("trial " << id);
    auto seen = runner.stopping_state().Inspect(id);
    if (!seen) continue;
    ++checked;
    std::vector<CurvePoint> curves[2];
    const char* names[2] = {"lm_loss", "nan_iters"};
    for (int k = 0; k < 2; ++k) {
      auto rows = db.MetricSeries(id, names[k]);
      REQUIRE(rows.ok());
      for (const auto& r : *rows) curves[k].push_back({r.step, r.time_s, r.value});
    }
    stopping::StoppingState rebuilt(study.stopping);
    rebuilt.Append(id, 1, curves[0], curves[1]);
    CHECK(seen->points == curves[0].size());
    auto want = *rebuilt.Inspect(id);

    INFO("seen: " << seen->t.size() << " knots, now " << seen->now << ", noise " << seen->noise << ", rate rse "
                  << seen->rate_rse << ", stall " << seen->stall_period << ", NaN iterations " << seen->nan_total);
    INFO("rebuilt: " << want.t.size() << " knots, now " << want.now << ", noise " << want.noise << ", rate rse "
                     << want.rate_rse << ", stall " << want.stall_period << ", NaN iterations " << want.nan_total);
    CHECK(*seen == want);
  }
  return checked;
}

TEST_CASE(
    "stopping: the rules' series, extended tick by tick, are those rebuilt from the store, also after a tick "
    "whose write failed midway and after a restart",
    "[runner][stopping]") {
  // Median rule on, needing more trials than there are: every trial runs on, every tick evaluates.
  Sweep s("[space]\nlr = [0.1, 0.2, 0.3]\n\n[stopping.median]\ngrace_s = 0\nmin_trials = 5\n", 3);
  CountingStore counting(s.db());
  std::ostringstream log;
  auto runner = std::make_unique<run::Runner>(s.study(), counting, s.slurm, s.clock, log);
  REQUIRE(runner->Tick().ok());
  for (int i = 0; i < 3; ++i) s.slurm.Start(fmt::format("100_{}", i));
  std::vector<int64_t> ids;
  auto listed = s.db().ListTrials(runner->study_id());
  REQUIRE(listed.ok());
  for (const auto& t : *listed) ids.push_back(t.id);
  REQUIRE(ids.size() == 3);
  int step = 0;
  auto grow = [&](int lines) {
    for (int k = 0; k < lines; ++k) {
      ++step;
      for (int i = 0; i < 3; ++i) {
        double noise = ((step * 7 + i * 13) % 11 - 5) * 0.01;
        s.slurm.AppendLog(fmt::format("100_{}", i), MegatronLine(step, 1000, 3.0 - 0.002 * step * (i + 1) + noise));
      }
    }
  };
  for (int tick = 0; tick < 6; ++tick) {
    grow(1 + tick * 3);
    auto r = runner->Tick();
    INFO(log.str());
    REQUIRE(r.ok());
    CHECK(CheckSeriesAsStored(*runner, s.study(), s.db(), ids) == 3);
  }
  // The second trial's write fails: the tick's rows are rolled back, and so must the series be.
  grow(5);
  counting.appends_left = 1;
  CHECK_FALSE(runner->Tick().ok());
  CheckSeriesAsStored(*runner, s.study(), s.db(), ids);
  // The next tick reads the same lines again, and more.
  grow(4);
  REQUIRE(runner->Tick().ok());
  CHECK(CheckSeriesAsStored(*runner, s.study(), s.db(), ids) == 3);
  CHECK(s.db().MetricSeries(ids[0], "lm_loss").value().size() == static_cast<size_t>(step));
  // A restart (the orchestrator killed after that tick): the new run rebuilds them from the store
  // and extends them from there.
  runner = std::make_unique<run::Runner>(s.study(), counting, s.slurm, s.clock, log);
  grow(3);
  REQUIRE(runner->Tick().ok());
  CHECK(CheckSeriesAsStored(*runner, s.study(), s.db(), ids) == 3);
  grow(2);
  REQUIRE(runner->Tick().ok());
  CHECK(CheckSeriesAsStored(*runner, s.study(), s.db(), ids) == 3);
}

TEST_CASE("submit: trials that share #SBATCH lines go as one job array, throttled to max_concurrent", "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2, 0.3]\n", 2);
  run::TickReport first = s.Tick();
  CHECK(first.submitted == 3);
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  auto script = s.slurm.file("/fake/work/scripts/fk/ss-fk-arr1-1.sbatch");
  REQUIRE(script);
  CHECK_THAT(*script, Catch::Contains("#SBATCH --array=0-2%2"));
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "pending");
    CHECK(t.attempt == 1);
    CHECK(t.job_id == fmt::format("100_{}", t.array_index));
  }

  // The jobs run and end; each tick asks Slurm once, however many trials.
  for (int i = 0; i < 3; ++i) {
    std::string id = fmt::format("100_{}", i);
    s.slurm.Start(id);
    s.slurm.AppendLog(id, MegatronLine(10, 20, 3.0 - i) + MegatronLine(20, 20, 2.0 - i));
    s.slurm.End(id, "COMPLETED");
  }
  run::TickReport second = s.Tick();
  CHECK(second.slurm_queries == 1);
  CHECK(second.done);
  CHECK(s.slurm.issued("sbatch").size() == 1);
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "completed");
    CHECK(s.Loss(t).size() == 2);  // each line stored once
  }
  // A tick after the end reads nothing again.
  s.Tick();
  for (const auto& t : s.Trials()) CHECK(s.Loss(t).size() == 2);
}

TEST_CASE("submit: trials whose #SBATCH lines differ go in separate arrays; a directive naming the log goes alone",
          "[runner]") {
  Sweep by_mem("[space]\nmem = [\"1G\", \"2G\"]\nlr = [0.1, 0.2]\n", 8, "", "#SBATCH --mem={{mem}}\necho {{lr}}");
  CHECK(by_mem.Tick().submitted == 4);
  auto sbatch = by_mem.slurm.issued("sbatch");
  REQUIRE(sbatch.size() == 2);
  // Each array carries its members' own directive, and each member's script the same one.
  for (const auto& t : by_mem.Trials()) {
    CHECK(t.array_index >= 0);
    std::string mem = t.params_json.find("\"1G\"") != std::string::npos ? "1G" : "2G";
    auto array = by_mem.slurm.file(fmt::format("/fake/work/scripts/fk/{}.sbatch", t.array_name));
    REQUIRE(array);
    CHECK_THAT(*array, Catch::Contains("#SBATCH --mem='" + mem + "'") && Catch::Contains("--array=0-1%"));
    auto own = by_mem.slurm.file(fmt::format("/fake/work/scripts/fk/{}.1.sbatch", t.trial_key));
    REQUIRE(own);
    CHECK_THAT(*own, Catch::Contains("#SBATCH --mem='" + mem + "'"));
  }

  // --error beside the log: the log path depends on the array, so no array can hold the trial.
  Sweep by_log("[space]\nlr = [0.1, 0.2, 0.3]\n", 8, "", "#SBATCH --error={{log}}.err\necho {{lr}}");
  CHECK(by_log.Tick().submitted == 3);
  CHECK(by_log.slurm.issued("sbatch").size() == 3);
  for (const auto& t : by_log.Trials()) {
    CHECK(t.array_index == -1);
    auto own = by_log.slurm.file(fmt::format("/fake/work/scripts/fk/{}.1.sbatch", t.trial_key));
    REQUIRE(own);
    CHECK_THAT(*own, Catch::Contains("#SBATCH --error='" + t.log_path + "'.err"));
  }
}

TEST_CASE("timeout: while slurmctld does not answer nothing is marked and nothing submitted", "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2]\n", 2);
  s.Tick();
  s.slurm.time_out_calls = 1;  // the next squeue times out
  run::TickReport r = s.Tick();
  CHECK(r.unavailable);
  CHECK_FALSE(r.done);
  for (const auto& t : s.Trials()) CHECK(t.state == "pending");
  CHECK(s.slurm.issued("sbatch").size() == 1);
  s.slurm.Start("100_0");
  CHECK(s.Tick().running == 1);  // carries on
}

TEST_CASE("timeout: an sbatch killed by its timeout is in doubt: its job is found and adopted, not failed",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1]\n", 1);
  s.slurm.sbatch_hangs = 1;
  s.Tick();
  INFO(s.log());
  CHECK(s.Trials()[0].state == "submitting");
  s.Tick();
  auto t = s.Trials()[0];
  CHECK(t.state == "pending");
  CHECK(t.job_id == "100");
  CHECK(t.attempt == 1);
  CHECK(s.slurm.issued("sbatch").size() == 1);
}

TEST_CASE("adopt: a submission whose sbatch answer was lost is found by name, never submitted twice", "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2]\n", 2);
  s.slurm.lose_sbatch_answers = 1;
  run::TickReport lost = s.Tick();
  CHECK(lost.unavailable);
  for (const auto& t : s.Trials()) CHECK(t.state == "submitting");

  s.Tick();
  CHECK(s.slurm.issued("sbatch").size() == 1);
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "pending");
    CHECK(t.attempt == 1);
    CHECK(t.job_id == fmt::format("100_{}", t.array_index));
    CHECK(s.Events("adopt", t.id) == 1);
  }
}

TEST_CASE("purge: a lost answer whose job ran and was purged, without accounting, is adopted from its start mark",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1]\n\n[retry]\nlost = 0\n", 1);
  s.slurm.accounting = false;
  s.slurm.lose_sbatch_answers = 1;
  s.Tick();
  REQUIRE(s.Trials()[0].state == "submitting");
  // While the orchestrator was away the job ran, logged and ended, and MinJobAge passed.
  s.slurm.Start("100");
  s.slurm.AppendLog("100", MegatronLine(10, 10, 1.5));
  s.slurm.End("100", "COMPLETED");
  s.slurm.PurgeEnded();

  s.Tick();
  auto t = s.Trials()[0];
  INFO(s.log());
  CHECK(s.slurm.issued("sbatch").size() == 1);
  CHECK(t.job_id == "100");
  CHECK_THAT(s.log(), Catch::Contains("found by its start mark"));
  // No record of how it ended: lost, with its log's metrics.
  CHECK(t.state == "lost");
  CHECK(s.Loss(t) == std::vector<double>{1.5});
}

TEST_CASE("purge: with accounting, a purged job of a lost sbatch answer is adopted from sacct and its end read there",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1]\n", 1);
  s.slurm.lose_sbatch_answers = 1;
  s.Tick();
  s.slurm.Start("100");
  s.slurm.AppendLog("100", MegatronLine(10, 10, 1.5));
  s.slurm.End("100", "COMPLETED");
  s.slurm.PurgeEnded();
  s.Tick();
  auto t = s.Trials()[0];
  INFO(s.log());
  CHECK(s.Events("adopt", t.id) == 1);
  CHECK(t.job_id == "100");
  CHECK(t.state == "completed");
  CHECK(s.Loss(t) == std::vector<double>{1.5});
  CHECK(s.slurm.issued("sbatch").size() == 1);
  CHECK(s.slurm.issued("sacct").size() == 2);  // by name (adopt), by id (its end)
}

TEST_CASE("retry: a failed attempt starts over from scratch while [retry] allows, then the trial ends failed",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1]\n\n[retry]\nfailed = 1\n", 1);
  s.Tick();
  s.slurm.Start("100");
  s.slurm.AppendLog("100", MegatronLine(10, 100, 2.0) + "RuntimeError: boom\n");
  s.slurm.End("100", "FAILED");
  s.Tick();
  auto t = s.Trials()[0];
  INFO(s.log());
  CHECK(s.Events("retry", t.id) == 1);
  CHECK(s.slurm.issued("sbatch").size() == 2);  // resubmitted in the same tick
  CHECK(t.attempt == 2);
  CHECK(t.job_id == "101");
  CHECK(t.state == "pending");
  CHECK(s.Loss(t).empty());  // the failed attempt's points are dropped

  s.slurm.Start("101");
  s.slurm.End("101", "FAILED");
  s.Tick();
  t = s.Trials()[0];
  CHECK(t.state == "failed");
  CHECK_THAT(t.reason, Catch::Contains("exit code 1"));
  CHECK(s.slurm.issued("sbatch").size() == 2);  // no retry left
}

TEST_CASE("chain: a job stopped at its time limit with a checkpoint continues in a new job, one curve", "[runner]") {
  Sweep s("max_chain = 3\n\n[space]\nlr = [0.1]\n", 1);
  s.Tick();
  s.slurm.Start("100");
  s.slurm.AppendLog("100",
                    MegatronLine(10, 40, 3.0) + MegatronLine(20, 40, 2.5) + "saved checkpoint at iteration 20\n");
  s.slurm.End("100", "TIMEOUT");
  s.Tick();
  auto t = s.Trials()[0];
  INFO(s.log());
  CHECK(s.Events("chain", t.id) == 1);
  CHECK(s.slurm.issued("sbatch").size() == 2);
  CHECK(t.attempt == 2);
  CHECK(t.state == "pending");
  CHECK(s.Loss(t).size() == 2);  // kept, unlike a retry

  s.slurm.Start("101");
  s.slurm.AppendLog("101", MegatronLine(30, 40, 2.0) + MegatronLine(40, 40, 1.5));
  s.slurm.End("101", "COMPLETED");
  CHECK(s.Tick().done);
  t = s.Trials()[0];
  CHECK(t.state == "completed");
  CHECK(s.Loss(t) == std::vector<double>{3.0, 2.5, 2.0, 1.5});
}

namespace {

// A study of three trials under the median rule, one array; runs them until each has logged ten
// points (the rules' evidence threshold, [stopping] min_points), the third not learning.
constexpr const char* kPruneStudy = "[space]\nlr = [0.1, 0.2, 0.3]\n\n[stopping.median]\ngrace_s = 0\nmin_trials = 2\n";

void RunToTenPoints(Sweep& s) {
  s.Tick();
  for (int i = 0; i < 3; ++i) s.slurm.Start(fmt::format("100_{}", i));
  for (int step = 1; step <= 10; ++step) {
    s.slurm.AppendLog("100_0", MegatronLine(step, 100, 3.0 - 0.15 * step));
    s.slurm.AppendLog("100_1", MegatronLine(step, 100, 3.0 - 0.12 * step));
    s.slurm.AppendLog("100_2", MegatronLine(step, 100, 9.0));  // not learning
  }
  s.Tick();
}

}  // namespace

TEST_CASE("prune: a stopping rule cancels a clearly worse running trial with one scancel", "[runner]") {
  Sweep s(kPruneStudy, 3);
  RunToTenPoints(s);
  INFO(s.log());
  auto scancel = s.slurm.issued("scancel");
  REQUIRE(scancel.size() == 1);
  CHECK(scancel[0] == "scancel 100_2");
  CHECK(s.Trial("0.3").stop_request.rfind("pruned by the median rule", 0) == 0);

  s.Tick();  // Slurm has cancelled it
  auto bad = s.Trial("0.3");
  CHECK(bad.state == "pruned");
  CHECK(s.Loss(bad).size() == 10);  // its points are kept
  CHECK(s.Trial("0.1").state == "running");
  CHECK(s.Trial("0.2").state == "running");
}

TEST_CASE("prune: a job that completes before the scancel lands is completed, its reason keeps the decision",
          "[runner]") {
  Sweep s(kPruneStudy, 3);
  RunToTenPoints(s);
  REQUIRE(s.slurm.issued("scancel").size() == 1);
  s.slurm.End("100_2", "COMPLETED");  // it had finished training: Slurm records the job's own end
  s.Tick();
  INFO(s.log());
  auto t = s.Trial("0.3");
  CHECK(t.state == "completed");
  CHECK_THAT(t.reason, Catch::StartsWith("completed before the stop took effect (pruned by the median rule"));
}

TEST_CASE("OOM skip: a CUDA OOM cancels queued configs that need at least as much memory, stored skipped", "[runner]") {
  Sweep s("[space]\nmbs = [4, 8, 2]\ntp = [1, 2]\n", 1, "", "echo {{mbs}} {{tp}}");
  s.Tick();  // one array of 6, one task at a time
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  auto oom = s.Trial(R"({"mbs":4,"tp":1})");
  s.slurm.Start(oom.job_id);
  s.slurm.AppendLog(oom.job_id, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB\n");
  s.slurm.End(oom.job_id, "FAILED");
  s.Tick();
  INFO(s.log());
  CHECK(s.Trial(R"({"mbs":4,"tp":1})").state == "cuda_oom");
  std::string dominated = s.Trial(R"({"mbs":8,"tp":1})").job_id;
  auto scancel = s.slurm.issued("scancel");
  REQUIRE(scancel.size() == 1);
  CHECK(scancel[0] == "scancel " + dominated);

  s.Tick();
  auto skipped = s.Trial(R"({"mbs":8,"tp":1})");
  CHECK(skipped.state == "skipped");
  CHECK_THAT(skipped.reason, Catch::Contains("dominated by the CUDA OOM"));
  for (const char* p : {R"({"mbs":4,"tp":2})", R"({"mbs":8,"tp":2})", R"({"mbs":2,"tp":1})", R"({"mbs":2,"tp":2})"}) {
    INFO(p);
    CHECK(s.Trial(p).state == "pending");
  }
}

TEST_CASE("OOM skip: with queue_ahead = 0 a dominated config never reaches sbatch", "[runner]") {
  Sweep s("[space]\nmbs = [4, 8]\ntp = [1]\n", 1, "queue_ahead = 0", "echo {{mbs}} {{tp}}");
  s.Tick();
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  s.slurm.Start("100");
  s.slurm.AppendLog("100", "torch.OutOfMemoryError: CUDA out of memory.\n");
  s.slurm.End("100", "FAILED");
  CHECK(s.Tick().done);
  auto skipped = s.Trial(R"({"mbs":8,"tp":1})");
  CHECK(skipped.state == "skipped");
  CHECK(skipped.attempt == 0);
  CHECK(skipped.job_id.empty());
  CHECK(s.slurm.issued("sbatch").size() == 1);
}

TEST_CASE("quota pause: a full submit quota pauses submission, then smaller arrays go in; no trial fails", "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2, 0.3, 0.4]\n", 4);
  s.slurm.refuse_sbatch_quota = 1;
  s.Tick();
  INFO(s.log());
  CHECK_THAT(s.log(), Catch::Contains("then go in arrays of at most 2"));
  s.Tick();  // the refused trials went back to new at once; the pause holds
  CHECK(s.slurm.issued("sbatch").size() == 1);
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "new");
    CHECK(t.attempt == 0);  // a refused submission is no attempt
  }
  s.clock.Advance(59);
  s.Tick();
  CHECK(s.slurm.issued("sbatch").size() == 1);
  s.clock.Advance(2);
  s.Tick();
  CHECK(s.slurm.issued("sbatch").size() == 3);  // two arrays of 2
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "pending");
    CHECK(t.attempt == 1);
  }
}

TEST_CASE("requeue: a job Slurm runs again under the same id is a new attempt; its curve is the new run's",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1]\n", 1);
  s.Tick();
  s.slurm.Start("100", "n1");
  s.slurm.AppendLog("100", MegatronLine(10, 100, 3.0) + MegatronLine(20, 100, 2.8));
  s.Tick();
  REQUIRE(s.Loss(s.Trials()[0]).size() == 2);

  s.slurm.Requeue("100");  // preempted
  s.clock.Advance(30);
  s.Tick();
  auto t = s.Trials()[0];
  INFO(s.log());
  CHECK(s.Events("requeue", t.id) == 1);
  CHECK(t.attempt == 2);
  CHECK_THAT(s.log(), Catch::Contains("(retry 1 of 2 for preempted)"));  // n1 is up: not a node failure
  CHECK(s.Loss(t).empty());
  CHECK(s.slurm.issued("sbatch").size() == 1);  // Slurm reruns it; nothing submitted

  s.slurm.Start("100", "n2");
  s.slurm.AppendLog("100", MegatronLine(10, 100, 2.9));
  s.Tick();
  CHECK(s.Loss(s.Trials()[0]) == std::vector<double>{2.9});
}

TEST_CASE("requeue: the old run's telemetry is not read as the new run's before the new sampler rewrites it",
          "[runner]") {
  // The new run's start mark lets its log be read; its sampler truncates the telemetry file a
  // moment later, in the background. Read in between, the old run's samples would be stored as
  // the new attempt's, and the new file, shorter than the offset, skipped.
  Sweep s("monitor = true\n\n[space]\nlr = [0.1]\n", 1);
  s.Tick();
  s.slurm.Start("100", "n1");
  std::string telemetry = s.Trials()[0].log_path + ".telemetry";
  auto system_points = [&] {
    auto rows = s.db().MetricSeries(s.Trials()[0].id, "system/node/mem_used_gib");
    REQUIRE(rows.ok());
    return rows->size();
  };
  s.slurm.PutFile(telemetry,
                  "slurmsweep-telemetry 1 host=n1 interval=10 job=100 restart=0\n"
                  "node 1764790000 mem_total_kib=16777216 mem_avail_kib=8388608\n"
                  "node 1764790010 mem_total_kib=16777216 mem_avail_kib=8388608\n");
  s.Tick();
  CHECK(system_points() == 2);

  s.slurm.Requeue("100");
  s.clock.Advance(30);
  s.Tick();
  REQUIRE(s.Trials()[0].attempt == 2);
  CHECK(system_points() == 0);
  s.slurm.Start("100", "n2");  // the log is the new run's; the telemetry file is still the old one
  s.slurm.AppendLog("100", MegatronLine(10, 100, 2.9));
  s.Tick();
  INFO(s.log());
  CHECK(s.Loss(s.Trials()[0]) == std::vector<double>{2.9});
  CHECK(system_points() == 0);
  CHECK(s.Trials()[0].telemetry_offset == 0);

  s.slurm.PutFile(telemetry,
                  "slurmsweep-telemetry 1 host=n2 interval=10 job=100 restart=1\n"
                  "node 1764790100 mem_total_kib=16777216 mem_avail_kib=4194304\n");
  s.Tick();
  auto rows = s.db().MetricSeries(s.Trials()[0].id, "system/node/mem_used_gib");
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 1);
  CHECK(rows->front().step == 1764790100);
  CHECK(rows->front().value == 12);
}

TEST_CASE("requeue: after a node failure with no node_fail retry left the trial ends and the rerun is cancelled",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1]\n\n[retry]\nnode_fail = 0\n", 1);
  s.Tick();
  s.slurm.Start("100", "n1");
  s.slurm.AppendLog("100", MegatronLine(10, 100, 3.0));
  s.Tick();
  s.slurm.FailNode("n1");
  s.Tick();
  auto t = s.Trials()[0];
  INFO(s.log());
  CHECK(t.state == "node_fail");
  CHECK_THAT(t.reason, Catch::Contains("its node n1 failed"));
  auto scancel = s.slurm.issued("scancel");
  REQUIRE(scancel.size() == 1);
  CHECK(scancel[0] == "scancel 100");
  CHECK(s.slurm.issued("sbatch").size() == 1);
}

TEST_CASE("requeue: a node failure that requeues several jobs asks Slurm about the node once", "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2]\n\n[retry]\nnode_fail = 0\n", 2);
  s.Tick();
  s.slurm.Start("100_0", "n1");
  s.slurm.Start("100_1", "n1");
  s.Tick();
  s.slurm.FailNode("n1");
  s.Tick();
  INFO(s.log());
  for (const auto& t : s.Trials()) CHECK(t.state == "node_fail");
  auto scontrol = s.slurm.issued("scontrol");
  // One look at the node; the other is the site's limits (scontrol show config), read once a run.
  CHECK(std::count_if(scontrol.begin(), scontrol.end(),
                      [](const std::string& c) { return c.find("show node") != std::string::npos; }) == 1);
  CHECK(scontrol.size() == 2);
}

TEST_CASE("refused: sbatch refusing a study-wide setting stops the run with trials new; another refusal fails them",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2]\n", 2);
  s.slurm.refuse_sbatch_with = "sbatch: error: invalid partition specified: gpu\n";
  auto r = s.runner().Tick();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(r.status().message(), Catch::Contains("partition"));
  for (const auto& t : s.Trials()) CHECK(t.state == "new");

  s.slurm.refuse_sbatch_with =
      "sbatch: error: Batch job submission failed: Requested node configuration is not "
      "available\n";
  s.Tick();
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "failed");
    CHECK_THAT(t.reason, Catch::StartsWith("sbatch refused the job"));
    CHECK(t.job_id.empty());
  }
  CHECK(s.Tick().done);  // nothing retried: [retry] failed = 0
  CHECK(s.slurm.issued("sbatch").size() == 2);
}

TEST_CASE("lost: a tracked job that leaves squeue on a cluster without accounting is lost, then retried", "[runner]") {
  Sweep s("[space]\nlr = [0.1]\n", 1);  // [retry] lost = 1 by default
  s.slurm.accounting = false;
  s.Tick();
  s.slurm.Start("100");
  s.slurm.AppendLog("100", MegatronLine(10, 10, 1.5));
  s.Tick();
  s.slurm.End("100", "COMPLETED");
  s.slurm.PurgeEnded();  // between two ticks: its end was never seen
  s.Tick();
  auto t = s.Trials()[0];
  INFO(s.log());
  CHECK(s.Events("retry", t.id) == 1);
  CHECK_THAT(s.log(), Catch::Contains("ended lost"));
  CHECK(t.attempt == 2);
  CHECK(t.job_id == "101");
  CHECK(s.slurm.issued("sacct").size() == 1);  // learned once that there is no accounting
}

TEST_CASE("cancel: one scancel by the array's id; unsubmitted trials are cancelled; ends are read", "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2, 0.3]\n", 2, "queue_ahead = 0");
  s.Tick();  // an array of 2; the third waits
  s.slurm.Start("100_0");
  s.slurm.AppendLog("100_0", MegatronLine(10, 100, 2.0));
  auto n = s.runner().CancelAll();
  REQUIRE(n.ok());
  CHECK(*n == 3);
  auto scancel = s.slurm.issued("scancel");
  REQUIRE(scancel.size() == 1);
  CHECK(scancel[0] == "scancel 100");
  auto open = s.runner().AwaitEnds(10);
  REQUIRE(open.ok());
  CHECK(*open == 0);
  for (const auto& t : s.Trials()) {
    INFO(t.params_json);
    CHECK(t.state == "cancelled");
  }
  CHECK(s.Loss(s.Trial("0.1")) == std::vector<double>{2.0});  // the last lines are recorded now
  CHECK(s.slurm.issued("sbatch").size() == 1);
}

TEST_CASE("objective: a name no trial logs stops submission with the names the log has; a fixed name goes on",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2]\n[objective]\nmetric = \"lm_los\"\n", 1, "queue_ahead = 0");
  s.Tick();
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  s.slurm.Start("100");
  std::string lines;
  for (int i = 1; i <= 9; ++i) lines += MegatronLine(i, 100, 3.0);
  s.slurm.AppendLog("100", lines);
  CHECK(s.Tick().submitted == 0);  // nine lines: not enough to tell
  s.slurm.AppendLog("100", MegatronLine(10, 100, 3.0));
  s.slurm.End("100", "COMPLETED");
  auto stopped = s.runner().Tick();
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(stopped.status().message(), Catch::Contains("study.toml:15: key 'objective.metric': ") &&
                                             Catch::Contains("never the objective 'lm_los'") &&
                                             Catch::Contains("did you mean 'lm_loss'") &&
                                             Catch::Contains("Submission stopped"));
  CHECK(s.slurm.issued("sbatch").size() == 1);  // the second trial was never submitted
  CHECK(s.Events("objective_missing") == 1);
  // Every name the log had was stored: a run with the name fixed ranks the trial without re-reading.
  CHECK(s.Loss(s.Trial("\"lr\":0.1")).size() == 10);
}

TEST_CASE("Run: the loop polls, ingests and ends by itself when every trial has ended, and writes the report",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2, 0.3]\n", 2, "query_gap_s = 0\npoll_interval_s = 5");
  // A scheduler: each squeue finds queued jobs started and running ones one log line further,
  // done after three lines.
  std::map<std::string, int> lines;
  s.slurm.on_squeue = [&](FakeSlurm& slurm) {
    for (const auto& id : slurm.job_ids()) {
      auto& job = slurm.job(id);
      if (job.state == "PENDING") {
        slurm.Start(id);
      } else if (job.state == "RUNNING") {
        int n = ++lines[id];
        slurm.AppendLog(id, MegatronLine(10 * n, 30, 3.0 - 0.1 * n));
        if (n == 3) slurm.End(id, "COMPLETED");
      }
    }
  };
  double start = s.clock.Now();
  REQUIRE(s.runner().Run(/*max_ticks=*/50).ok());
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "completed");
    CHECK(s.Loss(t).size() == 3);
  }
  // One squeue per tick, and the loop slept between ticks instead of spinning.
  size_t squeues = s.slurm.issued("squeue").size();
  CHECK(squeues >= 4);
  CHECK(squeues < 50);
  CHECK(s.clock.Now() - start >= 5.0 * static_cast<double>(squeues - 1));
  CHECK(s.Events("done") == 1);
  CHECK(std::filesystem::exists(s.file("fk-report.html")));
}

TEST_CASE("Run: a report refresh that does not finish never holds up the ticks; no second one starts meanwhile",
          "[runner][report]") {
  // A refresh due every minute, on a loop that ticks every 5 s (fake clock): the first refresh,
  // due after the first tick, blocks until the loop has ticked 20 more times (100 s, so the next
  // refresh falls due meanwhile). Were it written in the loop's thread, no tick would come and
  // nothing would release it.
  Sweep s("[space]\nlr = [0.1, 0.2]\n\n[report]\nrefresh_minutes = 1\n", 2,
          "query_gap_s = 0\npoll_interval_s = 5\nmax_poll_interval_s = 5");
  std::mutex mu;
  std::condition_variable cv;
  bool released = false, gave_up = false, first_returned = false;
  // The jobs run until a second refresh has started after the held one returned (on the fake
  // clock a refresh is due again within 12 ticks, but the held refresh's thread may be scheduled
  // late: the ticks are not tied to it), or, should none ever start, 1000 ticks after it returned.
  std::map<std::string, int> lines;
  int after = 0;
  int refreshes = 0;  // background refreshes started
  s.slurm.on_squeue = [&](FakeSlurm& slurm) {
    bool may_end = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      if (first_returned || gave_up) may_end = refreshes >= 2 || ++after >= 1000;
    }
    for (const auto& id : slurm.job_ids()) {
      auto& job = slurm.job(id);
      if (job.state == "PENDING") {
        slurm.Start(id);
      } else if (job.state == "RUNNING") {
        int n = ++lines[id];
        slurm.AppendLog(id, MegatronLine(10 * n, 100000, 3.0 - 0.00001 * n));
        if (may_end) slurm.End(id, "COMPLETED");
      }
    }
  };
  int ticks = 0;             // ticks the loop finished
  int ticks_while_held = 0;  // of which while the first refresh was still being written
  int refreshes_when_released = 0;
  bool released_by_loop = false;
  s.runner().set_report_writer([&](store::Store&, double) {
    std::unique_lock<std::mutex> lock(mu);
    if (++refreshes > 1) return Status::OK();
    // Only a guard against a hang should the loop wait for the refresh: the loop releases it.
    released_by_loop = cv.wait_for(lock, std::chrono::minutes(2), [&] { return released; });
    gave_up = !released_by_loop;
    first_returned = true;
    return Status::OK();
  });
  s.runner().set_on_tick([&](const run::TickReport&) {
    std::lock_guard<std::mutex> lock(mu);
    ++ticks;
    if (refreshes >= 1 && !released && ++ticks_while_held == 20) {
      released = true;
      refreshes_when_released = refreshes;
      cv.notify_all();
    }
  });
  REQUIRE(s.runner().Run().ok());
  INFO(s.log());
  CHECK(released_by_loop);
  CHECK(ticks_while_held == 20);
  // A refresh fell due while the first was held: skipped, not stacked. A later one ran.
  CHECK(refreshes_when_released == 1);
  CHECK(refreshes >= 2);
  CHECK(ticks > ticks_while_held);
  for (const auto& t : s.Trials()) CHECK(t.state == "completed");
}

TEST_CASE("resubmit: the user's --resubmit failed starts those trials over from scratch; others stay", "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2]\n\n[retry]\nfailed = 0\n", 2);
  s.Tick();
  s.slurm.Start("100_0");
  s.slurm.AppendLog("100_0", MegatronLine(10, 20, 3.0));
  s.slurm.End("100_0", "FAILED");
  s.slurm.Start("100_1");
  s.slurm.AppendLog("100_1", MegatronLine(10, 20, 2.0));
  s.slurm.End("100_1", "COMPLETED");
  CHECK(s.Tick().done);
  auto failed = s.Trial("\"lr\":0.1");
  REQUIRE(failed.state == "failed");
  REQUIRE(s.Loss(failed).size() == 1);

  auto n = s.runner().Resubmit({"failed"});
  REQUIRE(n.ok());
  CHECK(*n == 1);
  auto again = s.Trial("\"lr\":0.1");
  CHECK(again.state == "new");
  CHECK(s.Loss(again).empty());  // the failed attempt's points are gone: the new run starts from scratch
  CHECK(s.Events("resubmit", again.id) == 1);
  CHECK(s.Trial("\"lr\":0.2").state == "completed");

  s.Tick();
  auto second = s.Trial("\"lr\":0.1");
  CHECK(second.state == "pending");
  CHECK(second.attempt == 2);
  CHECK(s.slurm.issued("sbatch").size() == 2);
  CHECK(s.Trial("\"lr\":0.2").attempt == 1);
}

TEST_CASE("calibrate: a measured peak above the plan's skips the new configurations that no longer fit", "[runner]") {
  const std::string vars =
      "nodes = 1\ngpus_per_node = 8\n[job.vars]\nmodel = \"llama3.1-8b\"\ngpu_mem_gib = 400\nheadroom_gib = 0\n"
      "global_batch_size = 64\nseq_length = 4096\n[space]\nmbs = [1, 2, 4, 8]\ntp = [1]\n";
  Sweep s(vars, 1, "queue_ahead = 0", "echo {{mbs}} {{tp}}");
  auto plan = results::PlanStudy(s.study());
  REQUIRE(plan.ok());
  std::map<int64_t, double> peak;  // mbs -> predicted peak bytes
  for (const auto& row : plan->rows) {
    REQUIRE(row.verdict == planner::PlanRow::Verdict::kFits);
    peak[std::get<int64_t>(row.trial.params[0].second)] = row.memory->Peak().Total();
  }
  REQUIRE(peak[1] < peak[2]);
  REQUIRE(peak[2] < peak[4]);
  const double gib = 1024.0 * 1024 * 1024;
  // The first trial peaks `extra` above its prediction: enough that mbs 4 and 8 no longer fit in
  // 400 GiB, not so much that mbs 2 does not.
  double extra = 400 * gib - (peak[2] + peak[4]) / 2;
  s.Tick();
  auto first = s.Trials();
  auto running = std::find_if(first.begin(), first.end(), [](const auto& t) { return !t.job_id.empty(); });
  REQUIRE(running != first.end());
  REQUIRE(running->params_json.find("\"mbs\":1") != std::string::npos);
  s.slurm.Start("100");
  double observed_mb = (peak[1] + extra) / (1024.0 * 1024);
  s.slurm.AppendLog("100", MegatronLine(10, 20, 3.0) +
                               fmt::format("[Rank 0] (after 10 iterations) memory (MB) | allocated: 1000.0 | max "
                                           "allocated: 2000.0 | reserved: 3000.0 | max reserved: {:.1f}\n",
                                           observed_mb));
  s.slurm.End("100", "COMPLETED");
  s.Tick();
  CHECK(s.Trial("\"mbs\":4").state == "skipped");
  CHECK_THAT(s.Trial("\"mbs\":8").reason, Catch::Contains("memory plan calibrated on trial"));
  CHECK(s.Trial("\"mbs\":2").state != "skipped");
  CHECK(s.Events("calibrate") == 1);
}
