// Tests of the replay workload (examples/workload/megatron_replay.cc) through its built binary: a
// recorded Megatron-LM run comes out as lines our parser reads back into the recorded losses, settings
// nobody recorded are refused with the nearest ones, SIGTERM stops it, and every trial of
// examples/megatron-replay.toml replays from the files the study stages. Tagged [replay].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "logs/metrics_parser.h"
#include "run/trial_script.h"
#include "study/space.h"
#include "study/loader.h"
#include "slurm/sbatch_script.h"
#include "slurm/transport.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

const std::string kSourceDir = SLURMSWEEP_SOURCE_DIR;
const std::string kReplay = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/megatron_replay";

slurm::CommandOutput Run(const std::string& command) {
  auto out = slurm::NewLocalTransport()->Run(command);
  REQUIRE(out.ok());
  return *out;
}

// The replay on the whole recorded data (bench/data) with a clock fast enough to take no time.
slurm::CommandOutput Replay(const std::vector<std::string>& args) {
  std::string cmd = fmt::format("{} --data {} --speedup 1e6", slurm::ShellQuote(kReplay),
                                slurm::ShellQuote(kSourceDir + "/bench/data"));
  for (const auto& a : args) cmd += " " + slurm::ShellQuote(a);
  return Run(cmd);
}

struct RecordedStep {
  int64_t step = 0;
  std::string loss, time_s;  // as written in curves.csv
};

std::vector<RecordedStep> RecordedCurve(const std::string& case_name) {
  std::ifstream in(kSourceDir + "/bench/data/curves.csv");
  std::vector<RecordedStep> out;
  std::string line;
  while (std::getline(in, line)) {
    auto cells = testing::SplitCsvLine(line);
    if (cells.size() >= 5 && cells[0] == case_name) out.push_back({std::stoll(cells[2]), cells[3], cells[4]});
  }
  return out;
}

std::vector<MetricPoint> Points(const std::string& log, const std::string& name) {
  logs::ParserState state;
  logs::ParseOutput parsed = logs::ParseMetrics(log, MetricFormat::kMegatron, state);
  CHECK(parsed.malformed == 0);
  std::vector<MetricPoint> out;
  for (const MetricPoint& p : parsed.points) {
    if (p.name == name) out.push_back(p);
  }
  return out;
}

// Every recorded step once, with exactly the recorded loss.
void CheckLossesAreRecorded(const std::string& log, const std::vector<RecordedStep>& recorded) {
  std::vector<MetricPoint> loss = Points(log, "lm_loss");
  REQUIRE(loss.size() == recorded.size());
  for (size_t i = 0; i < loss.size(); ++i) {
    INFO("step " << recorded[i].step);
    CHECK(loss[i].step == recorded[i].step);
    CHECK(loss[i].value == std::stod(recorded[i].loss));
  }
}

// The settings of one recorded run and of a run logged every 5th step.
const std::vector<std::string> kTp4Pp2 = {
    "--tensor-model-parallel-size",
    "4",
    "--pipeline-model-parallel-size",
    "2",
    "--micro-batch-size",
    "4",
    "--use-distributed-optimizer",
    "true",
    "--train-iters",
    "100",
};

}  // namespace

TEST_CASE("the replay prints a recorded run's losses and times as Megatron lines our parser reads back", "[replay]") {
  auto out = Replay(kTp4Pp2);
  INFO(out.err);
  REQUIRE(out.exit_code == 0);
  const std::string name = "gpt3_mcore_te_tp4_pp2_resume_torch_dist_reshard_8x1xNone";
  CHECK_THAT(out.out, Catch::Contains("> replaying recorded run " + name + " (golden_values_dev_dgx_h100)"));
  std::vector<RecordedStep> recorded = RecordedCurve(name);
  REQUIRE(recorded.size() == 100);
  CheckLossesAreRecorded(out.out, recorded);

  std::vector<MetricPoint> times = Points(out.out, "iter_time_ms");
  REQUIRE(times.size() == 100);
  // Step 1 has no time and step 2's includes start-up (5 s): both are the run's median step time.
  REQUIRE(recorded[1].time_s == "4.99548");
  CHECK(times[0].value == times[1].value);
  CHECK(times[1].value < 250);
  for (size_t i = 2; i < times.size(); ++i) {
    INFO("step " << recorded[i].step);
    CHECK(std::abs(times[i].value - 1e3 * std::stod(recorded[i].time_s)) <= 0.05 + 1e-9);
  }
  // The parser's time axis is then the recorded training time without start-up: about 100 x 0.2 s.
  CHECK(times.back().time_s == Approx(19.5).margin(0.5));
  CHECK_THAT(out.out, Catch::Contains("iteration      100/     100 | consumed samples:         3200 |"));
}

