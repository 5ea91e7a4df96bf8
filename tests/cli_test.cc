// The `status` and `report` commands through the built binary, on a study database written with
// the store (no cluster: both only read the database). Tagged [cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "results/phases.h"
#include "run/run_lock.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

// Runs `cmd` through the shell; its exit status and everything it printed.
std::pair<int, std::string> Shell(const std::string& cmd) { return testing::RunShell(cmd + " 2>&1"); }

// A study file whose objective is `metric`, and a database in which two trials logged lm_loss.
std::string StudyWithLoggedLoss(const testing::TempDir& dir, const std::string& metric) {
  std::string path =
      testing::WriteLocalStudyFile(dir, "typo", "train --lr {{lr}}",
                                   fmt::format("[objective]\nmetric = \"{}\"\n\n[space]\nlr = [0.1, 0.01]\n", metric));
  auto db = store::Store::Open(dir.file("typo.db"));
  REQUIRE(db.ok());
  auto study = (*db)->UpsertStudy("typo", path, "h", 1.0);
  REQUIRE(study.ok());
  std::vector<store::TrialRecord> trials(2);
  for (int i = 0; i < 2; ++i) {
    trials[i].trial_key = fmt::format("t-{}", i);
    trials[i].params_json = i == 0 ? R"({"lr":0.1})" : R"({"lr":0.01})";
    trials[i].state = "completed";
  }
  REQUIRE((*db)->InsertTrialsIfAbsent(*study, trials).ok());
  for (const auto& t : trials) {
    REQUIRE((*db)
                ->AppendMetrics(t.id,
                                {{10, 1.0, "lm_loss", 2.5},
                                 {10, 1.0, "grad_norm", 0.7},
                                 {20, 2.0, "lm_loss", 2.25},
                                 {20, 2.0, "grad_norm", 0.6}},
                                100)
                .ok());
  }
  return dir.file("study.toml");
}

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

}  // namespace

TEST_CASE("status shows the objective metric, and warns when no trial ever logged it", "[cli]") {
  testing::TempDir dir;
  SECTION("a misspelt objective: '-' for every trial and a warning naming the closest logged metric") {
    auto [rc, out] = Shell(kBinary + " status " + StudyWithLoggedLoss(dir, "lm_los"));
    INFO(out);
    CHECK(rc == 0);
    CHECK_THAT(out, Catch::Contains("lm_los"));
    CHECK_THAT(out, Catch::Contains("warning: no trial has logged the objective metric 'lm_los' (did you mean "
                                    "'lm_loss'?); the logs have: grad_norm, lm_loss"));
    CHECK_THAT(out, !Catch::Contains("2.25"));
  }
  SECTION("the right one: its final value (the mean of its last points, as in the report), no warning") {
    auto [rc, out] = Shell(kBinary + " status " + StudyWithLoggedLoss(dir, "lm_loss"));
    INFO(out);
    CHECK(rc == 0);
    CHECK_THAT(out, Catch::Contains("2.375"));
    CHECK_THAT(out, !Catch::Contains("warning"));
  }
  SECTION("another logged metric as the objective: its value") {
    auto [rc, out] = Shell(kBinary + " status " + StudyWithLoggedLoss(dir, "grad_norm"));
    INFO(out);
    CHECK(rc == 0);
    CHECK_THAT(out, Catch::Contains("0.65 "));
    CHECK_THAT(out, !Catch::Contains("2.375"));
  }
}

TEST_CASE("report with neither --html nor --csv writes both where [report] says", "[cli]") {
  testing::TempDir dir;
  auto [rc, out] = Shell(kBinary + " report " + StudyWithLoggedLoss(dir, "lm_loss"));
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("wrote " + dir.file("typo-report.html")));
  CHECK(testing::ReadAll(dir.file("typo-report.html")).find("<html") != std::string::npos);
  CHECK(testing::ReadAll(dir.file("typo-csv/trials.csv")).find("t-0") != std::string::npos);
  CHECK(testing::ReadAll(dir.file("typo-csv/metrics.csv")).find("lm_loss") != std::string::npos);
}

TEST_CASE("cancel of a study that never ran says so and leaves no database behind", "[cli]") {
  testing::TempDir dir;
  std::string path = StudyWithLoggedLoss(dir, "lm_loss");
  std::filesystem::remove(dir.file("typo.db"));
  auto [rc, out] = Shell(kBinary + " cancel " + path);
  INFO(out);
  CHECK(rc != 0);
  CHECK_THAT(out, Catch::Contains("no study database here"));
  CHECK_FALSE(std::filesystem::exists(dir.file("typo.db")));
}

