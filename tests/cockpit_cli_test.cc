// The user's cockpit through the built binary (issue 16): `metrics` on recorded logs, exit codes a
// script can trust, `logs`. No cluster: the local transport where a study runs at all. Tagged [cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "orchestrator/run_lock.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";
const std::string kData = std::string(SLURMSWEEP_SOURCE_DIR) + "/tests/data/";

// Stdout and stderr, as a user sees them.
std::pair<int, std::string> Shell(const std::string& cmd) { return testing::RunShell(cmd + " 2>&1"); }

}  // namespace

// megatron_train.log: Megatron-LM's real iteration line (also in logs/metrics_parser_test.cc), the
// same line at iteration 40, a validation line, start-up banners, and one line with a broken number.
TEST_CASE("metrics shows what a Megatron log would store: names, steps, time axis, malformed lines", "[cli]") {
  auto [rc, out] = Shell(kBinary + " metrics " + kData + "megatron_train.log");
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("8 line(s) read as megatron"));
  CHECK_THAT(out, Catch::Contains("steps: 20 to 40"));
  CHECK_THAT(out, Catch::Contains("time axis: from 'elapsed time per iteration (ms)' (484.782 s"));
  CHECK_THAT(out, Catch::Contains("malformed: 1 line(s)") && Catch::Contains("line 6"));
  CHECK_THAT(out, Catch::Contains("objective 'lm_loss': present"));
  CHECK_THAT(out, Catch::Matches("(.|\n)*\nlm_loss +2 +20 +40\n(.|\n)*"));
}

TEST_CASE("metrics of a JSON-lines log, as JSON; a missing objective exits 5 with did-you-mean", "[cli]") {
  testing::TempDir dir;
  SECTION("--format jsonl --json") {
    auto [rc, out] = Shell(kBinary + " metrics --format jsonl --json " + kData + "trainer.jsonl 2>/dev/null");
    INFO(out);
    CHECK(rc == 5);  // the default objective, lm_loss, is not what this trainer logs
    CHECK_THAT(out, Catch::Contains("\"version\": 1"));
    CHECK_THAT(out, Catch::Contains("\"key\": \"iter_time_ms\""));
    CHECK_THAT(out, Catch::Contains("\"malformed_lines\": [\n    4\n  ]"));
    CHECK_THAT(out, Catch::Contains("\"name\": \"eval.loss\""));
    CHECK_THAT(out, Catch::Contains("\"present\": false"));
  }
  SECTION("the study's format and a misspelt objective") {
    std::string study =
        testing::WriteLocalStudyFile(dir, "j", "train", "[objective]\nmetric = \"los\"\n\n[space]\nlr = [0.1]\n");
    std::string text = testing::ReadAll(study);
    text.insert(text.find('\n', text.find("name =")) + 1, "metric_format = \"jsonl\"\n");
    testing::WriteAll(study, text);
    auto [rc, out] = Shell(kBinary + " metrics --study " + study + " " + kData + "trainer.jsonl");
    INFO(out);
    CHECK(rc == 5);
    CHECK_THAT(out, Catch::Contains("read as jsonl"));
    CHECK_THAT(out, Catch::Contains("objective 'los': MISSING (did you mean 'loss'?)"));
    CHECK_THAT(out, Catch::Contains("malformed: 1 line(s)") && Catch::Contains("line 4"));
  }
  SECTION("an unknown format is bad input") {
    auto [rc, out] = Shell(kBinary + " metrics --format jsnl " + kData + "trainer.jsonl");
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains("did you mean 'jsonl'"));
  }
}

namespace {

// A study run with the local transport against fake Slurm commands first on PATH, so that no real
// cluster is touched: `sbatch` says `sbatch_says` on stderr and exits 1; squeue fails (unreachable).
std::string FakeSlurmStudy(const testing::TempDir& dir, const std::string& sbatch_says) {
  std::filesystem::create_directories(dir.file("fake"));
  testing::WriteAll(dir.file("fake/sbatch"), "#!/bin/sh\necho '" + sbatch_says + "' >&2\nexit 1\n");
  testing::WriteAll(dir.file("fake/squeue"), "#!/bin/sh\necho 'squeue: error: fake' >&2\nexit 1\n");
  for (const char* f : {"fake/sbatch", "fake/squeue"}) {
    std::filesystem::permissions(dir.file(f), std::filesystem::perms::owner_all);
  }
  return testing::WriteLocalStudyFile(dir, "sig", "echo {{lr}}", "[space]\nlr = [0.1, 0.2]\n");
}

}  // namespace

TEST_CASE("SIGINT or SIGTERM during run: what goes on and how to resume or cancel, the lock released", "[cli]") {
  testing::TempDir dir;
  // A full submit quota keeps the run waiting, as a long sweep does.
  std::string study = FakeSlurmStudy(dir, "sbatch: error: QOSMaxSubmitJobPerUserLimit");
  auto [sig, code] = GENERATE(std::pair<std::string, int>{"INT", 130}, std::pair<std::string, int>{"TERM", 143});
  auto [rc, out] = Shell(fmt::format("PATH={}:$PATH {} run {} > {} 2>&1 & pid=$!; sleep 2; kill -{} $pid; wait $pid",
                                     dir.file("fake"), kBinary, study, dir.file("run.out"), sig));
  std::string run = testing::ReadAll(dir.file("run.out"));
  INFO(run);
  CHECK(rc == code);
  CHECK_THAT(run, Catch::Contains("stopped by SIG" + sig + "; this run ends and releases its lock"));
  CHECK_THAT(run, Catch::Contains("2 being submitted") && Catch::Contains("slurmsweep run " + study) &&
                      Catch::Contains("slurmsweep cancel " + study));
  CHECK_FALSE(RunLock::Holder(dir.file("sig.db.lock")));
  auto [src, status] = Shell(kBinary + " status " + study);
  INFO(status);
  CHECK(src == 0);
  CHECK_THAT(status, Catch::Contains("no run of this study is going on") && Catch::Contains("no run is tracking them"));
}

TEST_CASE("run ends with exit 5 when every trial ended and none completed", "[cli]") {
  testing::TempDir dir;
  std::string study = FakeSlurmStudy(dir, "sbatch: error: Batch job submission failed: something broke");
  auto [rc, out] = Shell(fmt::format("PATH={}:$PATH {} run {}", dir.file("fake"), kBinary, study));
  INFO(out);
  CHECK(rc == 5);
  CHECK_THAT(out, Catch::Contains("every trial has ended, but no trial completed (2 failed)"));
}
