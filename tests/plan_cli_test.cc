// `plan` shows what `run` will do, checked against what a run then does (issue 31 §3): the script a
// trial is submitted with (`plan --script`), and a tpe study's region and first proposals. Through
// the built binary, with the local transport and a fake sbatch on PATH that keeps what it was given.
// Tagged [cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

// Stdout and stderr, as a user sees them.
std::pair<int, std::string> Shell(const std::string& cmd) { return testing::RunShell(cmd + " 2>&1"); }

// A fake sbatch (in DIR/fake) that copies the script it is given into DIR/submitted/ and refuses the
// job, so every trial fails at once and the run ends; squeue is never needed then.
void FakeSbatch(const testing::TempDir& dir) {
  std::filesystem::create_directories(dir.file("fake"));
  std::filesystem::create_directories(dir.file("submitted"));
  testing::WriteAll(dir.file("fake/sbatch"),
                    "#!/bin/sh\nfor a; do last=$a; done\ncp \"$last\" '" + dir.file("submitted") +
                        "/'\necho 'sbatch: error: Batch job submission failed: something broke' >&2\nexit 1\n");
  // The look for the study's live jobs before the first sbatch (squeue --me) finds none.
  testing::WriteAll(dir.file("fake/squeue"),
                    "#!/bin/sh\ncase \"$*\" in *--me*) exit 0;; esac\necho 'squeue: error: fake' >&2\nexit 1\n");
  for (const char* f : {"fake/sbatch", "fake/squeue"}) {
    std::filesystem::permissions(dir.file(f), std::filesystem::perms::owner_all);
  }
}

// `text` with `line` added at the top of table `table`.
std::string AddToTable(std::string text, const std::string& table, const std::string& line) {
  size_t at = text.find("[" + table + "]\n");
  REQUIRE(at != std::string::npos);
  at = text.find('\n', at) + 1;
  return text.insert(at, line + "\n");
}

std::vector<store::TrialRecord> StoredTrials(const std::string& db, const std::string& study) {
  auto s = store::Store::OpenReadOnly(db);
  REQUIRE(s.ok());
  auto rec = (*s)->GetStudy(study);
  REQUIRE(rec.ok());
  auto trials = (*s)->ListTrials(rec->id);
  REQUIRE(trials.ok());
  return *trials;
}

}  // namespace

TEST_CASE("plan --script prints a trial's script byte for byte as run then submits it", "[cli]") {
  testing::TempDir dir;
  FakeSbatch(dir);
  // One job per trial (no arrays), with a header of its own, a telemetry sampler and template variables.
  std::string study = testing::WriteLocalStudyFile(
      dir, "scripted", "#SBATCH --cpus-per-task=1\necho lr={{lr}} trial={{trial}} attempt={{attempt}} log={{log}}",
      "time_limit = \"00:05:00\"\nmonitor = true\n\n[space]\nlr = [0.1, 0.25]\n");
  testing::WriteAll(study, AddToTable(testing::ReadAll(study), "cluster", "arrays = false"));
  auto [jrc, json] = Shell(kBinary + " plan --json " + study);
  INFO(json);
  REQUIRE(jrc == 0);
  auto doc = nlohmann::json::parse(json);
  REQUIRE(doc["trials"].size() == 2);
  std::vector<std::string> keys, scripts;
  for (const auto& t : doc["trials"]) {
    std::string key = t["key"];
    // Before anything ran, as a user checks a study; a unique beginning of the key names it too.
    auto [rc, script] = testing::RunShell(kBinary + " plan --script " + key.substr(0, key.size() - 2) + " " + study);
    INFO(script);
    REQUIRE(rc == 0);
    keys.push_back(key);
    scripts.push_back(script);
  }
  CHECK_THAT(scripts[0],
             Catch::StartsWith("#!/bin/bash\n") && Catch::Contains("#SBATCH --job-name=ss-scripted-" + keys[0]));
  // The renderer quotes each value.
  CHECK_THAT(scripts[0], Catch::Contains(fmt::format("echo lr='{}' trial='{}' attempt='1' log='",
                                                     doc["trials"][0]["params"]["lr"].dump(), keys[0])));

  auto [run_rc, run_out] = Shell(fmt::format("PATH={}:$PATH {} run {}", dir.file("fake"), kBinary, study));
  INFO(run_out);
  CHECK(run_rc == 5);  // every trial failed at sbatch
  std::vector<std::string> submitted;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("submitted"))) submitted.push_back(e.path());
  REQUIRE(submitted.size() == 2);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto it = std::find_if(submitted.begin(), submitted.end(),
                           [&](const std::string& p) { return p.find(keys[i]) != std::string::npos; });
    REQUIRE(it != submitted.end());
    CHECK(testing::ReadAll(*it) == scripts[i]);
  }

  // Unknown, and dropped or refused trials: a message and exit 2, no script.
  auto [unknown_rc, unknown] = Shell(kBinary + " plan --script t-nope " + study);
  INFO(unknown);
  CHECK(unknown_rc == 2);
  CHECK_THAT(unknown, Catch::Contains("no trial 't-nope'") && !Catch::Contains("#SBATCH"));
}