TEST_CASE("an unknown command is named, with the closest one; --help lists the exit codes", "[cli]") {
  auto [rc, out] = Shell(kBinary + " stauts study.toml");
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("unknown command 'stauts' (did you mean 'status'?); commands: run, status"));
  auto [rc2, out2] = Shell(kBinary + " frobnicate");
  CHECK(rc2 == 2);
  CHECK_THAT(out2, Catch::Contains("unknown command 'frobnicate'; commands:"));
  auto [rc3, help] = Shell(kBinary + " --help");
  CHECK(rc3 == 0);
  CHECK_THAT(help, Catch::Contains("Exit codes: 0 success") && Catch::Contains("4 refused for safety"));
  // A negative tick count is bad input, not a run that submits nothing and exits 0.
  auto [rc4, neg] =
      Shell(kBinary + " run --max-ticks -1 " + std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/quickstart.toml");
  CHECK(rc4 == 2);
  CHECK_THAT(neg, Catch::Contains("--max-ticks"));
  auto [rc5, typo] = Shell(kBinary + " run --resubmit cancled,failed " + std::string(SLURMSWEEP_SOURCE_DIR) +
                           "/examples/quickstart.toml");
  CHECK(rc5 == 2);
  CHECK_THAT(typo, Catch::Contains("--resubmit: 'cancled' is not an end state") &&
                       Catch::Contains("did you mean 'cancelled'?"));
}

TEST_CASE("plan of a study without a model is a dry run: the trials and the constraints' drops", "[cli]") {
  // The quickstart as shipped, with its database moved aside: a quickstart run beforehand must not
  // change what this plan says.
  testing::TempDir dir;
  std::string src = SLURMSWEEP_SOURCE_DIR, text = testing::ReadAll(src + "/examples/quickstart.toml");
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    text.replace(at, from.size(), to);
  };
  replace("\"../build/quickstart.db\"", "\"" + dir.file("quickstart.db") + "\"");
  replace("\"../templates/", "\"" + src + "/templates/");
  replace("\"../build/bin/mlp_train\"", "\"" + std::string(SLURMSWEEP_BINARY_DIR) + "/bin/mlp_train\"");
  testing::WriteAll(dir.file("quickstart.toml"), text);
  auto [rc, out] = Shell(kBinary + " plan " + dir.file("quickstart.toml"));
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("16 trials: 12 to run, 4 dropped by constraints; nothing was submitted"));
  CHECK_THAT(out, Catch::Contains("dropped   hidden=128 lr=0.05 micro_batch_size=8 optimizer=adam  [constraint "
                                  "'hidden / micro_batch_size <= 8' is false]"));
}

TEST_CASE("status shows a trial asked to stop as stopping until the run loop sees it end", "[cli]") {
  testing::TempDir dir;
  std::string path = StudyWithLoggedLoss(dir, "lm_loss");
  {
    auto db = store::Store::Open(dir.file("typo.db"));
    REQUIRE(db.ok());
    auto study = (*db)->GetStudy("typo");
    REQUIRE(study.ok());
    auto trials = (*db)->ListTrials(study->id);
    REQUIRE(trials.ok());
    store::TrialRecord t = trials->front();
    t.state = "running";
    t.job_id = "4242";
    t.stop_request = "cancelled by the user (slurmsweep cancel)";
    REQUIRE((*db)->UpdateTrial(t).ok());
  }
  auto [rc, out] = Shell(kBinary + " status " + path);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("[stopping: cancelled by the user (slurmsweep cancel)]"));
}

