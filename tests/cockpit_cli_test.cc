// The user's cockpit through the built binary (issue 16): `metrics` on recorded logs, exit codes a
// script can trust, `logs`. No cluster: the local transport where a study runs at all. Tagged [cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
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

// Real framework logs (tests/data/frameworks/SOURCE.md): what a user checks before a sweep.
TEST_CASE("metrics reads the frameworks' logs; auto names what it chose; the study's regexes add metrics",
          "[cli][frameworks]") {
  testing::TempDir dir;
  const std::string fw = kData + "frameworks/";
  SECTION("--format hf: the Trainer's dicts at the bar's step, with its elapsed time") {
    auto [rc, out] = Shell(kBinary + " metrics --format hf " + fw + "hf_trainer_translation.log 2>/dev/null");
    INFO(out);
    CHECK(rc == 5);  // lm_loss is not what the Trainer logs: its loss is 'loss'
    CHECK_THAT(out, Catch::Contains("read as hf"));
    CHECK_THAT(out, Catch::Contains("steps: 500 to 1000"));
    CHECK_THAT(out, Catch::Contains("time axis: from 'progress bar elapsed' (180 s"));
    CHECK_THAT(out, Catch::Contains("objective 'lm_loss': MISSING (did you mean 'loss'?)"));
  }
  SECTION("--format auto on torchtitan, NeMo and DeepSpeed logs") {
    for (auto [file, detected] : {std::pair{"torchtitan.log", "torchtitan"}, std::pair{"nemo2.log", "lightning"},
                                  std::pair{"deepspeed.log", "deepspeed"}}) {
      auto [rc, out] = Shell(kBinary + " metrics --format auto " + fw + file + " 2>/dev/null");
      INFO(out);
      CHECK_THAT(out, Catch::Contains(fmt::format("read as auto ({})", detected)));
      CHECK_THAT(out, !Catch::Contains("time axis: none"));
    }
    auto [rc, out] = Shell(kBinary + " metrics --format auto " + kData + "megatron_train.log");
    CHECK(rc == 0);
    CHECK_THAT(out, Catch::Contains("read as auto (megatron)"));
  }
  SECTION("a study's metric_regex adds DeepSpeed's missing loss; bad expressions name file, line and key") {
    std::string study = testing::WriteLocalStudyFile(dir, "ds", "train", "[space]\nlr = [0.1]\n");
    std::string text = testing::ReadAll(study);
    size_t after_name = text.find('\n', text.find("name =")) + 1;
    text.insert(after_name, "metric_format = \"deepspeed\"\n[study.metric_regex]\nlm_loss = '\\] Loss: (\\S+)'\n");
    testing::WriteAll(study, text);
    auto [rc, out] = Shell(kBinary + " metrics --study " + study + " " + fw + "deepspeed_hello.log");
    INFO(out);
    CHECK(rc == 0);
    CHECK_THAT(out, Catch::Contains("objective 'lm_loss': present"));
    CHECK_THAT(out, Catch::Matches("(.|\n)*\nlm_loss +1 +10 +10\n(.|\n)*"));

    const std::string with_group = "Loss: (\\S+)";
    text.replace(text.find(with_group), with_group.size(), "Loss: \\S+");
    testing::WriteAll(study, text);
    auto [rc2, out2] = Shell(kBinary + " metrics --study " + study + " " + fw + "deepspeed_hello.log");
    CHECK(rc2 == 2);
    CHECK_THAT(out2, Catch::Contains(study + ":") && Catch::Contains("key 'study.metric_regex.lm_loss'") &&
                         Catch::Contains("capture group"));
    int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + text.find("lm_loss ="), '\n'));
    CHECK_THAT(out2, Catch::Contains(fmt::format("{}:{}:", study, line)));

    text.replace(text.find("Loss: \\S+"), with_group.size() - 2, with_group);
    const std::string ds = "metric_format = \"deepspeed\"";
    text.replace(text.find(ds), ds.size(), "metric_format = \"regex\"");
    testing::WriteAll(study, text);
    auto [rc3, out3] = Shell(kBinary + " metrics --study " + study + " " + fw + "deepspeed_hello.log");
    CHECK(rc3 == 2);
    CHECK_THAT(out3, Catch::Contains("key 'study.metric_format'") && Catch::Contains("step expression"));
  }
  SECTION("an unknown format lists the known ones") {
    auto [rc, out] = Shell(kBinary + " metrics --format lightening " + fw + "nemo2.log");
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains("did you mean 'lightning'") && Catch::Contains("\"torchtitan\""));
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