TEST_CASE("plan --script refuses a trial its template cannot carry, with the renderer's reason", "[cli]") {
  testing::TempDir dir;
  std::string study =
      testing::WriteLocalStudyFile(dir, "carry", "# tag: {{tag}}\nTAG={{tag}}\nprintf '%s\\n' \"$TAG\"",
                                   "[space]\ntag = { values = [\"fine\", \"x\\ntouch PWNED\"], text = true }\n");
  auto [jrc, json] = testing::RunShell(kBinary + " plan --json " + study + " 2>/dev/null");
  CHECK(jrc == 2);  // a trial cannot be rendered
  auto doc = nlohmann::json::parse(json);
  std::string fine, refused;
  for (const auto& t : doc["trials"]) (t["verdict"] == "refused" ? refused : fine) = t["key"];
  REQUIRE(!fine.empty());
  REQUIRE(!refused.empty());
  auto [rc, out] = Shell(kBinary + " plan --script " + refused + " " + study);
  INFO(out);
  CHECK(rc == 2);
  CHECK_THAT(out, Catch::Contains("trial " + refused + ": `run` would refuse it") && Catch::Contains("job.sbatch:2") &&
                      Catch::Contains("line break"));
  auto [frc, script] = Shell(kBinary + " plan --script " + fine + " " + study);
  INFO(script);
  CHECK(frc == 0);
  CHECK_THAT(script, Catch::Contains("TAG='fine'"));
}