TEST_CASE("plan of a study that already ran shows each trial's state and counts only what a run would submit",
          "[cli]") {
  testing::TempDir dir;
  std::string path =
      testing::WriteLocalStudyFile(dir, "again", "train --lr {{lr}}", "[space]\nlr = [0.1, 0.01, 0.001]\n");
  auto study = study::LoadStudy(path);
  REQUIRE(study.ok());
  auto specs = results::ExpandStudy(*study);
  REQUIRE(specs.ok());
  REQUIRE(specs->size() == 3);
  {
    auto db = store::Store::Open(study->database);
    REQUIRE(db.ok());
    auto id = (*db)->UpsertStudy(study->name, path, study->hash, 1.0);
    REQUIRE(id.ok());
    std::vector<store::TrialRecord> trials(4);
    const char* states[] = {"completed", "failed", "new", "running"};
    for (int i = 0; i < 3; ++i) {
      trials[i].trial_key = (*specs)[i].key;
      trials[i].params_json = (*specs)[i].params_json;
      trials[i].state = states[i];
    }
    // A trial of an earlier version of the file (lr = 0.5 left [space]) whose job still runs.
    trials[3].trial_key = "t-0000000000aa";
    trials[3].params_json = R"({"lr":0.5})";
    trials[3].state = states[3];
    trials[3].job_id = "4242";
    REQUIRE((*db)->InsertTrialsIfAbsent(*id, trials).ok());
  }
  auto [rc, out] = Shell(kBinary + " plan " + path);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("outside the space: 1 trial(s) of an earlier version of " + path +
                                  "; 1 not ended (1 on Slurm, holding that many of max_concurrent") &&
                      Catch::Contains("t-0000000000aa (running); `slurmsweep cancel --outside-space " + path));
  CHECK_THAT(out, Catch::Contains("jobs: 1 to submit, one per trial"));
  CHECK_THAT(out, Catch::Contains((*specs)[0].key + "   completed") && Catch::Contains((*specs)[1].key + "   failed") &&
                      Catch::Contains((*specs)[2].key + "   run"));
  CHECK_THAT(out, Catch::Contains("3 trials: 1 to run, already in the database: 1 completed, 1 failed; 0 dropped"));
}

TEST_CASE("plan of a tpe study: the region its proposals come from, summarized with why combinations are left out",
          "[cli][sampler]") {
  testing::TempDir dir;
  std::string path = testing::WriteLocalStudyFile(
      dir, "tpe", "train --lr {{lr}} --tp {{tp}} --pp {{pp}} --mbs {{mbs}}",
      "nodes = 4\ngpus_per_node = 8\n[job.vars]\nmodel = \"llama3.1-70b\"\ngpu_mem_gib = 80\n"
      "global_batch_size = 128\n\n[search]\nsampler = \"tpe\"\ntrials = 20\nseed = 7\n"
      "constraints = [\"tp * pp <= 32\", \"lr < 0.001 || mbs == 1\"]\n\n"
      "[space]\ntp = [1, 2, 4, 8]\npp = { min = 1, max = 16, int = true }\nmbs = [1, 2]\n"
      "lr = { min = 1e-5, max = 1e-2, log = true }\n");
  auto [rc, out] = Shell(kBinary + " plan " + path);
  INFO(out);
  CHECK(rc == 0);
  // 4 x 16 x 2 combinations of the lists and integer ranges, each planned as a grid's trial would be, counted
  // by reason in a few lines (not one line per combination).
  CHECK_THAT(out, Catch::Contains("its lists and integer ranges form 128 combinations: "));
  // The plan in a few lines, then the first trial's script.
  std::string head = out.substr(0, out.find("the script of trial "));
  CHECK(std::count(head.begin(), head.end(), '\n') <= 22);
  CHECK_THAT(out, Catch::Contains("break a parallelism rule, e.g. world size (32) not divisible by TP*PP*CP") &&
                      Catch::Contains("predicted out of memory, e.g. predicted ") &&
                      Catch::Contains("constraint 'tp * pp <= 32' is false"));
  CHECK_THAT(out, Catch::Contains("lr   floats in [1e-05, 0.01] (log), drawn within each combination") &&
                      Catch::Contains("pp   integers 1 to 16") && Catch::Contains("tp   values 1, 2, 4, 8"));
  CHECK_THAT(out, Catch::Contains("checked on each proposal (names a float range): constraint 'lr < 0.001 || mbs == "
                                  "1'"));
  CHECK_THAT(out, Catch::Contains("budget: 20 trials (seed 7)"));

  auto [jrc, json] = Shell(kBinary + " plan --json " + path);
  INFO(json);
  CHECK(jrc == 0);
  auto doc = nlohmann::json::parse(json, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc["sampler"] == "tpe");
  CHECK(doc["region"]["combinations"] == 128);
  REQUIRE(doc["region"]["configurations"].size() == 128);
  int fits = 0;
  for (const auto& c : doc["region"]["configurations"]) fits += c["verdict"] == "run";
  CHECK(doc["region"]["proposable"] == fits);
  CHECK(fits > 0);
  CHECK(fits < 128);
  CHECK(out.find(fmt::format("{} of them pass constraints, parallelism rules and the memory plan", fits)) !=
        std::string::npos);
  CHECK(doc["trials"].empty());
  // The text's counts are the JSON's: every combination left out is in one of its groups.
  int left_out = 0;
  for (const auto& g : doc["region"]["not_proposable"]) {
    left_out += g["count"].get<int>();
    if (g["verdict"] == "dropped")
      CHECK(out.find(fmt::format("{} {}", g["count"].get<int>(), g["reason"].get<std::string>())) != std::string::npos);
  }
  CHECK(left_out == 128 - fits);

  // Too many combinations to list: said so, and what each proposal is checked against.
  std::string text = testing::ReadAll(path);
  text.replace(text.find("max = 16,"), 9, "max = 16000,");
  testing::WriteAll(path, text);
  auto [brc, big] = Shell(kBinary + " plan " + path);
  INFO(big);
  CHECK(brc == 0);
  CHECK_THAT(big, Catch::Contains("form 1.28e+05 combinations, too many to list here, so constraints, parallelism "
                                  "rules and the memory plan are checked on each proposal"));
}

