// The run loop against a fake Slurm (tests/fake_slurm.h) on logs that have lines and yield no
// point (run/log_format_check.h): the study stops submitting at the first trial and names the
// format that parses the lines, and once the study file is fixed the stored logs are read again.
#include <catch2/catch.hpp>

#include "run/runner.h"
#include "tests/fake_sweep.h"

using namespace sweep;
using testing::FakeSweep;

namespace {

std::string JsonLines(int from, int to) {
  std::string out;
  for (int i = from; i <= to; ++i)
    out += fmt::format("{{\"step\": {}, \"lm_loss\": {}, \"time\": {}}}\n", i, 3.0 - 0.1 * i, i);
  return out;
}

}  // namespace

TEST_CASE("metric_format is auto by default: a JSON-lines trainer's log is read without a word", "[runner]") {
  FakeSweep s("[space]\nlr = [0.1]\n", 1);
  CHECK(s.study().metric_format.format == MetricFormat::kAuto);
  s.Tick();
  s.slurm.Start("100");
  s.slurm.AppendLog("100", "loading data\n" + JsonLines(1, 3));
  s.Tick();
  CHECK(s.Loss(s.Trial("0.1")).size() == 3);
}

TEST_CASE(
    "a log read in the wrong format stops submission at the first trial and names the format that parses it; "
    "fixed, the run reads the stored log again",
    "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2, 0.3]\n", 1, "queue_ahead = 0");
  s.EditStudy("name = \"fk\"\n", "name = \"fk\"\nmetric_format = \"megatron\"\n");
  s.Tick();
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  s.slurm.Start("100");
  s.slurm.AppendLog("100", "starting\n" + JsonLines(1, 5));
  auto stopped = s.runner().Tick();
  INFO(s.log());
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(stopped.status().message(),
             Catch::Contains("yielded no metric point with metric_format = \"megatron\"") &&
                 Catch::Contains("its lines parse as \"jsonl\"") && Catch::Contains("Submission stopped") &&
                 Catch::Contains("set [study] metric_format = \"jsonl\"") && Catch::Contains("begins:\n    starting"));
  CHECK(s.Events("no_points") == 1);
  CHECK(s.slurm.issued("sbatch").size() == 1);

  // The job goes on without a run and ends; the user fixes the format and runs again.
  s.slurm.AppendLog("100", JsonLines(6, 8));
  s.slurm.End("100", "COMPLETED");
  s.EditStudy("metric_format = \"megatron\"", "metric_format = \"jsonl\"");
  s.Tick();
  INFO(s.log());
  auto t = s.Trial("\"lr\":0.1");
  CHECK(t.state == "completed");
  CHECK(s.Loss(t).size() == 8);  // every line, from the log's start
  CHECK(s.Events("reread") == 1);
  CHECK(s.slurm.issued("sbatch").size() == 2);  // and the sweep goes on
}

TEST_CASE(
    "a completed trial whose log no format reads stops the study, again on a rerun as it is, until the format "
    "is fixed; then the ended trial's log is read again",
    "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2]\n", 1, "queue_ahead = 0");
  s.Tick();
  s.slurm.Start("100");
  std::string plain;
  for (int i = 1; i <= 4; ++i) plain += fmt::format("step {} loss {}\n", i, 3.0 - 0.5 * i);
  s.slurm.AppendLog("100", plain);
  s.Tick();  // running, nothing recognized yet: a trainer may print a banner first
  s.slurm.End("100", "COMPLETED");
  auto stopped = s.runner().Tick();
  REQUIRE_FALSE(stopped.ok());
  CHECK_THAT(stopped.status().message(),
             Catch::Contains("with metric_format = \"auto\"; no known format recognizes its lines") &&
                 Catch::Contains("[study.metric_regex]"));
  CHECK(s.Trial("\"lr\":0.1").state == "completed");
  CHECK(s.slurm.issued("sbatch").size() == 1);

  // Run again unchanged: stopped at once, before the second trial is submitted.
  s.Restart();
  auto again = s.runner().Tick();
  REQUIRE_FALSE(again.ok());
  CHECK_THAT(again.status().message(), Catch::Contains("no known format recognizes its lines"));
  CHECK(s.slurm.issued("sbatch").size() == 1);

  // A format of its own, as the message says: the completed trial's log is read again.
  s.EditStudy("name = \"fk\"\n",
              "name = \"fk\"\nmetric_format = \"regex\"\n\n[study.metric_regex]\nstep = 'step (\\d+)'\n"
              "lm_loss = 'loss ([0-9.]+)'\n");
  s.Tick();
  INFO(s.log());
  CHECK(s.Loss(s.Trial("\"lr\":0.1")) == std::vector<double>{2.5, 2.0, 1.5, 1.0});
  CHECK(s.slurm.issued("sbatch").size() == 2);
}

TEST_CASE("a crash before the first metric line is no format problem: the log yields nothing and no verdict",
          "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2]\n", 1, "queue_ahead = 0");
  s.Tick();
  s.slurm.Start("100");
  s.slurm.AppendLog("100", "Traceback (most recent call last):\nValueError: bad lr\n");
  s.slurm.End("100", "FAILED", 3);
  s.Tick();
  CHECK(s.Events("no_points") == 0);
  CHECK(s.slurm.issued("sbatch").size() == 2);
  CHECK_THAT(s.Trial("\"lr\":0.1").reason, Catch::StartsWith("exit code 3") && Catch::EndsWith(": ValueError: bad lr"));
}
