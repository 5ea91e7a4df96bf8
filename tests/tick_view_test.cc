// The tick hands its own trials to the status view (TickReport::trials): the progress view made of them
// is the one the store would give, without listing the trials or expanding the space again.
#include <catch2/catch.hpp>

#include "cli/status_view.h"
#include "results/report_data.h"
#include "results/study_trials.h"
#include "tests/fake_sweep.h"

using namespace sweep;
using testing::MegatronLine;

namespace {

void CheckSameView(testing::FakeSweep& s, const run::TickReport& report) {
  REQUIRE(report.trials != nullptr);
  auto stored = cli::ReadStudyView(s.db(), s.study(), s.runner().study_id(), s.clock.Now());
  REQUIRE(stored.ok());
  auto own = cli::ReadStudyView(s.db(), s.study(), s.runner().study_id(), s.clock.Now(), *report.trials,
                                results::ParamNames(s.study()), report.left_out);
  REQUIRE(own.ok());
  CHECK(own->left_out == stored->left_out);
  REQUIRE(own->rows.size() == stored->rows.size());
  for (size_t i = 0; i < own->rows.size(); ++i) {
    INFO(own->rows[i].trial_key);
    CHECK(own->rows[i].trial_id == stored->rows[i].trial_id);
    CHECK(own->rows[i].state == stored->rows[i].state);
    CHECK(own->rows[i].steps == stored->rows[i].steps);
    CHECK(own->rows[i].objective_value == stored->rows[i].objective_value);
    CHECK(own->log_paths[i] == stored->log_paths[i]);
    CHECK(own->params[i] == stored->params[i]);
    CHECK(own->progress[i].total_steps == stored->progress[i].total_steps);
  }
}

}  // namespace

TEST_CASE("tick view: the hook's trials make the status view the store gives, trials of an older file left out",
          "[runner][status]") {
  testing::FakeSweep s("[space]\nlr = [0.1, 0.2, 0.3]\n", 3);
  CheckSameView(s, s.Tick());
  s.slurm.Start("100_0");
  s.slurm.Start("100_1");
  s.slurm.AppendLog("100_0", MegatronLine(10, 100, 3.0) + MegatronLine(20, 100, 2.5));
  s.slurm.AppendLog("100_1", MegatronLine(10, 100, 2.0));
  s.slurm.End("100_1", "COMPLETED");
  run::TickReport report = s.Tick();
  CHECK(report.trials->size() == 3);
  CheckSameView(s, report);

  // The user drops lr 0.3 from the file: its trial is history, not shown, and counted.
  s.EditStudy("lr = [0.1, 0.2, 0.3]", "lr = [0.1, 0.2]");
  report = s.Tick();
  CHECK(report.trials->size() == 2);
  CHECK(report.left_out == 1);
  CheckSameView(s, report);
}