TEST_CASE("plan of a tpe study: the region in a few lines, and the first proposals run then makes", "[cli][sampler]") {
  testing::TempDir dir;
  FakeSbatch(dir);
  // The issue's study: 61 batch sizes x 3 momentums = 183 combinations, a float lr, 12 trials.
  std::string study = testing::WriteLocalStudyFile(
      dir, "tpe12", "python3 train.py --lr {{lr}} --batch {{batch}} --momentum {{momentum}}",
      "[search]\nsampler = \"tpe\"\ntrials = 12\nseed = 11\nconstraints = [\"batch <= 32 || momentum < 0.95\"]\n\n"
      "[space]\nlr = { min = 1e-4, max = 0.3, log = true }\nbatch = { min = 4, max = 64, int = true }\n"
      "momentum = [0.8, 0.9, 0.99]\n");
  testing::WriteAll(study, AddToTable(testing::ReadAll(study), "cluster", "max_concurrent = 2\npoll_interval_s = 1"));
  auto [rc, out] = Shell(kBinary + " plan " + study);
  INFO(out);
  REQUIRE(rc == 0);
  // The plan in a few lines, then the first trial's script.
  std::string head = out.substr(0, out.find("the script of trial "));
  CHECK(std::count(head.begin(), head.end(), '\n') <= 22);
  CHECK_THAT(out, Catch::Contains("batch     integers 4 to 64") && Catch::Contains("momentum  values 0.8, 0.9, 0.99") &&
                      Catch::Contains("lr        floats in [0.0001, 0.3] (log)"));
  // The 32 batch sizes above 32 with momentum 0.99 break the constraint.
  CHECK_THAT(out,
             Catch::Contains("form 183 combinations: 151 of them pass constraints and may be proposed; 32 may not:"));
  CHECK_THAT(out, Catch::Contains("32 constraint 'batch <= 32 || momentum < 0.95' is false"));
  CHECK_THAT(out, Catch::Contains("the first 3 proposals `run` makes (seed 11)"));

  auto [jrc, json] = Shell(kBinary + " plan --json " + study);
  INFO(json);
  REQUIRE(jrc == 0);
  auto doc = nlohmann::json::parse(json);
  CHECK(doc["region"]["combinations"] == 183);
  CHECK(doc["region"]["configurations"].size() == 183);  // every combination, as before
  CHECK(doc["region"]["proposable"] == 151);
  REQUIRE(doc["region"]["not_proposable"].size() == 1);
  CHECK(doc["region"]["not_proposable"][0]["count"] == 32);
  CHECK(doc["region"]["parameters"].size() == 3);
  const auto& first = doc["region"]["first_proposals"];
  REQUIRE(first.size() == 3);
  for (const auto& p : first) CHECK_THAT(out, Catch::Contains(p["key"].get<std::string>()));

  // The run proposes exactly those first, in that order (every trial fails at the fake sbatch:
  // the start-up draws do not depend on results).
  auto [run_rc, run_out] = Shell(fmt::format("PATH={}:$PATH {} run {}", dir.file("fake"), kBinary, study));
  INFO(run_out);
  auto trials = StoredTrials(dir.file("tpe12.db"), "tpe12");
  REQUIRE(trials.size() >= first.size());
  for (size_t i = 0; i < first.size(); ++i) {
    CHECK(trials[i].trial_key == first[i]["key"].get<std::string>());
    CHECK(nlohmann::json::parse(trials[i].params_json) == first[i]["params"]);
  }
  // A proposal's script, as for a grid's trial.
  auto [src, script] = Shell(kBinary + " plan --script " + first[0]["key"].get<std::string>() + " " + study);
  INFO(script);
  CHECK(src == 0);
  CHECK_THAT(script, Catch::Contains("python3 train.py --lr "));
}

TEST_CASE("plan shows declared paths normalised, and refuses a raw text value and a shape not declared", "[cli]") {
  testing::TempDir dir;
  std::string tables =
      "[job.vars]\ndata = { value = \"/data/./sets//x/../y/\", path = true }\n\n"
      "[space]\nlr = [-0.5, -1e-3]\nout = { values = [\"runs/./a\", \"../b\"], path = true }\n";
  std::string study =
      testing::WriteLocalStudyFile(dir, "paths", "train --data {{data}} --out {{out}} --lr {{lr}}", tables);
  auto [code, out] = Shell(kBinary + " plan " + study);
  INFO(out);
  CHECK(code == 0);
  CHECK_THAT(out, Catch::Contains("path     data = /data/sets/y/ (declared path = true; normalised)") &&
                      Catch::Contains("path     out = runs/a, ../b") && Catch::Contains("lr=-0.5") &&
                      Catch::Contains("lr=-0.001"));
  auto [jcode, json] = testing::RunShell(kBinary + " plan --json " + study);
  REQUIRE(jcode == 0);
  auto doc = nlohmann::json::parse(json);
  CHECK(doc["declared_paths"]["data"][0] == "/data/sets/y/");
  CHECK(doc["declared_paths"]["out"].size() == 2);
  // Undeclared, the same values stop plan at load (exit 2), naming the line and the declaration.
  std::string plain = testing::WriteLocalStudyFile(dir, "plain", "train --out {{out}} --lr {{lr}}",
                                                   "[space]\nlr = [0.1]\nout = [\"../b\"]\n");
  auto [pcode, pout] = Shell(kBinary + " plan " + plain);
  CHECK(pcode == 2);
  CHECK_THAT(pout, Catch::Contains("key 'space.out'") && Catch::Contains("path = true"));
  // {{raw:x}} with a declared text value: refused at load, not rendered verbatim.
  std::string raw = testing::WriteLocalStudyFile(
      dir, "raw", "echo {{raw:x}} {{lr}}", "[space]\nlr = [0.1]\nx = { values = [\"a; touch P\"], text = true }\n");
  auto [rcode, rout] = Shell(kBinary + " plan " + raw);
  CHECK(rcode == 2);
  CHECK_THAT(rout, Catch::Contains("{{raw:x}}") && Catch::Contains("declared text"));
}

