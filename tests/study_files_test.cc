// Issue 27 §2: every file of a study belongs to that study. Studies that share a [space] and a
// [cluster] workdir on one (fake) cluster: each runs its own scripts and stores its own points; a
// second study of the same name from another database is refused; a study submitted with the
// names of an earlier slurmsweep keeps them; a log another run wrote is not read.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "run/job_marks.h"
#include "run/runner.h"
#include "run/study_files.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/fake_slurm.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::MegatronLine;

namespace {

// One study on a cluster it may share with others: its file and store in a temp dir of its own.
class SharedClusterStudy {
 public:
  SharedClusterStudy(testing::FakeSlurm& slurm, testing::FakeClock& clock, const std::string& name,
                     const std::string& space, const std::string& extra = "")
      : slurm_(slurm), clock_(clock) {
    testing::WriteAll(dir_.file("job.sbatch"), "#!/bin/bash\necho {{lr}}\n");
    std::string text = fmt::format(
        "[study]\nname = \"{}\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/fake/work\"\nmax_concurrent = 8\n\n"
        "[job]\ntemplate = \"job.sbatch\"\n\n{}\n{}\n",
        name, space, extra);
    testing::WriteAll(dir_.file("study.toml"), text);
    auto study = study::ParseStudy(text, dir_.file("study.toml"));
    INFO(study.status().ToString());
    REQUIRE(study.ok());
    study_ = std::move(*study);
    auto db = store::Store::Open(study_.database);
    REQUIRE(db.ok());
    db_ = std::move(*db);
    Restart();
  }
  void Restart() { runner_ = std::make_unique<run::Runner>(study_, *db_, slurm_, clock_, log_); }
  Result<run::TickReport> TryTick() { return runner_->Tick(); }
  run::TickReport Tick() {
    auto r = runner_->Tick();
    INFO(log_.str());
    REQUIRE(r.ok());
    return *r;
  }
  std::vector<store::TrialRecord> Trials() {
    auto t = db_->ListTrials(runner_->study_id());
    REQUIRE(t.ok());
    return *t;
  }
  std::vector<double> Loss(const store::TrialRecord& t) {
    auto rows = db_->MetricSeries(t.id, "lm_loss");
    REQUIRE(rows.ok());
    std::vector<double> out;
    for (const auto& r : *rows) out.push_back(r.value);
    return out;
  }
  int Events(const std::string& kind) {
    auto ev = db_->Events(runner_->study_id());
    REQUIRE(ev.ok());
    return static_cast<int>(
        std::count_if(ev->begin(), ev->end(), [&](const store::EventRecord& e) { return e.kind == kind; }));
  }
  store::Store& db() { return *db_; }
  const std::string& database() const { return study_.database; }
  std::string log() const { return log_.str(); }

 private:
  testing::FakeSlurm& slurm_;
  testing::FakeClock& clock_;
  testing::TempDir dir_;
  study::Study study_;
  std::unique_ptr<store::Store> db_;
  std::ostringstream log_;
  std::unique_ptr<run::Runner> runner_;
};

// One tick of a run started afresh on the study's database as it is now (the tests below delete it
// between ticks); `log` gets what the run printed.
Result<run::TickReport> TickFresh(const study::Study& study, testing::FakeSlurm& slurm, testing::FakeClock& clock,
                                  std::string& log) {
  auto db = store::Store::Open(study.database);
  REQUIRE(db.ok());
  std::ostringstream out;
  run::Runner runner(study, **db, slurm, clock, out);
  auto r = runner.Tick();
  log = out.str();
  return r;
}

}  // namespace

