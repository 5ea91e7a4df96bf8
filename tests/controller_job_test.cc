// `run --as-job` on the production-profile lab (accounting on, so sacct sees every job that ever ran): the
// controller runs as a Slurm job with a 2-minute limit, hands over to its successor on Slurm's early
// signal, and the sweep crosses several controller jobs with every trial run once. Tagged [fault]: CTest
// runs it on that lab.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <unistd.h>

#include <map>
#include <set>
#include <sstream>
#include <string>

#include "run/controller_job.h"
#include "store/store.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::ClusterVar;

TEST_CASE("run --as-job: the controller crosses Slurm jobs of 2 minutes and every trial runs once (sacct)",
          "[cluster][fault][controller]") {
  setenv("SLURM_CONF", ClusterVar("SLURM_CONF").c_str(), 1);
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), R"(#!/bin/bash
set -euo pipefail
exec {{workdir}}/mlp_train --micro-batch-size 4 --lr {{lr}} --optimizer sgd --hidden 16 --train-iters 60 \
  --log-interval 5 --sleep-ms 700
)");
  // transport = "ssh" to a host that does not exist: inside the job the controller must use the local one.
  testing::WriteAll(dir.file("study.toml"),
                    fmt::format(R"([study]
name = "ctljob"

[cluster]
transport = "ssh"
host = "login.invalid"
partition = "{}"
workdir = "{}"
max_concurrent = 2
poll_interval_s = 1

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "200M"
time_limit = "00:05:00"
stage = ["{}/bin/mlp_train"]

[space]
lr = [0.01, 0.02, 0.03, 0.04]
)",
                                ClusterVar("SLURMSWEEP_PARTITION"), dir.file("work"), SLURMSWEEP_BINARY_DIR));
  std::string bin = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";
  auto [code, out] =
      testing::RunShell(bin + " run --as-job --job-time 2 --job-signal 60 " + dir.file("study.toml") + " 2>&1");
  INFO(out);
  REQUIRE(code == 0);
  CHECK_THAT(out, Catch::StartsWith("controller: Slurm job "));
  // Accounting keeps earlier runs of this test too: only jobs from this run's first controller on count.
  const long first = std::stol(out.substr(std::string("controller: Slurm job ").size()));
  auto ours = [&](const std::string& line) { return std::stol(line.substr(0, line.find_first_of("_|"))) >= first; };

  // The sweep (4 trials of ~45 s, 2 at a time) outlasts the first controller's 60 s before its signal.
  bool done = testing::WaitForStudy(dir.file("ctljob.db"), "ctljob", 600, [](const auto& trials, const auto&) {
    if (trials.size() != 4) return false;
    for (const auto& t : trials)
      if (t.state != "completed") return false;
    return true;
  });
  std::string logs = testing::Capture("cat " + dir.file("ctljob.db") + ".controller-*.log");
  INFO(logs);
  REQUIRE(done);

  // sacct: the controller jobs, and each trial's job (array task) exactly once.
  std::string ctl = testing::Capture("sacct -n -X -P -o JobID,State --name=slurmsweep-ctl-ctljob -S now-1hour");
  INFO(ctl);
  std::set<std::string> controllers;
  std::istringstream cin(ctl);
  for (std::string line; std::getline(cin, line);)
    if (!line.empty() && ours(line)) controllers.insert(line.substr(0, line.find('|')));
  CHECK(controllers.size() >= 2);
  CHECK_THAT(logs, Catch::Contains("hands over to job"));

  auto db = store::Store::OpenReadOnly(dir.file("ctljob.db"));
  REQUIRE(db.ok());
  auto study = (*db)->GetStudy("ctljob");
  REQUIRE(study.ok());
  auto trials = (*db)->ListTrials(study->id);
  REQUIRE(trials.ok());
  std::string tasks = testing::Capture("sacct -n -X -P -o JobID,JobName,State -S now-1hour");
  INFO(tasks);
  for (const auto& t : *trials) {
    CHECK(t.state == "completed");
    // The task of the trial's job appears once in accounting, and no other job ran the trial.
    size_t seen = 0;
    std::istringstream in(tasks);
    for (std::string line; std::getline(in, line);)
      if (line.rfind(t.job_id + "|", 0) == 0) ++seen;
    CHECK(seen == 1);
  }
  std::set<std::string> arrays;
  std::istringstream in(tasks);
  for (std::string line; std::getline(in, line);) {
    auto cells = line.substr(line.find('|') + 1);
    if (cells.rfind("ss-ctljob", 0) == 0 && ours(line)) arrays.insert(line.substr(0, line.find('_')));
  }
  CHECK(arrays.size() == 1);  // submitted once, by one controller: no trial was submitted twice

  auto [scode, sout] = testing::RunShell(bin + " status " + dir.file("study.toml") + " 2>&1");
  INFO(sout);
  CHECK_THAT(sout, Catch::Contains("controller: Slurm job "));
}