TEST_CASE(
    "plan of a tpe study with repeats: the jobs, configurations x seeds, each proposal's seeds, the baseline, "
    "and --script of any seed",
    "[cli][sampler]") {
  testing::TempDir dir;
  // The issue's shape: 12 configurations x 3 seeds of a float lr and batch x sleep (6 combinations), today's
  // settings enqueued first and named the baseline.
  std::string study = testing::WriteLocalStudyFile(
      dir, "tperep", "python3 train.py --lr {{lr}} --batch {{batch}} --sleep {{sleep}} --seed {{seed}}",
      "[search]\nsampler = \"tpe\"\ntrials = 12\nseed = 3\nrepeats = 3\n\n"
      "[[search.enqueue]]\nlr = 0.01\nbatch = 16\nsleep = 0.01\n\n"
      "[report]\nbaseline = { lr = 0.01, batch = 16, sleep = 0.01 }\n\n"
      "[space]\nlr = { min = 1e-4, max = 0.3, log = true }\nbatch = [16, 32]\nsleep = [0.01, 0.02, 0.05]\n");
  auto [rc, out] = Shell(kBinary + " plan " + study);
  INFO(out);
  REQUIRE(rc == 0);
  // Combinations of values: neither the seeds nor the enqueued configuration are more of them (it said 21).
  CHECK_THAT(out, Catch::Contains("its lists and integer ranges form 6 combinations: 6 of them pass constraints"));
  CHECK_THAT(out, Catch::Contains("budget: 12 configurations x 3 seeds = 36 trials, one job each (seed 3; {{seed}} = "
                                  "0, 1, 2); nothing was submitted"));
  auto [jrc, json] = Shell(kBinary + " plan --json " + study);
  INFO(json);
  REQUIRE(jrc == 0);
  auto doc = nlohmann::json::parse(json);
  CHECK(doc["jobs"] == 36);
  CHECK(doc["configurations"] == 12);
  CHECK(doc["seeds"] == 3);
  CHECK(doc["region"]["combinations"] == 6);
  const auto& first = doc["region"]["first_proposals"];
  REQUIRE(first.size() >= 2);
  // The enqueued configuration first, as three trials with seeds 0, 1, 2, the first keeping its key; each
  // configuration's trials on its line of the text.
  CHECK(first[0]["params"] == nlohmann::json::parse(R"({"batch":16,"lr":0.01,"sleep":0.01})"));
  std::vector<std::string> seeded;
  for (const auto& p : first) {
    REQUIRE(p["trials"].size() == 3);
    std::string line;
    for (int seed = 0; seed < 3; ++seed) {
      CHECK(p["trials"][seed]["seed"] == seed);
      line += (seed ? " " : "") + p["trials"][seed]["key"].get<std::string>();
    }
    CHECK(p["trials"][0]["key"] == p["key"]);
    CHECK_THAT(out, Catch::Contains("  " + line + " "));
    seeded.push_back(line);
  }
  CHECK_THAT(out, Catch::Contains("the first " + std::to_string(first.size()) +
                                  " configurations `run` makes (seed 3), each as 3 trial(s), {{seed}} = 0, 1, 2"));
  // The baseline is the enqueued configuration's three trials.
  CHECK_THAT(out, Catch::Contains("baseline: {\"batch\":16,\"lr\":0.01,\"sleep\":0.01} = trial(s) " +
                                  first[0]["trials"][0]["key"].get<std::string>() + ", "));
  CHECK(doc["baseline"]["trials"].size() == 3);
  // One rendered script by default: the first trial's, seed 0.
  std::string key0 = first[0]["trials"][0]["key"];
  CHECK_THAT(out, Catch::Contains("the script of trial " + key0 + " as `run` submits it") &&
                      Catch::Contains("#!/bin/bash\n") && Catch::Contains("--seed '0'"));
  // --script of every seed renders its seed, as `run` does (it said "unknown placeholder '{{seed}}'").
  for (int seed = 0; seed < 3; ++seed) {
    std::string key = first[1]["trials"][seed]["key"];
    auto [src, script] = Shell(kBinary + " plan --script " + key + " " + study);
    INFO(script);
    CHECK(src == 0);
    CHECK_THAT(script, Catch::Contains(fmt::format("--seed '{}'", seed)) &&
                           Catch::Contains("#SBATCH --job-name=ss-tperep-" + key) &&
                           !Catch::Contains("unknown placeholder"));
  }
}

