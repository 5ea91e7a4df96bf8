// Shared by the tests that run against the real test cluster: its settings, a local shell,
// and a harness that drives the real run loop on a study file.
#pragma once

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "results/phase_seeds.h"
#include "run/connect.h"
#include "run/runner.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/test_util.h"

namespace sweep::testing {

// A setting of the running test cluster (its env file); fails the test if there is none.
inline std::string ClusterVar(const std::string& key) {
  auto env = ClusterEnv();
  auto it = env.find(key);
  if (it == env.end()) FAIL("test cluster not running (no " << key << " in its env file); run tests/cluster/start.sh");
  return it->second;
}

// The [cluster] lines that log in to the test cluster's sshd (host, port, user, key, known_hosts),
// one per line, for a study file's [cluster] table after `transport = "ssh"`.
inline std::string LabSshLogin() {
  return fmt::format("host = \"{}\"\nport = {}\nuser = \"{}\"\nidentity_file = \"{}\"\nknown_hosts = \"{}\"\n",
                     ClusterVar("SLURMSWEEP_SSH_HOST"), ClusterVar("SLURMSWEEP_SSH_PORT"),
                     ClusterVar("SLURMSWEEP_SSH_USER"), ClusterVar("SLURMSWEEP_SSH_KEY"),
                     ClusterVar("SLURMSWEEP_SSH_KNOWN_HOSTS"));
}

// Runs a shell command locally: its exit status and stdout.
inline std::string Capture(const std::string& cmd) { return RunShell(cmd).second; }

// Everything a test needs to drive the real run loop in-process.
struct Harness {
  study::Study study;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<slurm::Transport> transport;
  SystemClock clock;
  std::ostringstream log;
  std::unique_ptr<run::Runner> runner;

  explicit Harness(const std::string& study_path) {
    auto s = study::LoadStudy(study_path);
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    study = std::move(*s);
    // As the application does after loading (App::LoadStudyFile): phase 2's seeds are read once.
    REQUIRE(results::ResolveSeeds(study).ok());
    auto st = store::Store::Open(study.database);
    REQUIRE(st.ok());
    store = std::move(*st);
    auto t = run::OpenTransport(study.cluster, "", study.dir);
    INFO(t.status().ToString());
    REQUIRE(t.ok());
    transport = std::move(*t);
    runner = std::make_unique<run::Runner>(study, *store, *transport, clock, log);
  }

  std::vector<store::TrialRecord> Trials() {
    auto t = store->ListTrials(runner->study_id());
    REQUIRE(t.ok());
    return *t;
  }
  // Ticks (0.5 s apart) until `pred(trials)` holds; false after `max_ticks`.
  template <class Pred>
  bool TickUntil(int max_ticks, Pred pred) {
    for (int i = 0; i < max_ticks; ++i) {
      auto r = runner->Tick();
      REQUIRE(r.ok());
      if (pred(Trials())) return true;
      clock.SleepFor(0.5);
    }
    return false;
  }
  store::TrialRecord Trial(const std::string& param_fragment) {
    for (const auto& t : Trials())
      if (t.params_json.find(param_fragment) != std::string::npos) return t;
    FAIL("no trial with " << param_fragment);
    return {};
  }
};

// Polls a study's database through a read-only connection of its own, so a test can watch a
// run loop working in another thread (which owns the writer and its log stream) without a race.
// `pred(trials, events)`; true once it holds, false after `timeout_s`.
template <class Pred>
bool WaitForStudy(const std::string& database, const std::string& study_name, double timeout_s, Pred pred) {
  for (double waited = 0; waited < timeout_s; waited += 0.25) {
    auto db = store::Store::OpenReadOnly(database);
    if (db.ok()) {
      auto study = (*db)->GetStudy(study_name);
      if (study.ok()) {
        auto trials = (*db)->ListTrials(study->id);
        auto events = (*db)->Events(study->id);
        if (trials.ok() && events.ok() && pred(*trials, *events)) return true;
      }
    }
    ::usleep(250000);
  }
  return false;
}

// How many points of metric `name` the store holds for a trial.
inline size_t CountPoints(store::Store& db, int64_t trial_id, const std::string& name) {
  auto rows = db.MetricSeries(trial_id, name);
  REQUIRE(rows.ok());
  return rows->size();
}

inline bool AnyTrialIn(const std::vector<store::TrialRecord>& trials, const std::string& state) {
  for (const auto& t : trials)
    if (t.state == state) return true;
  return false;
}

}  // namespace sweep::testing
