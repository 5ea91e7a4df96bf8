// Progress and ETA of a study on a fake clock: counts, best so far, elapsed, the ETA's schedule
// from rates and remaining iterations or from completed trials' durations, GPU-hours. Tagged [progress].
#include "cli/progress.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <random>
#include <nlohmann/json.hpp>

#include "tests/fake_slurm.h"

using namespace sweep;
using namespace sweep::cli;

namespace {

ProgressTrial Trial(std::string key, std::string state) {
  ProgressTrial t;
  t.key = std::move(key);
  t.state = std::move(state);
  return t;
}

// A trial running since `started_at`, at step `steps` of `total` at `rate` iterations per second.
ProgressTrial Running(std::string key, double started_at, int64_t steps, std::optional<int64_t> total,
                      std::optional<double> rate) {
  ProgressTrial t = Trial(std::move(key), "running");
  t.started_at = started_at;
  t.steps = steps;
  t.total_steps = total;
  t.iters_per_s = rate;
  return t;
}

ProgressTrial Completed(std::string key, double started_at, double run_s, std::optional<double> objective) {
  ProgressTrial t = Trial(std::move(key), "completed");
  t.started_at = started_at;
  t.ended_at = started_at + run_s;
  t.run_s = run_s;
  t.objective = objective;
  return t;
}

}  // namespace

TEST_CASE("progress counts trials by outcome; dropped trials are not part of the total", "[progress]") {
  std::vector<ProgressTrial> trials = {Trial("a", "completed"),  Trial("b", "cuda_oom"), Trial("c", "pruned"),
                                       Trial("d", "running"),    Trial("e", "pending"),  Trial("f", "new"),
                                       Trial("g", "submitting"), Trial("h", "dropped"),  Trial("i", "cancelled")};
  Progress p = ComputeProgress(trials, {}, 0);
  CHECK(p.total == 8);
  CHECK(p.completed == 1);
  CHECK(p.failed == 1);
  CHECK(p.cancelled == 2);
  CHECK(p.pruned == 1);
  CHECK(p.running == 1);
  CHECK(p.queued == 3);
  CHECK(p.dropped == 1);
  CHECK(p.done() == 4);
  CHECK(p.percent() == Approx(100.0 * 4 / 8));
  // A trial the stopping rules pruned is shown as pruned, not as cancelled (a user reading "6 cancelled" for a
  // study whose rules pruned six would look for who cancelled them).
  std::string line = RenderProgressLine(p, {});
  CHECK_THAT(line, Catch::Contains("4/8 done (50%) [1 completed, 1 failed, 1 pruned, 1 cancelled]; 1 running, "
                                   "3 queued; 1 dropped by constraints"));
  nlohmann::json j = ProgressJson(p);
  CHECK(j["cancelled"] == 2);
  CHECK(j["pruned"] == 1);
  // Only pruned trials ended: no "cancelled" count at all.
  Progress only_pruned = ComputeProgress({Trial("a", "pruned"), Trial("b", "pruned")}, {}, 0);
  std::string pruned_line = RenderProgressLine(only_pruned, {});
  CHECK_THAT(pruned_line, Catch::Contains("2/2 done (100%) [2 pruned]"));
  CHECK_THAT(pruned_line, !Catch::Contains("cancelled"));
  // The change key moves when a cancelled trial turns out to be pruned, so the line is printed again.
  CHECK(ProgressChangeKey(only_pruned) !=
        ProgressChangeKey(ComputeProgress({Trial("a", "pruned"), Trial("b", "cancelled")}, {}, 0)));
}

TEST_CASE("the ETA comes from each running trial's rate and remaining iterations, queued trials fill free slots",
          "[progress]") {
  testing::FakeClock clock;
  double t0 = clock.Now();
  ProgressOptions o;
  o.max_concurrent = 2;
  // a: 500 of 1000 iterations left at 10/s (50 s); b: 1000 left at 5/s (200 s). Nothing has
  // completed, so a queued trial is expected to take the running trials' mean full run:
  // (1000/10 + 1000/5) / 2 = 150 s. q1 takes a's slot at 50 s (ends 200 s), q2 b's at 200 s (350 s).
  std::vector<ProgressTrial> trials = {Running("a", t0, 500, 1000, 10.0), Running("b", t0, 0, 1000, 5.0),
                                       Trial("q1", "pending"), Trial("q2", "new")};
  Progress p = ComputeProgress(trials, o, clock.Now());
  REQUIRE(p.eta_s);
  CHECK(*p.eta_s == Approx(350));
  CHECK_THAT(p.eta_basis, Catch::Contains("rates"));

  // 100 s later both moved on at their rates: the ETA has come 100 s closer.
  clock.Advance(100);
  trials[0].steps = 1000;  // a is at its end (the job not yet seen ending): no time left
  trials[1].steps = 500;
  p = ComputeProgress(trials, o, clock.Now());
  REQUIRE(p.eta_s);
  CHECK(*p.eta_s == Approx(250));
  CHECK(p.elapsed_s == Approx(100));

  // More slots than trials, and no job pending on the cluster (q1 not submitted yet either): the queued
  // ones start at once, the ETA is the longest run.
  o.max_concurrent = 8;
  trials[2].state = "new";
  p = ComputeProgress(trials, o, clock.Now());
  CHECK(*p.eta_s == Approx(150));
}

