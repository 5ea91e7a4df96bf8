// A reason that never clears, on the real lab (slurm/pending_reason.h): a partition whose MaxTime
// is below the study's [job] time_limit. Slurm's default EnforcePartLimits=NO accepts the job and
// leaves it pending (PartitionTimeLimit) forever; `run` stops at first sight with the reason and
// the way on, and its job stays queued. Tag [cluster].
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <string>

#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;

TEST_CASE("a partition MaxTime below the study's time_limit: run stops at first sight, naming PartitionTimeLimit",
          "[cluster]") {
  testing::TempDir dir;
  std::string conf = testing::ClusterVar("SLURM_CONF");
  // A partition of the lab's nodes that allows one minute.
  std::string partition = fmt::format("short{}", ::getpid());
  REQUIRE(testing::RunShell(fmt::format("SLURM_CONF={} scontrol create PartitionName={} Nodes=ALL MaxTime=1 State=UP",
                                        conf, partition))
              .first == 0);
  struct DropPartition {
    std::string conf, name;
    ~DropPartition() { testing::RunShell(fmt::format("SLURM_CONF={} scontrol delete PartitionName={}", conf, name)); }
  } drop{conf, partition};
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho 'iteration 1 | lm loss: 1.0'\n");
  testing::WriteAll(dir.file("study.toml"), fmt::format(R"([study]
name = "shortpart"

[cluster]
transport = "ssh"
{}partition = "{}"
workdir = "{}"
max_concurrent = 1
queue_ahead = 0
arrays = false
poll_interval_s = 0.5

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "100M"
time_limit = "00:05:00"

[space]
lr = [0.1, 0.2]
)",
                                                        testing::LabSshLogin(), partition, dir.file("work")));
  testing::Harness h(dir.file("study.toml"));
  Status st = h.runner->Run(120);
  INFO(h.log.str());
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(st.message(), Catch::Contains("pending (PartitionTimeLimit)") && Catch::Contains("[job] time_limit") &&
                               Catch::Contains("the jobs stay queued"));
  int queued = 0, fresh = 0;
  for (const auto& t : h.Trials()) {
    if (t.state == "pending") ++queued;
    if (t.state == "new") ++fresh;
  }
  CHECK(queued == 1);  // nothing lost, nothing more submitted
  CHECK(fresh == 1);
  CHECK(h.runner->slurm_stats().sbatch == 1);
  testing::RunShell(fmt::format("SLURM_CONF={} scancel -p {}", conf, partition));
}
