// The telemetry sampler run for real by this machine's shells (dash and bash), against its /proc:
// it samples while the script runs, ends after it, never changes the script's exit status or holds
// its output, and survives a script that execs its trainer.
#include <catch2/catch.hpp>
#include <set>

#include "base/telemetry.h"
#include "logs/telemetry_parser.h"
#include "slurm/sbatch_script.h"
#include "tests/test_util.h"

namespace sweep::slurm {
namespace {

using sweep::testing::ReadAll;
using sweep::testing::RunShell;
using sweep::testing::TempDir;
using sweep::testing::WriteAll;

// Runs `script` with `shell` and returns its exit status once the script AND everything it
// started have ended: they all inherit fd 3, the pipe RunShell reads, which closes with the last of
// them. A sampler that outlived its script would keep this waiting (the test's timeout).
int RunToTheEnd(const TempDir& dir, const std::string& env, const std::string& shell, const std::string& script,
                std::string* out) {
  WriteAll(dir.file("job.sh"), script);
  auto [rc, ignored] = RunShell(env + " " + shell + " " + ShellQuote(dir.file("job.sh")) + " 3>&1 >" +
                                ShellQuote(dir.file("job.out")) + " 2>&1; echo $? >" + ShellQuote(dir.file("rc")));
  REQUIRE(rc == 0);
  *out = ReadAll(dir.file("job.out"));
  return std::stoi(ReadAll(dir.file("rc")));
}

TEST_CASE("telemetry sampler: samples /proc beside the script and ends with it, in dash and bash") {
  // dash with a template that execs its trainer (the script's pid goes on as the trainer), bash
  // with one that does not.
  // dash as a job run again by Slurm, bash as a task of an array: the header names the run as
  // the store keeps its job id, so a requeued job's old file is never read as the new run's.
  struct Case {
    const char* shell;
    bool exec_trainer;
    const char* slurm_env;
    const char* job_id;
    int restart;
  };
  for (auto [shell, exec_trainer, slurm_env, job_id, restart] :
       {Case{"/bin/dash", true, "SLURM_JOB_ID=77 SLURM_RESTART_COUNT=2", "77", 2},
        Case{"/bin/bash", false, "SLURM_JOB_ID=80 SLURM_ARRAY_JOB_ID=78 SLURM_ARRAY_TASK_ID=2", "78_2", 0}}) {
    {
      CAPTURE(shell, exec_trainer);
      TempDir dir;
      // A quote and a space in the path: the file name is shell-quoted.
      std::filesystem::create_directories(dir.path() / "it's logs");
      std::string file = dir.file("it's logs/t.1.out.telemetry");
      std::string body = std::string("#!") + shell + "\n#SBATCH --time=1\nset -eu\necho trainer\n" +
                         (exec_trainer ? "exec sh -c 'sleep 2; exit 3'\n" : "sleep 2\nexit 3\n");
      std::string script = WithTelemetrySampler(body, file, 1);
      // sbatch still reads every directive: the sampler starts after them.
      CHECK(SbatchDirectives(script) == std::vector<std::string>{"#SBATCH --time=1"});
      // PATH without nvidia-smi (this machine has none): the /proc path.
      std::string out;
      CHECK(RunToTheEnd(dir, std::string("PATH=/usr/bin:/bin ") + slurm_env, shell, script, &out) == 3);
      CHECK(out == "trainer\n");
      std::string text = ReadAll(file);
      CHECK(text.rfind("slurmsweep-telemetry 1 host=", 0) == 0);
      auto header = logs::ParseTelemetryHeader(text);
      REQUIRE(header);
      CHECK(header->job_id == job_id);
      CHECK(header->restart == restart);
      logs::TelemetryOutput o = logs::ParseTelemetry(text);
      CHECK(o.malformed == 0);
      CHECK(o.consumed == text.size());
      std::set<std::string> names;
      std::set<int64_t> times;
      for (const auto& p : o.points) {
        names.insert(p.name);
        times.insert(p.step);
        CHECK(IsTelemetryMetric(p.name));
        if (p.name == "system/node/cpu_pct") CHECK((p.value >= 0 && p.value <= 100));
        if (p.name == "system/node/mem_used_gib") CHECK(p.value > 0);
      }
      // About one sample a second over 2 s; CPU from the second sample on.
      CHECK(times.size() >= 2);
      CHECK(names ==
            std::set<std::string>{"system/node/cpu_pct", "system/node/mem_total_gib", "system/node/mem_used_gib"});
    }
  }
}

TEST_CASE("telemetry sampler: with nvidia-smi on the PATH, its query loop over the job's GPUs is stored per line") {
  // No GPU here: a stand-in nvidia-smi records its arguments and prints lines in the query's
  // column order (the parser itself is tested on recorded real output, logs/telemetry_parser_test).
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "bin");
  WriteAll(dir.file("bin/nvidia-smi"), "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + ShellQuote(dir.file("args")) +
                                           "\nwhile :; do\n"
                                           "  echo '2026/12/03 18:00:00.123, 2, 87, 30000, 81559, 350.12'\n"
                                           "  echo '2026/12/03 18:00:00.124, 3, 85, 29000, 81559, [N/A]'\n"
                                           "  sleep 1\ndone\n");
  std::filesystem::permissions(dir.file("bin/nvidia-smi"), std::filesystem::perms::owner_all);
  std::string file = dir.file("t.1.out.telemetry");
  std::string out;
  CHECK(RunToTheEnd(dir, "CUDA_VISIBLE_DEVICES=2,3 PATH=" + ShellQuote(dir.file("bin")) + ":/usr/bin:/bin", "/bin/bash",
                    WithTelemetrySampler("#!/bin/bash\nsleep 2\n", file, 1), &out) == 0);
  std::string args = ReadAll(dir.file("args"));
  CHECK(args == "--query-gpu=" + std::string(kGpuQuery) + "\n--format=csv,noheader,nounits\n-l\n1\n--id=2,3\n");
  logs::TelemetryOutput o = logs::ParseTelemetry(ReadAll(file));
  CHECK(o.malformed == 0);
  std::set<std::string> names;
  for (const auto& p : o.points) names.insert(p.name);
  for (const char* n : {"system/gpu2/util_pct", "system/gpu2/mem_used_gib", "system/gpu2/mem_total_gib",
                        "system/gpu2/power_w", "system/gpu3/util_pct", "system/node/mem_used_gib"}) {
    CHECK(names.count(n) == 1);
  }
  CHECK(names.count("system/gpu3/power_w") == 0);
}

TEST_CASE("telemetry sampler: only POSIX shell templates take it") {
  CHECK(CheckTelemetryShell("#!/bin/bash\nrun\n", "t.sbatch", "s.toml:3: job.monitor").ok());
  CHECK(CheckTelemetryShell("#!/usr/bin/env bash\nrun\n", "t.sbatch", "s.toml:3: job.monitor").ok());
  CHECK(CheckTelemetryShell("#!/bin/sh -l\nrun\n", "t.sbatch", "s.toml:3: job.monitor").ok());
  CHECK(CheckTelemetryShell("#SBATCH -N1\nrun\n", "t.sbatch", "s.toml:3: job.monitor").ok());  // header adds bash
  Status s = CheckTelemetryShell("#!/usr/bin/env python3\nimport os\n", "t.sbatch", "s.toml:3: job.monitor");
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("s.toml:3: job.monitor") != std::string::npos);
  CHECK(s.message().find("t.sbatch:1") != std::string::npos);
  CHECK(s.message().find("'python3'") != std::string::npos);
}

}  // namespace
}  // namespace sweep::slurm
