// A study on the fake Slurm for run-loop tests: its file and store in a temp dir, and a Runner
// whose cluster is a FakeSlurm and whose clock is fake (runner_test.cc, tpe_runner_test.cc).
#pragma once

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "run/runner.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/fake_slurm.h"
#include "tests/test_util.h"

namespace sweep::testing {

// A study in a temp dir, its store, and a Runner whose cluster is a FakeSlurm and whose clock is fake.
// `tables` goes after [job]'s template line: further [job] keys, then any tables.
class FakeSweep {
 public:
  FakeSweep(const std::string& tables, int max_concurrent, const std::string& cluster_extra = "",
            const std::string& command = "echo {{lr}}", const std::string& name = "fk") {
    testing::WriteAll(dir_.file("job.sbatch"), "#!/bin/bash\n" + command + "\n");
    std::string text = fmt::format(
        "[study]\nname = \"{}\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/fake/work\"\nmax_concurrent = "
        "{}\n{}\n\n"
        "[job]\ntemplate = \"job.sbatch\"\n{}\n",
        name, max_concurrent, cluster_extra, tables);
    // On disk too, so that another study can name it (a tpe warm start's seed_from).
    testing::WriteAll(dir_.file("study.toml"), text);
    auto study = study::ParseStudy(text, dir_.file("study.toml"));
    INFO(study.status().ToString());
    REQUIRE(study.ok());
    study_ = std::move(*study);
    auto db = store::Store::Open(dir_.file(name + ".db"));
    REQUIRE(db.ok());
    db_ = std::move(*db);
    Restart();
  }

  // A new orchestrator process on the same database and cluster.
  void Restart() { runner_ = std::make_unique<run::Runner>(study_, *db_, slurm, clock, log_); }
  // The user edits the study file (`from` replaced by `to`) and runs it again: a new orchestrator.
  void EditStudy(const std::string& from, const std::string& to) {
    std::string text = testing::ReadAll(dir_.file("study.toml"));
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
    testing::WriteAll(dir_.file("study.toml"), text);
    auto study = study::ParseStudy(text, dir_.file("study.toml"));
    INFO(study.status().ToString());
    REQUIRE(study.ok());
    runner_.reset();  // it refers to study_
    study_ = std::move(*study);
    Restart();
  }

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
  // The trial whose parameters contain `param` ("\"lr\":0.2").
  store::TrialRecord Trial(const std::string& param) {
    for (auto& t : Trials()) {
      if (t.params_json.find(param) != std::string::npos) return t;
    }
    FAIL("no trial with " << param);
    return {};
  }
  std::vector<double> Loss(const store::TrialRecord& t) {
    auto rows = db_->MetricSeries(t.id, "lm_loss");
    REQUIRE(rows.ok());
    std::vector<double> out;
    for (const auto& r : *rows) out.push_back(r.value);
    return out;
  }
  int Events(const std::string& kind, std::optional<int64_t> trial = std::nullopt) {
    auto ev = db_->Events(runner_->study_id());
    REQUIRE(ev.ok());
    return static_cast<int>(std::count_if(ev->begin(), ev->end(), [&](const store::EventRecord& e) {
      return e.kind == kind && (!trial || e.trial_id == trial);
    }));
  }
  std::string log() const { return log_.str(); }
  std::string file(const std::string& name) const { return dir_.file(name); }
  const study::Study& study() const { return study_; }
  run::Runner& runner() { return *runner_; }
  store::Store& db() { return *db_; }

  FakeClock clock;
  FakeSlurm slurm{clock};

 private:
  testing::TempDir dir_;
  study::Study study_;
  std::unique_ptr<store::Store> db_;
  std::ostringstream log_;
  std::unique_ptr<run::Runner> runner_;
};

}  // namespace sweep::testing
