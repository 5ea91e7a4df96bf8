// A study file edited between two runs of the same study: the run says so, because trials are
// keyed by their [space] values alone and those that already ran keep results from the old
// settings. Needs no cluster: Runner::Prepare with the local transport only records the study and
// creates its work directory. Tagged [runner].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sstream>
#include <string>

#include "base/clock.h"
#include "results/report_data.h"
#include "run/runner.h"
#include "slurm/transport.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

std::string WriteStudy(const testing::TempDir& dir, int iters) {
  return testing::WriteLocalStudyFile(dir, "edited", "train --lr {{lr}} --iters {{iters}}",
                                      fmt::format("[job.vars]\niters = {}\n\n[space]\nlr = [0.1, 0.01]\n", iters));
}

// Prepare()s the study at `path` as `slurmsweep run` starts; returns what the run loop logged.
std::string Prepare(const std::string& path) {
  auto study = study::LoadStudy(path);
  REQUIRE(study.ok());
  auto db = store::Store::Open(study->database);
  REQUIRE(db.ok());
  auto transport = slurm::NewLocalTransport();
  SystemClock clock;
  std::ostringstream log;
  run::Runner runner(*study, **db, *transport, clock, log);
  Status st = runner.Prepare();
  INFO(st.ToString());
  REQUIRE(st.ok());
  return log.str();
}

}  // namespace

TEST_CASE("a run of an edited study file warns that earlier trials keep the old settings", "[runner]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, 200);
  CHECK_THAT(Prepare(path), !Catch::Contains("changed since"));
  CHECK_THAT(Prepare(path), !Catch::Contains("changed since"));  // the same file again: nothing to say
  WriteStudy(dir, 100);
  std::string log = Prepare(path);
  CHECK_THAT(log, Catch::Contains("warning: " + path + " changed since this study's last run") &&
                      Catch::Contains("give the changed study a new [study] name"));
  CHECK_THAT(Prepare(path), !Catch::Contains("changed since"));  // said once, at the run that saw the change
}

TEST_CASE("a rename of [objective] metric, or an edit of [report] or a comment, changes nothing stored: no warning",
          "[runner]") {
  testing::TempDir dir;
  // The same study with edits in the tables nothing stored depends on, or in what trials ran with.
  auto write = [&](const std::string& metric, const std::string& extra, int iters) {
    return testing::WriteLocalStudyFile(
        dir, "renamed", "train --lr {{lr}} --iters {{iters}}",
        fmt::format("[objective]\nmetric = \"{}\"\n\n{}[job.vars]\niters = {}\n\n[space]\nlr = [0.1, 0.01]\n", metric,
                    extra, iters));
  };
  std::string path = write("lm_loss", "", 200);
  CHECK_THAT(Prepare(path), !Catch::Contains("changed since"));
  write("val_loss", "", 200);  // the fix of a metric name
  CHECK_THAT(Prepare(path), !Catch::Contains("changed since") && !Catch::Contains("keep their results"));
  write("val_loss", "# reports for the team\n[report]\nrefresh_minutes = 2\n\n", 200);
  CHECK_THAT(Prepare(path), !Catch::Contains("changed since"));
  // What the trials ran with warns, after any number of harmless edits.
  write("val_loss", "[report]\nrefresh_minutes = 2\n\n", 100);
  CHECK_THAT(Prepare(path), Catch::Contains("warning: " + path + " changed since this study's last run"));
  // With [stopping] rules the objective decided which trials were pruned: its rename warns.
  const std::string rules = "[stopping.median]\ngrace_s = 10\n\n";
  write("val_loss", rules, 100);
  Prepare(path);
  write("lm_loss", rules, 100);
  CHECK_THAT(Prepare(path), Catch::Contains("changed since"));
}

TEST_CASE("trials whose values left [space] are not listed, ranked or recommended any more", "[runner]") {
  testing::TempDir dir;
  std::string path =
      testing::WriteLocalStudyFile(dir, "shrunk", "train --lr {{lr}}", "[space]\nlr = [0.1, 0.01, 0.001]\n");
  Prepare(path);
  testing::WriteLocalStudyFile(dir, "shrunk", "train --lr {{lr}}", "[space]\nlr = [0.1, 0.01]\n");
  Prepare(path);
  auto study = study::LoadStudy(path);
  REQUIRE(study.ok());
  auto db = store::Store::Open(study->database);
  REQUIRE(db.ok());
  auto rec = (*db)->GetStudy(study->name);
  REQUIRE(rec.ok());
  auto all = (*db)->ListTrials(rec->id);
  REQUIRE(all.ok());
  CHECK(all->size() == 3);  // kept in the database: nothing stored is lost
  int left_out = -1;
  auto rows = results::CollectTrialRows(**db, *study, rec->id, 0, "lm_loss", &left_out);
  REQUIRE(rows.ok());
  CHECK(left_out == 1);
  REQUIRE(rows->size() == 2);
  for (const auto& r : *rows) CHECK(r.param_values[0].text != "0.001");
  auto report = results::CollectReport(**db, *study, rec->id, results::ReportOptionsFor(*study), 0);
  REQUIRE(report.ok());
  CHECK(report->trials.size() == 2);
  CHECK(report->meta.trials_left_out == 1);
}