TEST_CASE("two studies of one space in one workdir: each runs its own scripts and stores only its own points",
          "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  // Plain jobs: one trial each, the same trial key in both studies.
  SharedClusterStudy a(slurm, clock, "alpha", "[space]\nlr = [0.1]\n");
  SharedClusterStudy b(slurm, clock, "beta", "[space]\nlr = [0.1]\n");
  REQUIRE(a.Tick().submitted == 1);
  REQUIRE(b.Tick().submitted == 1);
  store::TrialRecord ta = a.Trials()[0], tb = b.Trials()[0];
  REQUIRE(ta.trial_key == tb.trial_key);
  CHECK(ta.log_path == "/fake/work/logs/alpha/" + ta.trial_key + ".1.out");
  CHECK(tb.log_path == "/fake/work/logs/beta/" + tb.trial_key + ".1.out");
  // Both jobs run at once, each logging its own curve.
  slurm.Start(ta.job_id);
  slurm.Start(tb.job_id);
  slurm.AppendLog(ta.job_id, MegatronLine(10, 20, 1.0) + MegatronLine(20, 20, 0.5));
  slurm.AppendLog(tb.job_id, MegatronLine(10, 20, 9.0) + MegatronLine(20, 20, 8.0) + MegatronLine(20, 20, 7.0));
  slurm.End(ta.job_id, "COMPLETED");
  slurm.End(tb.job_id, "COMPLETED");
  a.Tick();
  b.Tick();
  CHECK(a.Loss(a.Trials()[0]) == std::vector<double>{1.0, 0.5});
  CHECK(b.Loss(b.Trials()[0]) == std::vector<double>{9.0, 8.0});
}

TEST_CASE("two studies of one space in one workdir: each job array execs its own study's trial scripts",
          "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  SharedClusterStudy a(slurm, clock, "alpha", "[space]\nlr = [0.1, 0.2]\n");
  SharedClusterStudy b(slurm, clock, "beta", "[space]\nlr = [0.1, 0.2]\n");
  REQUIRE(a.Tick().submitted == 2);
  REQUIRE(b.Tick().submitted == 2);  // b writes its scripts after a's array was queued
  for (SharedClusterStudy* s : {&a, &b}) {
    std::string name = s == &a ? "alpha" : "beta";
    for (const auto& t : s->Trials()) {
      // What the array's task for this trial runs, as its dispatch script names it.
      auto array = slurm.file(fmt::format("/fake/work/scripts/{}/{}.sbatch", name, t.array_name));
      REQUIRE(array);
      std::string key = fmt::format("  {}) ", t.array_index);
      size_t at = array->find(key);
      REQUIRE(at != std::string::npos);
      size_t exec = array->find("exec '", at) + 6;
      std::string script_path = array->substr(exec, array->find('\'', exec) - exec);
      auto script = slurm.file(script_path);
      REQUIRE(script);
      CHECK_THAT(*script, Catch::Contains(fmt::format("'{}' '{}' 1 >>", name, t.trial_key)));
      CHECK_THAT(*script,
                 Catch::Contains(fmt::format("--comment=slurmsweep:study={}:trial={}:attempt=1", name, t.trial_key)));
    }
  }
}

TEST_CASE("a second study of the same name in the same workdir is refused, with what to do", "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  SharedClusterStudy first(slurm, clock, "same", "[space]\nlr = [0.1]\n");
  REQUIRE(first.Tick().submitted == 1);
  clock.Advance(1);
  SharedClusterStudy second(slurm, clock, "same", "[space]\nlr = [0.1]\n");  // another database
  auto r = second.TryTick();
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(r.status().message(), Catch::Contains("already holds another study named 'same'") &&
                                       Catch::Contains("Give this study another [study] name or another [cluster] "
                                                       "workdir"));
  CHECK(slurm.issued("sbatch").size() == 1);  // nothing of the second was submitted
  // The first study, restarted on its own database, goes on.
  first.Restart();
  first.Tick();
}

TEST_CASE("the claim of a study whose database was deleted on this machine is taken over", "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  std::string gone_db;
  {
    SharedClusterStudy first(slurm, clock, "again", "[space]\nlr = [0.1]\n");
    REQUIRE(first.Tick().submitted == 1);
    gone_db = first.database();
  }
  // Its job has ended: a live one refuses the takeover (the test after the next).
  for (const auto& id : slurm.job_ids()) {
    slurm.Start(id);
    slurm.End(id, "COMPLETED");
  }
  std::filesystem::remove(gone_db);  // with its temp dir, or here
  REQUIRE_FALSE(std::filesystem::exists(gone_db));
  clock.Advance(1);
  SharedClusterStudy second(slurm, clock, "again", "[space]\nlr = [0.1]\n");
  second.Tick();
  CHECK(second.Events("claim") == 1);
  CHECK_THAT(second.log(), Catch::Contains("which no longer exists: taken over"));
}

