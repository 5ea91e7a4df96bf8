// The telemetry sampler run for real by this machine's shells (dash and bash), against its /proc:
// it samples while the script runs, ends after it, never changes the script's exit status or holds
// its output, and survives a script that execs its trainer.
#include "slurm/telemetry_script.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <thread>

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

// The file's size once it has stopped growing for three sampling intervals (bounded wait: the
// sampler checks for the script once per interval).
size_t SettledSize(const std::string& path) {
  size_t size = ReadAll(path).size();
  int still = 0;
  for (int i = 0; i < 120 && still < 6; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    size_t now = ReadAll(path).size();
    still = now == size ? still + 1 : 0;
    size = now;
  }
  return size;
}

TEST_CASE("telemetry sampler: samples /proc beside the script and ends with it, in dash and bash") {
  for (const char* shell : {"/bin/dash", "/bin/bash"}) {
    for (bool exec_trainer : {false, true}) {
      CAPTURE(shell, exec_trainer);
      TempDir dir;
      // A quote and a space in the path: the file name is shell-quoted.
      std::filesystem::create_directories(dir.path() / "it's logs");
      std::string file = dir.file("it's logs/t.1.out.telemetry");
      std::string body = std::string("#!") + shell + "\n#SBATCH --time=1\nset -eu\necho trainer\n" +
                         (exec_trainer ? "exec sh -c 'sleep 3; exit 3'\n" : "sleep 3\nexit 3\n");
      std::string script = WithTelemetrySampler(body, file, 1);
      // sbatch still reads every directive: the sampler starts after them.
      CHECK(SbatchDirectives(script) == std::vector<std::string>{"#SBATCH --time=1"});
      WriteAll(dir.file("job.sh"), script);
      // PATH without nvidia-smi (this machine has none): the /proc path.
      auto [rc, out] = RunShell("PATH=/usr/bin:/bin " + std::string(shell) + " " + ShellQuote(dir.file("job.sh")));
      CHECK(rc == 3);
      CHECK(out == "trainer\n");
      size_t size = SettledSize(file);
      std::string text = ReadAll(file);
      REQUIRE(text.size() == size);
      CHECK(text.rfind("slurmsweep-telemetry 1 host=", 0) == 0);
      TelemetryOutput o = ParseTelemetry(text);
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
      // About one sample a second over 3 s; CPU from the second sample on.
      CHECK(times.size() >= 2);
      CHECK(names ==
            std::set<std::string>{"system/node/cpu_pct", "system/node/mem_total_gib", "system/node/mem_used_gib"});
    }
  }
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
