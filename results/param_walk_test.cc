// A parameter's walk from the study file to the report: typed by the study, written by the store
// into its file, read back typed by the store, and shown in trials.csv with the text it has always
// had there (base/params_text.h).
#include <catch2/catch.hpp>

#include <variant>

#include "results/report_data.h"
#include "reports/csv.h"
#include "store/store.h"
#include "study/loader.h"
#include "study/space.h"
#include "tests/test_util.h"

namespace sweep::results {
namespace {

TEST_CASE("an integer, floats, a string and a boolean reach trials.csv typed through the store's file",
          "[report][csv][params]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\ntrain {{mbs}} {{lr}} {{opt}} {{warm}}\n");
  auto study = study::ParseStudy(
      "[study]\nname = \"walk\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n\n"
      "[job]\ntemplate = \"job.sbatch\"\n\n"
      "[space]\nmbs = [8]\nlr = [1.0, 1e-5]\nopt = [\"adam\"]\nwarm = [true]\n",
      dir.file("study.toml"));
  REQUIRE(study.ok());
  auto specs = study::ExpandSpace(*study);
  REQUIRE(specs.ok());
  REQUIRE(specs->size() == 2);
  int64_t study_id = 0;
  {
    auto store = store::Store::Open(dir.file("walk.db"));
    REQUIRE(store.ok());
    auto id = (*store)->UpsertStudy("walk", study->path, "", 0);
    REQUIRE(id.ok());
    study_id = *id;
    std::vector<store::TrialRecord> records;
    for (const TrialSpec& spec : *specs) records.push_back(store::TrialRecord::FromSpec(spec));
    REQUIRE((*store)->InsertTrialsIfAbsent(study_id, records).ok());
  }
  // A later command opens the file again, as `report` does.
  auto store = store::Store::OpenReadOnly(dir.file("walk.db"));
  REQUIRE(store.ok());
  auto trials = (*store)->ListTrials(study_id);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 2);
  std::vector<std::string> names;  // the study's order, which is the report's
  for (const study::ParamSpec& p : study->space) names.push_back(p.name);
  REQUIRE(names == std::vector<std::string>{"lr", "mbs", "opt", "warm"});
  for (size_t i = 0; i < 2; ++i) CHECK((*trials)[i].Values(names) == (*specs)[i].params);
  Params first = (*trials)[0].Values(names);
  REQUIRE(first.size() == 4);
  CHECK(std::holds_alternative<double>(first[0].second));  // 1.0 is no integer
  CHECK(std::holds_alternative<int64_t>(first[1].second));
  CHECK(std::holds_alternative<std::string>(first[2].second));
  CHECK(std::holds_alternative<bool>(first[3].second));

  auto rows = CollectTrialRows(**store, *study, study_id, 0);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  std::vector<std::string> shown;
  for (const auto& row : *rows) {
    REQUIRE(row.param_values.size() == 4);
    CHECK(row.param_values[1].Number() == 8.0);
    CHECK(*row.param_values[3].value == ParamValue(true));
    for (const ParamCell& c : row.param_values) shown.push_back(c.text);
  }
  // The float 1 keeps its decimal point (the template shows "1"), 1e-5 JSON's form.
  CHECK(shown == std::vector<std::string>{"1.0", "8", "adam", "true", "1e-05", "8", "adam", "true"});
  CHECK((*rows)[1].param_values[0].Number() == 1e-5);
  std::string csv = reports::RenderTrialsCsv(names, *rows);
  CHECK_THAT(csv, Catch::Contains("trial_key,lr,mbs,opt,warm,"));
  CHECK_THAT(csv, Catch::Contains(",1.0,8,adam,true,"));
  CHECK_THAT(csv, Catch::Contains(",1e-05,8,adam,true,"));
}

}  // namespace
}  // namespace sweep::results