TEST_CASE("while the cluster keeps jobs pending beside fewer running than max_concurrent, the ETA has its slots",
          "[progress]") {
  testing::FakeClock clock;
  double t0 = clock.Now();
  clock.Advance(100);
  ProgressOptions o;
  o.max_concurrent = 100;
  // 3 running (each 10 s left by its rate), 3 completed in 60 s each, 12 pending on the cluster: the
  // cluster runs 3 at a time, so the 12 go in 4 rounds of 60 s after the first 10 s: 250 s.
  std::vector<ProgressTrial> trials;
  for (int i = 0; i < 3; ++i) trials.push_back(Completed(fmt::format("c{}", i), t0, 60, 2.0));
  for (int i = 0; i < 3; ++i) trials.push_back(Running(fmt::format("r{}", i), t0 + 40, 500, 600, 10.0));
  for (int i = 0; i < 12; ++i) trials.push_back(Trial(fmt::format("p{}", i), "pending"));
  Progress p = ComputeProgress(trials, o, clock.Now());
  REQUIRE(p.eta_s);
  CHECK(*p.eta_s == Approx(10 + 4 * 60));
  CHECK_THAT(p.eta_basis, Catch::Contains("3 at a time, as the cluster runs them now"));
  // Not submitted yet (held back by the study itself): max_concurrent's slots, all 12 at once (60 s).
  for (auto& t : trials) {
    if (t.state == "pending") t.state = "new";
  }
  p = ComputeProgress(trials, o, clock.Now());
  CHECK(*p.eta_s == Approx(60));
  CHECK_THAT(p.eta_basis, !Catch::Contains("at a time"));
  // As many running as max_concurrent: the study's bound, whatever is pending.
  o.max_concurrent = 3;
  trials.back().state = "pending";
  p = ComputeProgress(trials, o, clock.Now());
  CHECK(*p.eta_s == Approx(10 + 4 * 60));
  CHECK_THAT(p.eta_basis, !Catch::Contains("at a time"));
}

TEST_CASE("without rates, the ETA comes from the median duration of completed trials", "[progress]") {
  testing::FakeClock clock;
  double t0 = clock.Now();
  clock.Advance(1000);
  ProgressOptions o;
  o.max_concurrent = 1;
  // Completed in 100, 300 and 200 s: median 200. The running trial (no rate: a jsonl log without
  // a total) started 50 s ago, so 150 s remain; then two queued trials of 200 s each, one at a time.
  std::vector<ProgressTrial> trials = {Completed("c1", t0, 100, 2.0),
                                       Completed("c2", t0 + 100, 300, 1.5),
                                       Completed("c3", t0 + 400, 200, 1.8),
                                       Running("r", clock.Now() - 50, 30, std::nullopt, 3.0),
                                       Trial("q1", "new"),
                                       Trial("q2", "new")};
  Progress p = ComputeProgress(trials, o, clock.Now());
  REQUIRE(p.eta_s);
  CHECK(*p.eta_s == Approx(150 + 200 + 200));
  CHECK_THAT(p.eta_basis, Catch::Contains("completed trials' durations"));
  CHECK(p.elapsed_s == Approx(1000));  // from the first start

  // A running trial with a known total and rate uses its own rate; the queued ones still the median.
  trials[3].total_steps = 330;  // 300 left at 3/s: 100 s
  p = ComputeProgress(trials, o, clock.Now());
  CHECK(*p.eta_s == Approx(100 + 200 + 200));
  CHECK_THAT(p.eta_basis, Catch::Contains("rates and completed trials' durations"));
}