TEST_CASE("a study submitted with an earlier slurmsweep's file names keeps them and resumes", "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  SharedClusterStudy s(slurm, clock, "old", "[space]\nlr = [0.1]\n", "[retry]\nfailed = 1\n");
  REQUIRE(s.Tick().submitted == 1);
  // As an earlier slurmsweep stored it: the log by trial key alone, where its job writes.
  store::TrialRecord t = s.Trials()[0];
  std::string old_log = "/fake/work/logs/" + t.trial_key + ".1.out";
  t.log_path = old_log;
  REQUIRE(s.db().UpdateTrial(t).ok());
  slurm.job(t.job_id).log = old_log;
  s.Restart();
  slurm.Start(t.job_id);
  slurm.AppendLog(t.job_id, MegatronLine(10, 20, 1.5));
  s.Tick();
  CHECK(s.Loss(s.Trials()[0]) == std::vector<double>{1.5});
  // Its next attempt keeps the old names too (its checkpoints are in the old trial_dir).
  slurm.End(t.job_id, "FAILED");
  s.Tick();
  s.Tick();
  store::TrialRecord retried = s.Trials()[0];
  INFO(s.log());
  CHECK(retried.attempt == 2);
  CHECK(retried.log_path == "/fake/work/logs/" + t.trial_key + ".2.out");
}

TEST_CASE("a log whose last start mark names another study's job is not read", "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  SharedClusterStudy s(slurm, clock, "mine", "[space]\nlr = [0.1]\n");
  REQUIRE(s.Tick().submitted == 1);
  store::TrialRecord t = s.Trials()[0];
  slurm.Start(t.job_id);
  // Another study's job (an earlier slurmsweep's names, or its claim removed) rewrote the path.
  slurm.PutFile(
      run::MarksPath(t.log_path),
      *slurm.file(run::MarksPath(t.log_path)) +
          fmt::format("start job=999 restart=0 host=n2 time=1 study=theirs trial={} attempt=1\n", t.trial_key));
  slurm.AppendLog(t.job_id, MegatronLine(10, 20, 4.0));
  s.Tick();
  s.Tick();
  CHECK(s.Loss(s.Trials()[0]).empty());
  CHECK(s.Events("foreign_log") == 1);
  CHECK_THAT(s.log(), Catch::Contains("job 999 of study theirs"));
}

TEST_CASE("study files: every name carries the study; an earlier slurmsweep's trials keep theirs", "[study_files]") {
  run::StudyFiles f = run::FilesOf("/w", "s1", {});
  CHECK_FALSE(f.legacy);
  CHECK(f.TrialLog("t-1", 2) == "/w/logs/s1/t-1.2.out");
  CHECK(f.TrialScript("t-1", 2) == "/w/scripts/s1/t-1.2.sbatch");
  CHECK(f.ArrayLog("ss-s1-arr3-1", "%a") == "/w/logs/s1/ss-s1-arr3-1_%a.out");
  CHECK(f.ArrayScript("ss-s1-arr3-1") == "/w/scripts/s1/ss-s1-arr3-1.sbatch");
  CHECK(f.TrialDir("t-1") == "/w/trials/s1/t-1");
  CHECK(f.ClaimPath() == "/w/.slurmsweep/studies/s1");
  store::TrialRecord mine, old;
  mine.log_path = "/w/logs/s1/t-1.1.out";
  old.log_path = "/w/logs/t-1.1.out";
  CHECK_FALSE(run::FilesOf("/w", "s1", {mine}).legacy);
  run::StudyFiles legacy = run::FilesOf("/w", "s1", {mine, old});
  CHECK(legacy.legacy);
  CHECK(legacy.TrialLog("t-1", 2) == "/w/logs/t-1.2.out");
  CHECK(legacy.TrialDir("t-1") == "/w/trials/t-1");
}