TEST_CASE("plan summarises more than 200 rows: counts per verdict and the first rows; --all lists every one", "[cli]") {
  testing::TempDir dir;
  // 15 x 15 = 225 trials, the constraint drops the 15 with a == b.
  std::string values = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]";
  std::string study = testing::WriteLocalStudyFile(
      dir, "wide", "train --a {{a}} --b {{b}}",
      "[search]\nconstraints = [\"a != b\"]\n\n[space]\na = " + values + "\nb = " + values + "\n");
  auto rows = [](const std::string& text) {
    size_t n = 0;
    for (size_t at = 0; (at = text.find("\nt-", at)) != std::string::npos; ++at) ++n;
    return n + (text.starts_with("t-") ? 1 : 0);
  };
  auto [rc, out] = Shell(kBinary + " plan " + study);
  INFO(out);
  REQUIRE(rc == 0);
  std::string head = out.substr(0, out.find("the script of trial "));
  CHECK(rows(head) == 20);
  CHECK_THAT(out, Catch::Contains("... 205 more of 225 rows (`plan --all` lists every one, `plan --json` too)"));
  CHECK_THAT(out, Catch::Contains("225 trials: 210 to run, 15 dropped by constraints"));
  CHECK_THAT(out, Catch::Contains("jobs: 210 to submit, one per trial"));
  auto [arc, all] = Shell(kBinary + " plan --all " + study);
  REQUIRE(arc == 0);
  CHECK(rows(all.substr(0, all.find("the script of trial "))) == 225);
  CHECK_THAT(all, !Catch::Contains("more of 225 rows") && Catch::Contains("225 trials: 210 to run"));
  auto [jrc, json] = Shell(kBinary + " plan --json " + study);
  REQUIRE(jrc == 0);
  auto doc = nlohmann::json::parse(json);
  CHECK(doc["trials"].size() == 225);
  CHECK(doc["jobs"] == 210);
  CHECK(doc["counts"]["run"] == 210);
  CHECK(doc["counts"]["dropped"] == 15);
  // At 200 rows or fewer, every row as before.
  std::string small = testing::WriteLocalStudyFile(
      dir, "narrow", "train --a {{a}} --b {{b}}", "[space]\na = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\nb = " + values + "\n");
  auto [src, few] = Shell(kBinary + " plan " + small);
  REQUIRE(src == 0);
  CHECK(rows(few.substr(0, few.find("the script of trial "))) == 150);
}