TEST_CASE("the ETA is unknown, not guessed, while some trial has no estimate at all", "[progress]") {
  testing::FakeClock clock;
  std::vector<ProgressTrial> trials = {Running("t-abc", clock.Now(), 10, std::nullopt, 2.0), Trial("q", "new")};
  Progress p = ComputeProgress(trials, {}, clock.Now());
  CHECK_FALSE(p.eta_s);
  CHECK_THAT(p.eta_basis, Catch::Contains("t-abc"));
  CHECK_THAT(RenderProgressLine(p, {}), Catch::Contains("ETA unknown"));
  // Only queued trials and nothing to go on.
  p = ComputeProgress({Trial("q", "new")}, {}, clock.Now());
  CHECK_FALSE(p.eta_s);
}

TEST_CASE("once every trial ended: ETA 0, elapsed up to the last end whatever the clock says", "[progress]") {
  testing::FakeClock clock;
  double t0 = clock.Now();
  std::vector<ProgressTrial> trials = {Completed("a", t0, 100, 1.0), Completed("b", t0 + 50, 200, 0.5)};
  clock.Advance(5000);
  Progress p = ComputeProgress(trials, {}, clock.Now());
  REQUIRE(p.eta_s);
  CHECK(*p.eta_s == 0);
  CHECK(p.elapsed_s == Approx(250));
}

TEST_CASE("best so far follows the objective's direction and skips NaN; GPU-hours from every trial's run time",
          "[progress]") {
  std::vector<ProgressTrial> trials = {Completed("lo", 0, 3600, 1.0), Completed("hi", 0, 1800, 3.0),
                                       Completed("nan", 0, 1800, std::nan(""))};
  ProgressTrial r = Running("run", 0, 5, std::nullopt, std::nullopt);
  r.run_s = 1800;
  r.objective = 2.0;
  trials.push_back(r);
  ProgressOptions o;
  o.objective = "val_acc";
  o.gpus_per_trial = 8;
  o.minimize = true;
  Progress p = ComputeProgress(trials, o, 3600);
  CHECK(p.best_trial == "lo");
  CHECK(p.best_value == 1.0);
  CHECK(p.gpu_hours == Approx((3600 + 1800 + 1800 + 1800) * 8 / 3600.0));
  o.minimize = false;
  p = ComputeProgress(trials, o, 3600);
  CHECK(p.best_trial == "hi");
  std::string block = RenderProgressBlock(p, o);
  CHECK_THAT(block, Catch::Contains("best val_acc (max): 3 in hi (completed)"));
  CHECK_THAT(block, Catch::Contains("20.0 GPU-hours used"));
  CHECK(std::count(block.begin(), block.end(), '\n') == 3);
  nlohmann::json best = BestJson(p, o);
  CHECK(best["trial"] == "hi");
  CHECK(best["goal"] == "max");
  CHECK(ProgressJson(p)["completed"] == 3);
  // CPU jobs: no GPU-hours shown.
  o.gpus_per_trial = 0;
  CHECK_THAT(RenderProgressBlock(p, o), !Catch::Contains("GPU-hours"));
}

TEST_CASE("a pipe gets a new progress line when counts or the best change, not when only time passes", "[progress]") {
  std::vector<ProgressTrial> trials = {Running("a", 0, 10, 100, 1.0), Trial("b", "new")};
  std::string k1 = ProgressChangeKey(ComputeProgress(trials, {}, 10));
  CHECK(ProgressChangeKey(ComputeProgress(trials, {}, 500)) == k1);
  trials[1].state = "running";
  CHECK(ProgressChangeKey(ComputeProgress(trials, {}, 500)) != k1);
}

TEST_CASE("durations read as people write them", "[progress]") {
  CHECK(FormatDuration(42) == "42s");
  CHECK(FormatDuration(725) == "12m05s");
  CHECK(FormatDuration(3 * 3600 + 5 * 60 + 9) == "3h05m");
  CHECK(FormatDuration(2 * 86400 + 4 * 3600) == "2d04h");
  CHECK(FormatDuration(-5) == "0s");
}

TEST_CASE("a trial key with control characters reaches the block escaped", "[progress]") {
  std::vector<ProgressTrial> trials = {Completed("t-\x1b[31mred", 0, 10, 1.0)};
  ProgressOptions o;
  o.objective = "loss";
  std::string block = RenderProgressBlock(ComputeProgress(trials, o, 10), o);
  CHECK(block.find('\x1b') == std::string::npos);
  CHECK_THAT(block, Catch::Contains("t-\\e[31mred"));
}