TEST_CASE("of several recorded runs with the settings asked, the replay picks the fullest and says which", "[replay]") {
  const std::string full = "gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer";
  const std::string every5 = "gpt3_mcore_te_tp1_pp1_frozen_resume_torch_dist_dist_optimizer";
  auto out = Replay({"--tensor-model-parallel-size", "1", "--pipeline-model-parallel-size", "1", "--train-iters", "100",
                     "--use-distributed-optimizer", "true", "--recompute-granularity", "none", "--precision", "bf16"});
  INFO(out.err);
  REQUIRE(out.exit_code == 0);
  CHECK_THAT(out.err, Catch::Contains("2 recorded runs have the settings") && Catch::Contains("replaying " + full) &&
                          Catch::Contains(every5));
  CheckLossesAreRecorded(out.out, RecordedCurve(full));

  // By name: the run logged every 5th step, each line standing for the steps since the last.
  auto named = Replay({"--case", every5, "--tensor-model-parallel-size", "1"});
  INFO(named.err);
  REQUIRE(named.exit_code == 0);
  CHECK(named.err.empty());
  std::vector<RecordedStep> recorded = RecordedCurve(every5);
  REQUIRE(recorded.size() == 21);
  CheckLossesAreRecorded(named.out, recorded);
}

TEST_CASE("settings nobody recorded exit 2 and name the nearest recorded ones", "[replay]") {
  std::vector<std::string> args = kTp4Pp2;
  args[1] = "8";  // TP8 x PP2 would need 16 GPUs
  auto out = Replay(args);
  CHECK(out.exit_code == 2);
  CHECK(out.out.empty());
  CHECK_THAT(out.err, Catch::Contains("no recorded run has the settings --micro-batch-size 4 "
                                      "--tensor-model-parallel-size 8"));
  CHECK_THAT(out.err, Catch::Contains("nearest recorded settings (1 setting differs):\n"));
  CHECK_THAT(out.err, Catch::Contains("gpt3_mcore_te_tp4_pp2_resume_torch_dist_reshard_8x1xNone "
                                      "(golden_values_dev_dgx_h100): --tensor-model-parallel-size 4"));

  auto unknown = Replay({"--case", "gpt3_no_such_case"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.err, Catch::Contains("no recorded run is named gpt3_no_such_case"));
  auto not_a_flag = Replay({"--sequence-parallel", "yes"});
  CHECK(not_a_flag.exit_code == 2);
  CHECK_THAT(not_a_flag.err, Catch::Contains("invalid value 'yes' for --sequence-parallel (expected true or false)"));
  auto no_data = Run(slurm::ShellQuote(kReplay) + " --data /nonexistent");
  CHECK(no_data.exit_code == 1);
  CHECK_THAT(no_data.err, Catch::Contains("cannot read /nonexistent/cases.csv"));
}

TEST_CASE("the replay reads CSV as other tools write it", "[replay]") {
  // The example data rewritten with a BOM, CRLF line ends, a comment, blank lines, columns in
  // another order, quoted and space-padded cells: the same run must come out.
  const std::string clean = kSourceDir + "/examples/data/megatron-replay";
  testing::TempDir dir;
  for (const std::string name : {"cases.csv", "curves.csv"}) {
    std::ifstream in(clean + "/" + name);
    std::string line, out = "\xEF\xBB\xBF# copied for a test\r\n\r\n";
    for (int row = 0; std::getline(in, line); ++row) {
      std::vector<std::string> cells = testing::SplitCsvLine(line);
      std::rotate(cells.begin(), cells.begin() + 1, cells.end());  // the first column last
      for (size_t i = 0; i < cells.size(); ++i) {
        out += i ? "," : "";
        out += i % 2 ? fmt::format("\"{}\"", cells[i]) : fmt::format(" {} ", cells[i]);
      }
      out += row % 7 == 3 ? "\r\n\r\n" : "\r\n";
    }
    testing::WriteAll(dir.file(name), out);
  }
  auto replay = [&](const std::string& data) {
    auto out =
        Run(fmt::format("{} --data {} --speedup 1e6 --tensor-model-parallel-size 2 | grep -v '^>' | "
                        "sed 's/[0-9-]* [0-9:]*]/TIME]/; s/datetime: .*/datetime:/'",
                        slurm::ShellQuote(kReplay), slurm::ShellQuote(data)));
    INFO(out.err);
    CHECK(out.exit_code == 0);
    return out.out;
  };
  std::string expected = replay(clean);
  CHECK_THAT(expected, Catch::Contains("iteration      100/     100 |"));
  CHECK(replay(dir.path().string()) == expected);
}

TEST_CASE("the replay stops at once on SIGTERM", "[replay]") {
  testing::TempDir dir;
  // 100x slower than recorded, the run would take 9 minutes; the signal comes once training has begun.
  std::string cmd = fmt::format(
      "{} --data {} --speedup 0.01 --case gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer > {} & pid=$!\n"
      "for i in $(seq 100); do grep -q '^training' {} && break; sleep 0.05; done\n"
      "kill -TERM $pid; wait $pid; echo \"exit $?\"",
      slurm::ShellQuote(kReplay), slurm::ShellQuote(kSourceDir + "/examples/data/megatron-replay"),
      slurm::ShellQuote(dir.file("log")), slurm::ShellQuote(dir.file("log")));
  auto start = std::chrono::steady_clock::now();
  auto out = Run(cmd);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO(out.err);
  CHECK(out.out == "exit 143\n");
  CHECK(secs < 10);
  CHECK_THAT(testing::ReadAll(dir.file("log")), Catch::Contains("received signal, exiting at iteration 0\n"));
}

TEST_CASE("every trial of examples/megatron-replay.toml replays a recorded run from the staged files", "[replay]") {
  auto study = study::LoadStudy(kSourceDir + "/examples/megatron-replay.toml");
  INFO((study.ok() ? "" : study.status().ToString()));
  REQUIRE(study.ok());
  auto trials = study::ExpandSpace(*study);
  REQUIRE(trials.ok());
  // The work directory as the runner leaves it: every staged file under its base name.
  testing::TempDir dir;
  for (const std::string& path : study->job.stage) {
    std::filesystem::copy_file(path, dir.path() / std::filesystem::path(path).filename());
  }
  const std::map<std::string, std::string> expected = {
      {"tp=1 pp=1", "gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer"},
      {"tp=2 pp=1", "gpt3_mcore_te_tp2_pp1_resume_torch_dist_multi_dist_optimizer_instances"},
      {"tp=4 pp=1", "gpt3_mcore_te_tp4_pp1_resume_torch_dist_dist_optimizer_overlap_grad_reduce"},
      {"tp=4 pp=2", "gpt3_mcore_te_tp4_pp2_resume_torch_dist_reshard_8x1xNone"},
  };
  int replayed = 0, dropped = 0;
  for (const TrialSpec& trial : *trials) {
    if (!trial.dropped_reason.empty()) {
      ++dropped;
      continue;
    }
    std::map<std::string, std::string> vars = study->job.vars;
    for (const auto& [name, value] : trial.params) vars[name] = ParamToString(value);
    const std::string label = fmt::format("tp={} pp={}", vars["tp"], vars["pp"]);
    INFO(label);
    vars["speedup"] = "1e6";
    vars["study"] = study->name;
    vars["trial"] = trial.key;
    vars["attempt"] = "1";
    vars["workdir"] = dir.path().string();
    vars["trial_dir"] = dir.file("trials/" + trial.key);
    vars["log"] = dir.file(trial.key + ".log");
    vars["nodes"] = std::to_string(study->job.nodes);
    vars["gpus_per_node"] = std::to_string(study->job.gpus_per_node);
    vars["gpus"] = std::to_string(study->job.nodes * study->job.gpus_per_node);
    vars["cpus_per_task"] = std::to_string(study->job.cpus_per_task);
    auto script =
        slurm::RenderTemplate(study->job.template_text, study->job.template_path, vars, run::Declared(*study));
    REQUIRE(script.ok());
    testing::WriteAll(dir.file("job.sh"), *script);
    auto out = Run("bash " + slurm::ShellQuote(dir.file("job.sh")));
    INFO(out.err);
    REQUIRE(out.exit_code == 0);
    CHECK(out.err.empty());  // exactly one recorded run per trial
    REQUIRE(expected.count(label));
    CHECK_THAT(out.out, Catch::Contains("> replaying recorded run " + expected.at(label) + " "));
    CheckLossesAreRecorded(out.out, RecordedCurve(expected.at(label)));
    ++replayed;
  }
  CHECK(replayed == 4);
  CHECK(dropped == 2);
}