TEST_CASE(
    "deleting NAME.db and running again at the same path takes the claim over; live jobs of the deleted database "
    "refuse it, named, until they end",
    "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho {{lr}}\n");
  testing::WriteAll(dir.file("study.toml"),
                    "[study]\nname = \"again\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/fake/work\"\n\n"
                    "[job]\ntemplate = \"job.sbatch\"\n\n[space]\nlr = [0.1, 0.2]\n");
  auto loaded = study::LoadStudy(dir.file("study.toml"));
  REQUIRE(loaded.ok());
  const study::Study& study = *loaded;
  std::string log;
  auto tick = [&] { return TickFresh(study, slurm, clock, log); };
  auto remove_db = [&] {
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(study.database + suffix);
  };
  REQUIRE(tick().ok());
  std::vector<std::string> old_jobs = slurm.job_ids();
  REQUIRE(old_jobs.size() == 2);
  remove_db();
  clock.Advance(1);
  auto refused = tick();
  INFO(log);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(),
             Catch::Contains("study 'again' has 2 job(s) on the cluster that this database does not know") &&
                 Catch::Contains(old_jobs[0]) && Catch::Contains(old_jobs[1]) && Catch::Contains("scancel"));
  CHECK(slurm.job_ids().size() == 2);  // nothing submitted beside them
  // Refused again while they live (the claim was not taken).
  remove_db();
  clock.Advance(1);
  CHECK_FALSE(tick().ok());
  for (const auto& id : old_jobs) {
    slurm.Start(id);
    slurm.End(id, "COMPLETED");
  }
  remove_db();
  clock.Advance(1);
  auto again = tick();
  INFO(log);
  REQUIRE(again.ok());
  CHECK_THAT(log, Catch::Contains("was deleted and created again since: taken over"));
  CHECK(slurm.job_ids().size() == 4);  // the new database's own jobs
}

TEST_CASE(
    "a first run of a study name whose jobs from another database still live is refused, naming them; another "
    "study's jobs do not count",
    "[runner][study_files]") {
  testing::FakeClock clock;
  testing::FakeSlurm slurm{clock};
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho {{lr}}\n");
  // The same study name in two workdirs with two databases: the first one's database is then left
  // behind (deleted, or elsewhere), while its jobs are still queued and running.
  auto write = [&](const std::string& file, const std::string& name, const std::string& workdir,
                   const std::string& db) {
    testing::WriteAll(dir.file(file), fmt::format("[study]\nname = \"{}\"\ndatabase = \"{}\"\n\n[cluster]\ntransport "
                                                  "= \"local\"\nworkdir = \"{}\"\n\n[job]\ntemplate = "
                                                  "\"job.sbatch\"\n\n[space]\nlr = [0.1, 0.2]\n",
                                                  name, dir.file(db), workdir));
    auto loaded = study::LoadStudy(dir.file(file));
    REQUIRE(loaded.ok());
    return *loaded;
  };
  std::string log;
  auto tick = [&](const study::Study& study) { return TickFresh(study, slurm, clock, log); };
  study::Study first = write("first.toml", "same", "/fake/one", "one.db");
  study::Study other = write("other.toml", "same-b", "/fake/three", "three.db");
  REQUIRE(tick(first).ok());
  REQUIRE(tick(other).ok());  // "ss-same-b-..." begins as "ss-same-..." does: told apart by the comment
  std::vector<std::string> old_jobs = slurm.job_ids();
  REQUIRE(old_jobs.size() == 4);
  slurm.Start(old_jobs[0]);

  study::Study second = write("second.toml", "same", "/fake/two", "two.db");
  clock.Advance(1);
  auto refused = tick(second);
  INFO(log);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(refused.status().message(),
             Catch::Contains("study 'same' has 2 job(s) on the cluster that this database does not know") &&
                 Catch::Contains(old_jobs[0] + " (ss-same-") && Catch::Contains("running") &&
                 Catch::Contains(old_jobs[1] + " (ss-same-") && Catch::Contains("pending") &&
                 Catch::Contains(fmt::format("scancel {} {}", old_jobs[0], old_jobs[1])));
  CHECK(slurm.job_ids().size() == 4);  // nothing submitted beside them
  for (const auto& id : {old_jobs[0], old_jobs[1]}) slurm.End(id, "CANCELLED");
  clock.Advance(1);
  REQUIRE(tick(second).ok());
  CHECK(slurm.job_ids().size() == 6);
  // Its second tick submitted before, so it looks no more (one squeue: the tick's own).
  size_t squeues = slurm.issued("squeue").size();
  clock.Advance(1);
  REQUIRE(tick(second).ok());
  CHECK(slurm.issued("squeue").size() - squeues <= 1);
}