TEST_CASE("the best trial is the best among completed trials only: a failed, pruned or running one never is",
          "[progress]") {
  ProgressOptions o;
  o.objective = "lm_loss";
  o.minimize = true;
  std::vector<ProgressTrial> trials = {Completed("done", 0, 100, 2.5)};
  for (const char* state : {"failed", "cuda_oom", "pruned", "cancelled", "running", "timeout"}) {
    ProgressTrial t = Trial(std::string("t-") + state, state);
    t.objective = 0.1;  // better than the completed one: where it stopped, not a result
    trials.push_back(t);
  }
  Progress p = ComputeProgress(trials, o, 100);
  CHECK(p.best_trial == "done");
  CHECK_THAT(RenderProgressBlock(p, o), Catch::Contains("best lm_loss (min): 2.5 in done (completed)"));
  // With repeats the recommendation is a configuration by its mean: this line is one seed's.
  ProgressOptions seeds = o;
  seeds.repeats = 3;
  CHECK_THAT(RenderProgressBlock(p, seeds), Catch::Contains("best single seed's lm_loss (min): 2.5 in done"));
  trials.erase(trials.begin());
  p = ComputeProgress(trials, o, 100);
  CHECK_FALSE(p.best_trial);
  CHECK_THAT(RenderProgressBlock(p, o), Catch::Contains("best lm_loss: none yet"));

  // Property: over random states and values the best is the extreme over completed trials.
  std::mt19937 rng(45);
  const std::vector<std::string> states = {"completed", "failed", "pruned", "running", "pending", "cuda_oom"};
  for (int round = 0; round < 200; ++round) {
    std::vector<ProgressTrial> random;
    std::optional<double> expected;
    for (int i = 0; i < 1 + static_cast<int>(rng() % 8); ++i) {
      ProgressTrial t = Trial("t" + std::to_string(i), states[rng() % states.size()]);
      t.objective = static_cast<double>(rng() % 1000) / 10;
      if (t.state == "completed") expected = std::min(expected.value_or(*t.objective), *t.objective);
      random.push_back(t);
    }
    Progress r = ComputeProgress(random, o, 100);
    REQUIRE(r.best_trial.has_value() == expected.has_value());
    if (expected) CHECK(r.best_value == *expected);
  }
}

TEST_CASE("a tpe study's progress and ETA count its whole budget, not only the trials proposed so far", "[progress]") {
  testing::FakeClock clock;
  double t0 = clock.Now();
  clock.Advance(100);
  // The study: 12 configurations x 3 seeds = 36 trials, 18 proposed so far, 13 of them
  // ended (each in 10 s), 2 running with 5 s left, 3 queued; two slots.
  ProgressOptions o;
  o.max_concurrent = 2;
  o.budget = 36;
  std::vector<ProgressTrial> trials;
  for (int i = 0; i < 13; ++i) trials.push_back(Completed(fmt::format("c{}", i), t0 + i, 10, 1.0 + i));
  for (int i = 0; i < 2; ++i) trials.push_back(Running(fmt::format("r{}", i), clock.Now() - 5, 50, 100, 10.0));
  trials.push_back(Trial("q1", "new"));
  trials.push_back(Trial("q2", "pending"));
  trials.push_back(Trial("q3", "submitting"));
  ProgressOptions so_far = o;
  so_far.budget = 0;  // as before: only the trials proposed so far
  CHECK(*ComputeProgress(trials, so_far, clock.Now()).eta_s == Approx(5 + 2 * 10));
  Progress p = ComputeProgress(trials, o, clock.Now());
  CHECK(p.total == 36);
  CHECK(p.to_propose == 18);
  CHECK(p.queued == 3);
  CHECK_THAT(RenderProgressLine(p, o),
             Catch::Contains("13/36 done (36%)") && Catch::Contains("3 queued, 18 to propose"));
  // Both slots free after 5 s, then 21 queued or to propose trials of 10 s (the completed ones' median) over two
  // slots: 11 rounds.
  REQUIRE(p.eta_s);
  CHECK(*p.eta_s == Approx(5 + 11 * 10));
  CHECK(ProgressJson(p)["to_propose"] == 18);
  // Every trial ended and none open: the sampler has ended (or found nothing more): what ran is the total.
  std::vector<ProgressTrial> ended(trials.begin(), trials.begin() + 13);
  Progress done = ComputeProgress(ended, o, clock.Now());
  CHECK(done.total == 13);
  CHECK(done.to_propose == 0);
  CHECK(*done.eta_s == 0);
  // More trials than the budget (run --repeat-top added seeds): nothing is left to propose.
  o.budget = 10;
  CHECK(ComputeProgress(trials, o, clock.Now()).to_propose == 0);
}
