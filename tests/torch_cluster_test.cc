// PyTorch for real on the test cluster: templates/torchrun.sbatch launches the example GPT trainer
// (examples/workload/torch_gpt.py) with srun + torchrun (c10d rendezvous, gloo) on two nodes, and
// chains it across a time limit. Tagged [cluster] (CTest starts the cluster); needs python3-torch.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <string>

#include "store/store.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::Harness;

namespace {

// A study over SSH running the shipped torchrun template (its signal warning adjusted when given).
// warn_s > 0: Slurm's warning that many seconds before the limit, and each step lasts at least
// 100 ms more, so that the first job is still training when the warning comes on any machine.
std::string WriteTorchStudy(const testing::TempDir& dir, const std::string& name, const std::string& space,
                            const std::string& vars, const std::string& job_extra, int warn_s = 0) {
  std::string tmpl = testing::ReadAll(std::string(SLURMSWEEP_SOURCE_DIR) + "/templates/torchrun.sbatch");
  if (warn_s > 0) {
    size_t at = tmpl.find("USR1@120");
    REQUIRE(at != std::string::npos);
    tmpl.replace(at, 8, fmt::format("USR1@{}", warn_s));
    const std::string stop = "--stop-file \"$STOP_FILE\"";
    at = tmpl.find(stop);
    REQUIRE(at != std::string::npos);
    tmpl.insert(at + stop.size(), " --sleep-ms 100");
  }
  testing::WriteAll(dir.file("torchrun.sbatch"), tmpl);
  std::string text = fmt::format(
      R"([study]
name = "{name}"
metric_format = "auto"

[cluster]
transport = "ssh"
host = "{host}"
port = {port}
user = "{user}"
identity_file = "{key}"
known_hosts = "{known}"
partition = "{partition}"
workdir = "{work}"
max_concurrent = 2
poll_interval_s = 0.5

[job]
template = "torchrun.sbatch"
nodes = 2
cpus_per_task = 2
mem = "1G"
stage = ["{src}/examples/workload/torch_gpt.py"]
{job_extra}

[job.vars]
global_batch_size = 16
lr = 0.003
log_interval = 5
seed = 1234
{vars}

{space}
)",
      fmt::arg("name", name), fmt::arg("host", testing::ClusterVar("SLURMSWEEP_SSH_HOST")),
      fmt::arg("port", testing::ClusterVar("SLURMSWEEP_SSH_PORT")),
      fmt::arg("user", testing::ClusterVar("SLURMSWEEP_SSH_USER")),
      fmt::arg("key", testing::ClusterVar("SLURMSWEEP_SSH_KEY")),
      fmt::arg("known", testing::ClusterVar("SLURMSWEEP_SSH_KNOWN_HOSTS")),
      fmt::arg("partition", testing::ClusterVar("SLURMSWEEP_PARTITION")), fmt::arg("work", dir.file("work")),
      fmt::arg("src", SLURMSWEEP_SOURCE_DIR), fmt::arg("job_extra", job_extra), fmt::arg("vars", vars),
      fmt::arg("space", space));
  testing::WriteAll(dir.file("study.toml"), text);
  return dir.file("study.toml");
}

}  // namespace

TEST_CASE("a PyTorch job trains data-parallel on two nodes with srun + torchrun", "[cluster][torch]") {
  testing::TempDir dir;
  std::string path =
      WriteTorchStudy(dir, "torch2n",
                      "[space]\nmbs = [4]\nprocs_per_node = [1]\nprecision = [\"bf16\"]\nrecompute = [\"full\"]\n"
                      "optimizer = [\"adam\"]\n",
                      "train_iters = 20\n", "time_limit = \"00:05:00\"");
  Harness h(path);
  REQUIRE(h.runner->Run(400).ok());
  auto trials = h.Trials();
  REQUIRE(trials.size() == 1);
  const auto& t = trials[0];
  std::string log = testing::ReadAll(t.log_path);
  INFO(t.state << " " << t.reason << "\n" << log << "\n" << h.log.str());
  CHECK(t.state == "completed");
  // Both nodes' torchrun met at the rendezvous: the world has two ranks, one per node, and the
  // global batch of 16 is 4 per rank x 2 accumulation steps.
  CHECK_THAT(log, Catch::Contains("data-parallel 2, micro-batch 4 x 2 accumulation steps = global batch 16, bf16, "
                                  "recompute full, adam"));
  auto last = h.store->LastMetric(t.id, "lm_loss");
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->step == 20);
  CHECK((*last)->time_s > 0);  // the time axis from iter_time_ms
  auto first = h.store->MetricSeries(t.id, "lm_loss");
  REQUIRE(first.ok());
  REQUIRE(first->size() == 4);
  CHECK((*first).back().value < (*first).front().value);  // it learns
}

TEST_CASE("the torchrun template chains across a time limit: USR1, checkpoint, resume", "[cluster][torch]") {
  testing::TempDir dir;
  // A 1-minute limit with the warning 45 s before it (it comes 15 to 45 s into a job); the run
  // needs at least 40 s of training, more than one job gets. On a loaded machine a job trains
  // fewer steps: max_chain leaves room for that (the test asks for two jobs or more, not for a
  // number; it took 6+ at a load of 13 on 2 cores).
  std::string path = WriteTorchStudy(dir, "torchchain",
                                     "[space]\nmbs = [8]\nprocs_per_node = [1]\nprecision = [\"fp32\"]\nrecompute = "
                                     "[\"none\"]\noptimizer = [\"adam\"]\n",
                                     "train_iters = 400\n", "time_limit = \"00:01:00\"\nmax_chain = 16", 45);
  Harness h(path);
  REQUIRE(h.runner->Run(900).ok());
  auto trials = h.Trials();
  REQUIRE(trials.size() == 1);
  const auto& t = trials[0];
  INFO(t.state << " " << t.reason << "\n" << h.log.str());
  CHECK(t.state == "completed");
  CHECK(t.attempt >= 2);
  std::string first_job =
      testing::ReadAll(fmt::format("{}/{}.1.out", t.log_path.substr(0, t.log_path.rfind('/')), t.trial_key));
  CHECK_THAT(first_job, Catch::Contains("saved checkpoint"));
  std::string last_job = testing::ReadAll(t.log_path);
  CHECK_THAT(last_job, Catch::Contains("resumed from checkpoint"));
  auto loss = h.store->MetricSeries(t.id, "lm_loss");
  REQUIRE(loss.ok());
  REQUIRE_FALSE(loss->empty());
  CHECK(loss->back().step == 400);
  for (size_t i = 1; i < loss->size(); ++i) {
    CHECK((*loss)[i].step > (*loss)[i - 1].step);
    CHECK((*loss)[i].time_s >= (*loss)[i - 1].time_s);  // one time axis across the jobs
  }
}