TEST_CASE("status says whether a run is going on, and clears a killed detached run's pid file", "[cli]") {
  testing::TempDir dir;
  std::string path = StudyWithLoggedLoss(dir, "lm_loss");
  std::string db = dir.file("typo.db");
  auto [rc, out] = Shell(kBinary + " status " + path);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::EndsWith("no run of this study is going on\n"));
  testing::WriteAll(db + ".pid", "999999\n");  // what a kill -9 of `run --detach` leaves
  auto [rc2, out2] = Shell(kBinary + " status " + path);
  CHECK(rc2 == 0);
  CHECK_THAT(out2, Catch::Contains("no run of this study is going on; removed " + db + ".pid"));
  CHECK_FALSE(std::filesystem::exists(db + ".pid"));
  {
    auto lock = run::RunLock::Acquire(db + ".lock");  // as `run` holds it
    REQUIRE(lock.ok());
    auto [rc3, out3] = Shell(kBinary + " status " + path);
    CHECK(rc3 == 0);
    CHECK_THAT(out3, Catch::Contains(fmt::format("a run of this study is going on (pid {})", getpid())));
  }
  // Status took no lock a run would trip over.
  CHECK(run::RunLock::Acquire(db + ".lock").ok());
}

TEST_CASE("status names the log of each failed trial", "[cli]") {
  testing::TempDir dir;
  std::string path =
      testing::WriteLocalStudyFile(dir, "fails", "train --lr {{lr}}", "[space]\nlr = [0.1, 0.01, 0.001]\n");
  auto db = store::Store::Open(dir.file("fails.db"));
  REQUIRE(db.ok());
  auto study = (*db)->UpsertStudy("fails", path, "h", 1.0);
  REQUIRE(study.ok());
  std::vector<store::TrialRecord> trials(3);
  const char* states[] = {"failed", "completed", "cuda_oom"};
  for (int i = 0; i < 3; ++i) {
    trials[i].trial_key = fmt::format("t-{}", i);
    trials[i].params_json = fmt::format(R"({{"lr":{}}})", i == 0 ? "0.1" : i == 1 ? "0.01" : "0.001");
    trials[i].state = states[i];
    trials[i].log_path = fmt::format("/w/logs/t-{}.1.out", i);
  }
  REQUIRE((*db)->InsertTrialsIfAbsent(*study, trials).ok());
  db->reset();
  auto [rc, out] = Shell(kBinary + " status " + path);
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("logs of failed trials (on this machine):") && Catch::Contains("/w/logs/t-0.1.out") &&
                      Catch::Contains("/w/logs/t-2.1.out") && !Catch::Contains("/w/logs/t-1.1.out"));
}

// README "Your own trainer": the example's trainer logs what its study reads, and the study plans its trials.
TEST_CASE("the README's first study of a JSON-lines trainer checks, plans and parses as README says", "[cli]") {
  testing::TempDir dir;
  std::string ex = std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/own-trainer";
  std::string bin = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";
  auto [train_rc, train_out] =
      Shell(fmt::format("python3 {}/train.py --lr 0.01 --batch 8 --steps 5 > {}", ex, dir.file("one.log")));
  REQUIRE(train_rc == 0);
  auto [rc, out] = Shell(fmt::format("{} metrics --study {}/study.toml {} --json", bin, ex, dir.file("one.log")));
  INFO(out);
  REQUIRE(rc == 0);
  auto doc = nlohmann::json::parse(out.substr(out.find('{')));
  CHECK(doc["points"].get<int>() >= 5);
  CHECK(doc["objective"]["name"] == "loss");
  CHECK(doc["objective"]["present"] == true);
  CHECK(doc["time_axis"]["key"] == "time");
  auto [plan_rc, plan_out] = Shell(fmt::format("{} plan {}/study.toml", bin, ex));
  INFO(plan_out);
  CHECK(plan_rc == 0);
  CHECK_THAT(plan_out, Catch::Contains("6 trials: 6 to run") && Catch::Contains("nothing was submitted"));
}
