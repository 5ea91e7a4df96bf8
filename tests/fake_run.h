// A RunContext on the fake Slurm for the run loop's collaborators' unit tests (submitter_test.cc,
// ingester_test.cc, ...): a study file in a temp dir, its store with the study's trials, the fake
// cluster and clock, and the events collaborators record.
#pragma once

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/trial_state.h"
#include "results/study_trials.h"
#include "run/run_context.h"
#include "run/study_files.h"
#include "slurm/slurm_client.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/fake_slurm.h"
#include "tests/test_util.h"

namespace sweep::testing {

// The transport's round trips: each ReadMany is one (as over SSH, up to 100 files), each other call one.
class RoundTrips final : public slurm::Transport {
 public:
  explicit RoundTrips(slurm::Transport& inner) : inner_(inner) {}
  Result<slurm::CommandOutput> Run(const std::string& command) override {
    ++trips;
    return inner_.Run(command);
  }
  Status WriteFile(const std::string& path, std::string_view content, int mode) override {
    ++trips;
    return inner_.WriteFile(path, content, mode);
  }
  Result<std::string> ReadFrom(const std::string& path, uint64_t offset, size_t max_bytes) override {
    ++trips;
    return inner_.ReadFrom(path, offset, max_bytes);
  }
  std::vector<Result<std::string>> ReadMany(const std::vector<slurm::ReadRequest>& requests) override {
    ++trips;
    return inner_.ReadMany(requests);
  }
  size_t ReadManyCalls(size_t) const override { return 1; }
  std::string Describe() const override { return inner_.Describe(); }
  int trips = 0;

 private:
  slurm::Transport& inner_;
};

class FakeRun {
 public:
  // `job`: [job] lines after the template; `tail`: further tables. `template_text`: job.sbatch.
  explicit FakeRun(const std::string& job = "", const std::string& tail = "[space]\nlr = [0.1, 0.2, 0.3]\n",
                   const std::string& template_text = "#!/bin/bash\necho {{lr}}\n", int max_concurrent = 8,
                   const std::string& cluster_extra = "") {
    WriteAll(dir_.file("job.sbatch"), template_text);
    std::string text = fmt::format(
        "[study]\nname = \"fr\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/fake/work\"\nmax_concurrent = "
        "{}\n{}\n\n"
        "[job]\ntemplate = \"job.sbatch\"\n{}\n\n{}",
        max_concurrent, cluster_extra, job, tail);
    WriteAll(dir_.file("study.toml"), text);
    auto study = study::ParseStudy(text, dir_.file("study.toml"));
    INFO(study.status().ToString());
    REQUIRE(study.ok());
    study_ = std::move(*study);
    auto db = store::Store::Open(dir_.file("fr.db"));
    REQUIRE(db.ok());
    db_ = std::move(*db);
    counting_ = std::make_unique<slurm::CountingTransport>(trips);
    client_ = std::make_unique<slurm::SlurmClient>(*counting_);
    ctx_ = std::make_unique<run::RunContext>(study_, *db_, *counting_, *client_, clock);
    ctx_->event = [this](std::optional<int64_t> id, const std::string& kind, const std::string& message) {
      events.push_back({id, kind, message});
    };
    auto id = db_->UpsertStudy(study_.name, study_.path, study_.hash, clock.Now());
    REQUIRE(id.ok());
    ctx_->study_id = *id;
    ctx_->files = run::FilesOf(study_.cluster.workdir, study_.name, {});
    if (study_.sampler == "tpe") return;  // its trials are proposed as the run goes
    auto specs = results::ExpandStudy(study_);
    REQUIRE(specs.ok());
    std::vector<store::TrialRecord> records;
    for (const auto& spec : *specs) {
      ctx_->specs[spec.key] = spec;
      store::TrialRecord r;
      r.trial_key = spec.key;
      r.params_json = spec.params_json;
      r.state = std::string(kTrialNew);
      records.push_back(std::move(r));
    }
    REQUIRE(db_->InsertTrialsIfAbsent(ctx_->study_id, records).ok());
  }

  struct Event {
    std::optional<int64_t> trial;
    std::string kind, message;
  };

  // A restart: the store closed and opened again (nothing it kept in memory survives), and a context on it with
  // the same study, trials and event sink. Collaborators made on the old context must be made again.
  void ReopenStore() {
    std::unique_ptr<run::RunContext> old = std::move(ctx_);
    db_.reset();
    auto db = store::Store::Open(dir_.file("fr.db"));
    REQUIRE(db.ok());
    db_ = std::move(*db);
    ctx_ = std::make_unique<run::RunContext>(study_, *db_, *counting_, *client_, clock);
    ctx_->event = old->event;
    ctx_->study_id = old->study_id;
    ctx_->files = old->files;
    ctx_->specs = old->specs;
  }

  run::RunContext& ctx() { return *ctx_; }
  store::Store& db() { return *db_; }
  const study::Study& study() const { return study_; }
  std::vector<store::TrialRecord> Trials() {
    auto t = db_->ListTrials(ctx_->study_id);
    REQUIRE(t.ok());
    return *t;
  }
  int Count(const std::string& kind) const {
    int n = 0;
    for (const auto& e : events) n += e.kind == kind;
    return n;
  }
  std::string file(const std::string& name) const { return dir_.file(name); }
  const slurm::CountingTransport& counting() const { return *counting_; }

  FakeClock clock;
  FakeSlurm slurm{clock};
  RoundTrips trips{slurm};
  std::vector<Event> events;

 private:
  TempDir dir_;
  study::Study study_;
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<slurm::CountingTransport> counting_;
  std::unique_ptr<slurm::SlurmClient> client_;
  std::unique_ptr<run::RunContext> ctx_;
};

}  // namespace sweep::testing
