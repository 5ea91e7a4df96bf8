// The status views through the built binary (issue 16): `metrics` on recorded logs, exit codes a
// script can trust, live progress, --json, `logs`, [notify]. No cluster: the local transport where a study runs at all.
// Tagged [cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "run/run_lock.h"
#include "store/store.h"
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
  CHECK_THAT(out, Catch::Contains("8 line(s) read as auto (megatron)"));  // auto: the default
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
  SECTION("a log that gives nothing in the format asked for names the format that parses it") {
    auto [rc, out] = Shell(kBinary + " metrics --format megatron " + kData + "trainer.jsonl");
    INFO(out);
    CHECK(rc == 5);
    CHECK_THAT(out, Catch::Contains("read as megatron; 0 point(s)"));
    CHECK_THAT(out, Catch::Contains("the lines parse as \"jsonl\"") && Catch::Contains("--format jsonl"));
    auto [rc2, out2] = Shell(kBinary + " metrics --format megatron --json " + kData + "trainer.jsonl 2>/dev/null");
    CHECK_THAT(out2, Catch::Contains("\"suggested_format\": \"jsonl\""));
    // Read as it should be: no suggestion.
    auto [rc3, out3] = Shell(kBinary + " metrics --json " + kData + "trainer.jsonl 2>/dev/null");
    CHECK_THAT(out3, Catch::Contains("\"suggested_format\": null") && Catch::Contains("\"format\": \"auto (jsonl)\""));
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
  // Except the look for the study's live jobs before the first sbatch (squeue --me): none.
  testing::WriteAll(dir.file("fake/squeue"),
                    "#!/bin/sh\ncase \"$*\" in *--me*) exit 0;; esac\necho 'squeue: error: fake' >&2\nexit 1\n");
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
  // The refused trials went back to new at once (sbatch answered): none is "being submitted".
  CHECK_THAT(run, Catch::Contains("0 being submitted, 2 not submitted yet") &&
                      Catch::Contains("slurmsweep run " + study) && Catch::Contains("slurmsweep cancel " + study));
  CHECK_FALSE(run::RunLock::Holder(dir.file("sig.db.lock")));
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

// ---- live progress, --json, logs, notify (issue 16, items 4, 5, 6, 8) ----

namespace {

// `text` with `line` added to the end of table `table` of the study file.
std::string AddToTable(std::string text, const std::string& table, const std::string& line) {
  size_t at = text.find("[" + table + "]\n");
  REQUIRE(at != std::string::npos);
  at = text.find('\n', at) + 1;
  return text.insert(at, line + "\n");
}

// A study whose two trials wait on a full submit quota (the cluster otherwise unreachable), polled
// every second, with `extra` appended (TOML tables).
std::string WaitingStudy(const testing::TempDir& dir, const std::string& extra = "") {
  std::string study = FakeSlurmStudy(dir, "sbatch: error: QOSMaxSubmitJobPerUserLimit");
  testing::WriteAll(study, AddToTable(testing::ReadAll(study), "cluster", "poll_interval_s = 1") + extra);
  return study;
}

// A database for `study` (name `name`) holding `trials`; returns their ids.
std::vector<int64_t> StoreTrials(const testing::TempDir& dir, const std::string& name, const std::string& study,
                                 std::vector<store::TrialRecord> trials,
                                 const std::vector<std::vector<store::MetricRow>>& metrics = {}) {
  auto db = store::Store::Open(dir.file(name + ".db"));
  REQUIRE(db.ok());
  auto id = (*db)->UpsertStudy(name, study, "h", 1.0);
  REQUIRE(id.ok());
  REQUIRE((*db)->InsertTrialsIfAbsent(*id, trials).ok());
  std::vector<int64_t> ids;
  for (size_t i = 0; i < trials.size(); ++i) {
    // InsertTrialsIfAbsent stores the identity; the rest as a run loop would.
    REQUIRE((*db)->UpdateTrial(trials[i]).ok());
    if (i < metrics.size()) REQUIRE((*db)->AppendMetrics(trials[i].id, metrics[i], 100).ok());
    ids.push_back(trials[i].id);
  }
  return ids;
}

// Waits for the background process `pid` (as `echo $!` printed it) to end.
void WaitForExit(std::string pid) {
  pid.erase(std::remove(pid.begin(), pid.end(), '\n'), pid.end());
  REQUIRE(!pid.empty());
  testing::RunShell("while kill -0 " + pid + " 2>/dev/null; do sleep 0.1; done");
}

store::TrialRecord TrialIn(const std::string& key, const std::string& lr, const std::string& state) {
  store::TrialRecord t;
  t.trial_key = key;
  t.params_json = R"({"lr":)" + lr + "}";
  t.state = state;
  return t;
}

}  // namespace

TEST_CASE("run on a pipe prints a plain progress line; on a terminal one block is redrawn in place", "[cli]") {
  testing::TempDir dir;
  std::string study = WaitingStudy(dir);
  SECTION("a pipe: no escape sequence, a line when the counts change") {
    auto [rc, out] =
        Shell(fmt::format("PATH={}:$PATH timeout -s INT 3 {} run {} | cat", dir.file("fake"), kBinary, study));
    INFO(out);
    CHECK_THAT(out, Catch::Contains("] progress: 0/2 done (0%); 0 running, 2 queued; best lm_loss: none yet; "
                                    "elapsed 0s, ETA unknown"));
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK_THAT(out, Catch::Contains("] tick 1:"));
  }
  SECTION("a terminal (script(1) gives the run a pseudo-terminal): the block, erased and redrawn under new lines") {
    auto [rc, out] = Shell(fmt::format("PATH={}:$PATH script -qec 'timeout -s INT 3 {} run {}' /dev/null",
                                       dir.file("fake"), kBinary, study));
    INFO(out);
    CHECK_THAT(out, Catch::Contains("trials: 0/2 done (0%); 0 running, 2 queued"));
    CHECK_THAT(out, Catch::Contains("best lm_loss: none yet"));
    // Up three lines, clear to the end of the screen, then the next log line and the block again.
    CHECK_THAT(out, Catch::Contains("\x1b[3A\x1b[J"));
    CHECK_THAT(out, !Catch::Contains("] tick 1:"));  // the block replaces the counters line
  }
}

TEST_CASE("run --json prints the end-of-run summary on stdout, the log on stderr", "[cli]") {
  testing::TempDir dir;
  std::string study = FakeSlurmStudy(dir, "sbatch: error: Batch job submission failed: something broke");
  auto [rc, out] = testing::RunShell(
      fmt::format("PATH={}:$PATH {} run --json {} 2>{}", dir.file("fake"), kBinary, study, dir.file("err")));
  INFO(out);
  CHECK(rc == 5);
  auto j = nlohmann::json::parse(out);
  CHECK(j["version"] == 1);
  CHECK(j["kind"] == "run");
  CHECK(j["exit_code"] == 5);
  CHECK(j["progress"]["failed"] == 2);
  CHECK(j["progress"]["eta_s"] == 0);
  CHECK(j["best"].is_null());
  CHECK(j["trials"].size() == 2);
  CHECK(j["slurm_commands"]["sbatch"].get<int>() >= 1);
  CHECK_THAT(testing::ReadAll(dir.file("err")), Catch::Contains("every trial has ended"));
}

TEST_CASE("status --json: versioned document with progress, best trial and every trial", "[cli]") {
  testing::TempDir dir;
  std::string study = testing::WriteLocalStudyFile(dir, "js", "train {{lr}}", "[space]\nlr = [0.1, 0.01, 0.001]\n");
  auto a = TrialIn("t-a", "0.1", "completed"), b = TrialIn("t-b", "0.01", "completed"),
       c = TrialIn("t-c", "0.001", "cuda_oom");
  a.started_at = 1000, a.ended_at = 1100, b.started_at = 1050, b.ended_at = 1350, c.started_at = 1100,
  c.ended_at = 1110;
  c.log_path = "/w/logs/t-c.1.out";
  StoreTrials(dir, "js", study, {a, b, c},
              {{{10, 1, "lm_loss", 2.5}, {20, 2, "lm_loss", 2.2}}, {{20, 2, "lm_loss", 1.9}}});
  auto [rc, out] = testing::RunShell(kBinary + " status --json " + study);
  INFO(out);
  REQUIRE(rc == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["version"] == 1);
  CHECK(j["kind"] == "status");
  CHECK(j["study"]["objective"] == nlohmann::json{{"metric", "lm_loss"}, {"goal", "min"}});
  CHECK(j["progress"]["completed"] == 2);
  CHECK(j["progress"]["failed"] == 1);
  CHECK(j["progress"]["elapsed_s"] == 350);
  CHECK(j["best"]["trial"] == "t-b");
  CHECK(j["best"]["value"] == 1.9);
  CHECK(j["best"]["params"] == nlohmann::json{{"lr", 0.01}});  // issue 31: what to run next, in one place
  CHECK(j["run"]["going_on"] == false);
  REQUIRE(j["trials"].size() == 3);
  CHECK(j["trials"][0]["params"]["lr"] == 0.1);
  CHECK(j["trials"][0]["objective"] == Approx(2.35));  // the final value: the mean of the last points
  CHECK(j["trials"][2]["state"] == "cuda_oom");
  CHECK(j["trials"][2]["objective"].is_null());
  CHECK(j["trials"][2]["log_path"] == "/w/logs/t-c.1.out");
  // The text shows the same progress under the table.
  auto [trc, text] = Shell(kBinary + " status " + study);
  CHECK_THAT(text, Catch::Contains("trials: 3/3 done (100%) [2 completed, 1 failed]; 0 running, 0 queued"));
  CHECK_THAT(text, Catch::Contains("best lm_loss (min): 1.9 in t-b (completed)"));
  CHECK_THAT(text, Catch::Contains("elapsed 5m50s, ETA 0s"));
}

TEST_CASE("status --watch on a pipe: a line per change, and it ends once every trial has ended", "[cli]") {
  testing::TempDir dir;
  std::string study = testing::WriteLocalStudyFile(dir, "w", "train {{lr}}", "[space]\nlr = [0.1]\n");
  auto t = TrialIn("t-a", "0.1", "running");
  t.started_at = 1000;
  auto ids = StoreTrials(dir, "w", study, {t});
  std::string cmd =
      fmt::format("timeout 60 {} status --watch=1 {} > {} 2>&1 & echo $!", kBinary, study, dir.file("watch.out"));
  auto [src, pid] = testing::RunShell(cmd);
  // Wait for its first line, then end the trial as a run would.
  for (int i = 0; i < 200 && testing::ReadAll(dir.file("watch.out")).find("progress:") == std::string::npos; ++i) {
    usleep(50'000);
  }
  {
    auto db = store::Store::Open(dir.file("w.db"));
    REQUIRE(db.ok());
    auto rec = (*db)->GetTrial(ids[0]);
    REQUIRE(rec.ok());
    rec->state = "completed";
    rec->ended_at = 1600;
    REQUIRE((*db)->UpdateTrial(*rec).ok());
  }
  WaitForExit(pid);
  std::string out = testing::ReadAll(dir.file("watch.out"));
  INFO(out);
  CHECK_THAT(out, Catch::Contains("progress: 0/1 done (0%); 1 running, 0 queued"));
  CHECK_THAT(out, Catch::Contains("progress: 1/1 done (100%) [1 completed]; 0 running, 0 queued"));
  CHECK(std::count(out.begin(), out.end(), '\n') == 2);  // the unchanged refreshes print nothing
  CHECK(out.find('\x1b') == std::string::npos);
}

TEST_CASE("logs: a mistyped beginning of a real trial key names the closest key", "[cli]") {
  testing::TempDir dir;
  std::string study = testing::WriteLocalStudyFile(dir, "lk", "train {{lr}}", "[space]\nlr = [0.1, 0.01]\n");
  StoreTrials(dir, "lk", study, {TrialIn("t-e23a4b5c6d7e", "0.1", "new"), TrialIn("t-91f0c2d3e4a5", "0.01", "new")});
  auto [rc, out] = Shell(kBinary + " logs " + study + " t-e23x");
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("no trial 't-e23x' (did you mean 't-e23a4b5c6d7e'?)"));
  auto [rc2, out2] = Shell(kBinary + " logs " + study + " zzzzzz");
  CHECK(rc2 == 2);
  CHECK_THAT(out2, !Catch::Contains("did you mean"));  // nothing close: no guess
}

TEST_CASE("logs prints a trial's log over the local transport; --follow follows it until the trial ends", "[cli]") {
  testing::TempDir dir;
  std::string study = testing::WriteLocalStudyFile(dir, "lg", "train {{lr}}", "[space]\nlr = [0.1, 0.01, 0.5]\n");
  auto a = TrialIn("t-0aa", "0.1", "running"), b = TrialIn("t-1bb", "0.01", "new");
  auto c = TrialIn("t-2cc", "0.5", "dropped");
  a.log_path = dir.file("t-0aa.1.out");
  a.job_id = "42";
  auto ids = StoreTrials(dir, "lg", study, {a, b, c});
  testing::WriteAll(a.log_path, "iteration 1\nred \x1b[31malert\n");
  SECTION("the whole log, control characters escaped") {
    auto [rc, out] = Shell(kBinary + " logs " + study + " t-0");
    INFO(out);
    CHECK(rc == 0);
    CHECK(out == "iteration 1\nred \\e[31malert\n");
  }
  SECTION("an unknown trial names the closest; one never submitted has no log yet") {
    auto [rc, out] = Shell(kBinary + " logs " + study + " t-0ab");
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains("no trial 't-0ab' (did you mean 't-0aa'?)"));
    auto [rc2, out2] = Shell(kBinary + " logs " + study + " t-1bb");
    CHECK(rc2 == 4);
    CHECK_THAT(out2, Catch::Contains("trial t-1bb has no log yet: it is new"));
    // A dropped trial never gets one: --follow says so at once instead of waiting and ending without a word.
    auto [rc3, out3] = Shell("timeout 20 " + kBinary + " logs --follow " + study + " t-2cc");
    CHECK(rc3 == 4);
    CHECK_THAT(out3, Catch::Contains("trial t-2cc has no log: it is dropped (never submitted)"));
    CHECK_THAT(out3, !Catch::Contains("waits"));
  }
  SECTION("--follow: what is appended, then the end") {
    auto [src, pid] = testing::RunShell(fmt::format("timeout 60 {} logs --follow {} {} > {} 2>&1 & echo $!", kBinary,
                                                    study, std::to_string(ids[0]), dir.file("f.out")));
    for (int i = 0; i < 200 && testing::ReadAll(dir.file("f.out")).find("alert") == std::string::npos; ++i) {
      usleep(50'000);
    }
    { std::ofstream(a.log_path, std::ios::app) << "iteration 2\n"; }
    for (int i = 0; i < 200 && testing::ReadAll(dir.file("f.out")).find("iteration 2") == std::string::npos; ++i) {
      usleep(50'000);
    }
    {
      std::ofstream(a.log_path, std::ios::app) << "done\n";
      auto db = store::Store::Open(dir.file("lg.db"));
      REQUIRE(db.ok());
      auto rec = (*db)->GetTrial(ids[0]);
      REQUIRE(rec.ok());
      rec->state = "completed";
      REQUIRE((*db)->UpdateTrial(*rec).ok());
    }
    WaitForExit(pid);
    std::string out = testing::ReadAll(dir.file("f.out"));
    INFO(out);
    CHECK(out == "iteration 1\nred \\e[31malert\niteration 2\ndone\n");
  }
}

TEST_CASE("[notify]: events as JSON on the command's stdin; a failing or hanging command never stops the run",
          "[cli]") {
  testing::TempDir dir;
  SECTION("trial_failed for each trial and study_finished, with the event's name in the environment") {
    std::string study = FakeSlurmStudy(dir, "sbatch: error: Batch job submission failed: something broke");
    testing::WriteAll(study, testing::ReadAll(study) +
                                 fmt::format("\n[notify]\ncommand = \"{{ cat; echo; }} >> '{}'; echo $SLURMSWEEP_EVENT "
                                             ">> '{}'\"\n",
                                             dir.file("events.jsonl"), dir.file("names")));
    auto [rc, out] = Shell(fmt::format("PATH={}:$PATH {} run {}", dir.file("fake"), kBinary, study));
    INFO(out);
    CHECK(rc == 5);
    std::vector<nlohmann::json> events;
    std::istringstream lines(testing::ReadAll(dir.file("events.jsonl")));
    for (std::string line; std::getline(lines, line);) {
      if (!line.empty()) events.push_back(nlohmann::json::parse(line));
    }
    REQUIRE(events.size() == 3);
    std::multiset<std::string> kinds;
    for (const auto& e : events) {
      CHECK(e["version"] == 1);
      CHECK(e["study"] == "sig");
      kinds.insert(e["event"].get<std::string>());
      if (e["event"] == "trial_failed") {
        CHECK(e["trial"]["class"] == "failed");
        CHECK_THAT(e["trial"]["reason"].get<std::string>(), Catch::Contains("something broke"));
      }
      if (e["event"] == "study_finished") {
        CHECK(e["exit_code"] == 5);
        CHECK(e["progress"]["failed"] == 2);
      }
    }
    CHECK(kinds == std::multiset<std::string>{"study_finished", "trial_failed", "trial_failed"});
    CHECK_THAT(testing::ReadAll(dir.file("names")), Catch::Contains("study_finished\n"));
  }
  SECTION("a command that fails, and one that hangs past timeout_s: logged, the run ends as it would") {
    std::string study = FakeSlurmStudy(dir, "sbatch: error: Batch job submission failed: something broke");
    std::string command = GENERATE(std::string("echo no mail server >&2; exit 3"), std::string("sleep 600"));
    testing::WriteAll(study, testing::ReadAll(study) + "\n[notify]\ncommand = \"" + command +
                                 "\"\ntimeout_s = 1\nevents = [\"study_finished\"]\n");
    auto [rc, out] = Shell(fmt::format("PATH={}:$PATH {} run {}", dir.file("fake"), kBinary, study));
    INFO(out);
    CHECK(rc == 5);
    if (command.starts_with("sleep")) {
      CHECK_THAT(out, Catch::Contains("notify study_finished: the [notify] command ran longer than timeout_s = 1 "
                                      "and was killed; the run goes on"));
    } else {
      CHECK_THAT(out, Catch::Contains("notify study_finished: the [notify] command exited 3: no mail server"));
    }
    CHECK_THAT(out, !Catch::Contains("notify trial_failed"));  // not subscribed
  }
  SECTION("quota_pause, and cluster_unreachable after unreachable_minutes") {
    std::string study = WaitingStudy(dir, fmt::format("\n[notify]\ncommand = \"cat >> '{}'; echo >> '{}'\"\n"
                                                      "unreachable_minutes = 0.02\n",
                                                      dir.file("events.jsonl"), dir.file("events.jsonl")));
    auto [rc, out] = Shell(fmt::format("PATH={}:$PATH timeout -s INT 5 {} run {}", dir.file("fake"), kBinary, study));
    INFO(out);
    std::string events = testing::ReadAll(dir.file("events.jsonl"));
    INFO(events);
    CHECK_THAT(events, Catch::Contains("\"event\":\"quota_pause\""));
    CHECK_THAT(events, Catch::Contains("QOSMaxSubmitJobPerUserLimit"));
    // A refused submission leaves nothing on the cluster to look at; an sbatch that gives no answer
    // (timeout's exit 124) leaves its trials in doubt, and the unreachable squeue that follows is
    // reported after unreachable_minutes.
    testing::TempDir other;
    std::string doubt = WaitingStudy(other, fmt::format("\n[notify]\ncommand = \"cat >> '{}'; echo >> '{}'\"\n"
                                                        "unreachable_minutes = 0.02\n",
                                                        other.file("events.jsonl"), other.file("events.jsonl")));
    testing::WriteAll(other.file("fake/sbatch"), "#!/bin/sh\nexit 124\n");
    auto [rc2, out2] =
        Shell(fmt::format("PATH={}:$PATH timeout -s INT 5 {} run {}", other.file("fake"), kBinary, doubt));
    INFO(out2);
    CHECK_THAT(testing::ReadAll(other.file("events.jsonl")), Catch::Contains("\"event\":\"cluster_unreachable\""));
  }
  SECTION("a misspelt event is refused with file:line and the closest name") {
    std::string study = FakeSlurmStudy(dir, "x");
    testing::WriteAll(study, testing::ReadAll(study) + "\n[notify]\ncommand = \"true\"\nevents = [\"trial_fail\"]\n");
    auto [rc, out] = Shell(kBinary + " plan " + study);
    CHECK(rc == 2);
    CHECK_THAT(out, Catch::Contains("study.toml:16: key 'notify.events': 'trial_fail' is not an event (did you mean "
                                    "'trial_failed'?)"));
  }
}

TEST_CASE("plan --json: every trial with its verdict and values, and the refused ones", "[cli]") {
  testing::TempDir dir;
  std::string study = testing::WriteLocalStudyFile(
      dir, "pj", "train {{lr}} {{bs}}",
      "[search]\nconstraints = [\"lr * bs < 0.15\"]\n\n[space]\nlr = [0.1, 0.01]\nbs = [1, 2]\n");
  auto [rc, out] = testing::RunShell(kBinary + " plan --json " + study);
  INFO(out);
  REQUIRE(rc == 0);
  auto j = nlohmann::json::parse(out);
  CHECK(j["version"] == 1);
  CHECK(j["kind"] == "plan");
  CHECK(j["memory_plan"].is_null());
  CHECK(j["counts"] == nlohmann::json{{"dropped", 1}, {"run", 3}});
  REQUIRE(j["trials"].size() == 4);
  int dropped = 0;
  for (const auto& t : j["trials"]) {
    if (t["verdict"] == "dropped") {
      ++dropped;
      CHECK(t["params"] == nlohmann::json{{"lr", 0.1}, {"bs", 2}});
      CHECK_FALSE(t["reason"].get<std::string>().empty());
    }
  }
  CHECK(dropped == 1);
  CHECK(j["refused"].empty());
}
