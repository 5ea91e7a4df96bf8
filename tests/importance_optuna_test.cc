// Parameter importance against Optuna's on the same trials: a synthetic hyperparameter study (the
// learning rate, sampled on a log scale, decides the loss; the optimizer a little; the seed
// nothing) is written to a store, `WriteReports` writes trials.csv and importance.csv, and
// bench/importance_vs_optuna.py runs Optuna's get_param_importances (fANOVA) on those trials
// with Debian's python3-optuna. It exits 0 only when both put the same parameter first.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "results/report_files.h"
#include "tests/synthetic_study.h"
#include "tests/test_util.h"

namespace sweep {
namespace {

TEST_CASE("Importance puts first the parameter Optuna's fANOVA puts first", "[report]") {
  testing::TempDir dir;
  auto opened = store::Store::Open(dir.file("hpo.db"));
  REQUIRE(opened.ok());
  auto& store = **opened;
  study::Study study = testing::SyntheticStudy();
  study.space.clear();
  for (const char* name : {"lr", "optimizer", "seed"}) {
    study::ParamSpec p;
    p.name = name;
    p.log = std::string(name) == "lr";
    study.space.push_back(p);
  }
  int64_t id = *store.UpsertStudy(study.name, study.path, study.hash, 1000);
  const int n = 40;
  std::vector<store::TrialRecord> trials(n);
  uint64_t rng = 12345;
  auto uniform = [&] {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<double>(rng >> 11) / 9007199254740992.0;
  };
  std::vector<double> losses;
  for (int i = 0; i < n; ++i) {
    double lr = std::pow(10.0, -4 + 3 * uniform());
    bool adam = uniform() < 0.5;
    int seed = static_cast<int>(uniform() * 3);
    trials[i].trial_key = fmt::format("t-{:03d}", i);
    trials[i].params_json =
        fmt::format(R"({{"lr": {}, "optimizer": "{}", "seed": {}}})", lr, adam ? "adam" : "sgd", seed);
    trials[i].state = "new";
    losses.push_back(0.3 + 0.2 * std::pow(std::log10(lr) + 2.5, 2) - (adam ? 0.03 : 0) + 0.01 * uniform());
  }
  REQUIRE(store.InsertTrialsIfAbsent(id, trials).ok());
  auto stored = *store.ListTrials(id);
  for (int i = 0; i < n; ++i) {
    std::vector<store::MetricRow> rows;
    for (int k = 1; k <= 20; ++k) rows.push_back({10 * k, 0.1 * k, "lm_loss", losses[i] + 1.0 / k * (k < 20)});
    REQUIRE(store.AppendMetrics(stored[i].id, rows, 100).ok());
    stored[i].state = "completed";
    stored[i].started_at = 2000 + i;
    stored[i].ended_at = 2100 + i;
    REQUIRE(store.UpdateTrial(stored[i]).ok());
  }
  REQUIRE(results::WriteReports(store, study, id, "", dir.file("csv"), 5000).ok());
  std::string importance = testing::ReadAll(dir.file("csv/importance.csv"));
  INFO(importance);
  REQUIRE(importance.starts_with("param,log,groups,epsilon2,share,trials,step\nlr,true,5,"));

  auto [rc, out] = testing::RunShell("/usr/bin/python3 " + std::string(SLURMSWEEP_SOURCE_DIR) +
                                     "/bench/importance_vs_optuna.py " + dir.file("csv") + " 2>&1");
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("top parameter: slurmsweep lr, optuna lr: same"));
}

}  // namespace
}  // namespace sweep
