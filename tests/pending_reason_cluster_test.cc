// Reasons that never clear, on the real lab (slurm/pending_reason.h): a partition whose MaxTime
// is below the study's [job] time_limit. Slurm's default EnforcePartLimits=NO accepts the job and
// leaves it pending (PartitionTimeLimit) forever; `run` stops at first sight with the reason and
// the way on, and its job stays queued. Tag [cluster].
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <string>

#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

// A two-trial study over the lab's SSH login that submits one plain job at a time (dir's job.sbatch).
void WriteOneAtATimeStudy(const testing::TempDir& dir, const std::string& name, const std::string& cluster_extra,
                          const std::string& job_extra) {
  testing::WriteAll(dir.file("study.toml"),
                    fmt::format(R"([study]
name = "{}"

[cluster]
transport = "ssh"
{}{}workdir = "{}"
max_concurrent = 1
queue_ahead = 0
arrays = false
poll_interval_s = 0.5

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "100M"
{}
[space]
lr = [0.1, 0.2]
)",
                                name, testing::LabSshLogin(), cluster_extra, dir.file("work"), job_extra));
}

}  // namespace

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
  WriteOneAtATimeStudy(dir, "shortpart", fmt::format("partition = \"{}\"\n", partition), "time_limit = \"00:05:00\"\n");
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

// A job that names a node with --nodelist: while the node is drained it waits (ReqNodeNotAvail, a
// node that comes back), and the run goes on; once the cluster no longer has the node (State=FUTURE:
// `scontrol show node` does not find it, as for a node removed from slurm.conf) the run stops at
// first sight, naming the node, and the job stays queued.
TEST_CASE("a job that asks for a node the cluster does not have: run stops naming it; a drained node is waited for",
          "[cluster]") {
  testing::TempDir dir;
  std::string conf = testing::ClusterVar("SLURM_CONF");
  auto scontrol = [&](const std::string& args) {
    return testing::RunShell(fmt::format("SLURM_CONF={} scontrol {}", conf, args)).first;
  };
  REQUIRE(scontrol("update NodeName=n2 State=DRAIN Reason=slurmsweep-test") == 0);
  struct Resume {
    std::function<int(const std::string&)> scontrol;
    ~Resume() { scontrol("update NodeName=n2 State=RESUME"); }
  } resume{scontrol};
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\n#SBATCH --nodelist=n2\necho 'iteration 1 | lm loss: 1.0'\n");
  WriteOneAtATimeStudy(dir, fmt::format("gonenode{}", ::getpid()), "", "");
  testing::Harness h(dir.file("study.toml"));
  // Drained: the reason clears when the node comes back, so the run waits.
  REQUIRE(h.runner->Run(6).ok());
  INFO(h.log.str());
  auto trials = h.Trials();
  REQUIRE(std::count_if(trials.begin(), trials.end(), [](const auto& t) { return t.state == "pending"; }) == 1);
  CHECK_THAT(h.log.str(), !Catch::Contains("never clears"));
  // Gone: `scontrol show node n2` now says "Node n2 not found".
  REQUIRE(scontrol("update NodeName=n2 State=FUTURE") == 0);
  Status st = h.runner->Run(400);  // looked up again within 30 s
  INFO(h.log.str());
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(st.message(), Catch::Contains("ReqNodeNotAvail") &&
                               Catch::Contains("asks for node(s) n2 that the cluster does not have") &&
                               Catch::Contains("the jobs stay queued"));
  int queued = 0, fresh = 0;
  for (const auto& t : h.Trials()) {
    if (t.state == "pending") ++queued;
    if (t.state == "new") ++fresh;
  }
  CHECK(queued == 1);
  CHECK(fresh == 1);
  CHECK(h.runner->slurm_stats().sbatch == 1);
  for (const auto& t : h.Trials()) {
    if (!t.job_id.empty()) testing::RunShell(fmt::format("SLURM_CONF={} scancel {}", conf, t.job_id));
  }
}
