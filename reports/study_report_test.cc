// Tests of the report's analysis on plain data: smoothing and reaching the target, the speedup
// decomposition, ranking, recommendation and cost.
#include "reports/study_report.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>

namespace sweep::reports {
namespace {

TrialSummary Trial(int64_t id, const std::string& state, std::optional<double> final_value,
                   std::optional<double> iters_per_s, std::optional<int64_t> steps_to_target) {
  TrialSummary t;
  t.id = id;
  t.key = "t-" + std::to_string(id);
  t.state = state;
  t.final_value = final_value;
  t.iters_per_s = iters_per_s;
  t.steps_to_target = steps_to_target;
  return t;
}

TEST_CASE("Throughput factor x convergence factor = time-to-target factor", "[report]") {
  TrialSummary base = Trial(1, "completed", 2.5, 2.0, 3000);
  TrialSummary cand = Trial(2, "completed", 2.4, 3.4, 2000);
  auto d = Decompose(cand, base);
  REQUIRE(d);
  REQUIRE(d->throughput == Approx(1.7));
  REQUIRE(d->convergence == Approx(1.5));
  REQUIRE(d->time_to_target == Approx(d->throughput * d->convergence));
  // And it is the ratio of the times to target, by definition of those times.
  REQUIRE(d->time_to_target == Approx(*TimeToTarget(base) / *TimeToTarget(cand)));
  REQUIRE(*TimeToTarget(base) == Approx(1500));

  REQUIRE(!Decompose(Trial(3, "completed", 2.4, 3.4, std::nullopt), base));  // never reached the target
  REQUIRE(!Decompose(Trial(3, "completed", 2.4, std::nullopt, 100), base));  // no throughput
}

TEST_CASE("Ranked by time to target, the quickest to the target is recommended over the best final value", "[report]") {
  StudyReport r;
  r.meta.minimize = true;
  r.meta.rank_by_time_to_target = true;
  // 1: best final loss but slow (3000 steps at 1 iter/s = 3000 s); 2: reaches the target in
  // 2000 steps at 2 iter/s = 1000 s; 3: completed, never reached the target; 4: running, quicker.
  r.trials = {Trial(1, "completed", 2.0, 1.0, 3000), Trial(2, "completed", 2.3, 2.0, 2000),
              Trial(3, "completed", 2.6, 4.0, std::nullopt), Trial(4, "running", 2.4, 3.0, 1000)};
  Analysis a = Analyze(r);
  REQUIRE(a.ranking == std::vector<size_t>{1, 0, 2, 3});
  REQUIRE(a.recommended == size_t{1});
  REQUIRE(a.fastest == size_t{1});
  // By final value (the default) the slow one wins.
  r.meta.rank_by_time_to_target = false;
  REQUIRE(Analyze(r).recommended == size_t{0});
}

TEST_CASE("Analyze ranks completed trials by objective and recommends the best", "[report]") {
  StudyReport r;
  r.meta.minimize = true;
  r.meta.nodes = 2;
  r.meta.gpus_per_node = 4;
  r.trials = {Trial(1, "completed", 2.5, 2.0, 3000),
              Trial(2, "out_of_memory", 9.0, 5.0, std::nullopt),
              Trial(3, "completed", 2.1, 1.0, 1000),
              Trial(4, "running", 1.0, 2.0, 500),
              Trial(5, "cancelled", 3.0, 2.0, std::nullopt),
              Trial(6, "dropped", std::nullopt, std::nullopt, std::nullopt),
              Trial(7, "completed", std::numeric_limits<double>::quiet_NaN(), 2.0, std::nullopt)};
  r.trials[0].wall_s = 3600;  // 1 h x 2 nodes x 4 GPUs = 8 GPU-hours
  r.trials[1].wall_s = 900;   // 2 GPU-hours, OOM
  r.trials[4].wall_s = 1800;  // 4 GPU-hours, cancelled
  r.trials[0].queue_s = 10;
  r.trials[2].queue_s = 30;
  r.trials[3].queue_s = 20;
  r.baseline = 0;
  Analysis a = Analyze(r);
  REQUIRE(a.ranking == std::vector<size_t>{2, 0, 6, 3, 4, 1, 5});
  REQUIRE(a.recommended == size_t{2});
  REQUIRE(a.fastest == size_t{2});  // 1000 steps at 1 iter/s vs 3000 at 2
  REQUIRE(a.decomposition);
  REQUIRE(a.decomposition->throughput == Approx(0.5));
  REQUIRE(a.decomposition->convergence == Approx(3.0));
  REQUIRE(a.decomposition->time_to_target == Approx(1.5));
  REQUIRE(a.gpu);
  REQUIRE(a.cost.resource_hours == Approx(14));
  REQUIRE(a.cost.completed_hours == Approx(8));
  REQUIRE(a.cost.failed_hours == Approx(2));
  REQUIRE(a.cost.cancelled_hours == Approx(4));
  REQUIRE(a.cost.queue_median_s == Approx(20));
  REQUIRE(a.cost.queue_max_s == Approx(30));
  REQUIRE(a.cost.failures.size() == 2);
  REQUIRE(a.cost.pruned == 0);

  // A pruned trial that ran 1/4 h saved the rest of the median completed trial's 1 h: 3/4 h x 8 GPUs.
  r.trials[4].state = "pruned";
  r.trials[4].wall_s = 900;
  a = Analyze(r);
  REQUIRE(a.cost.pruned == 1);
  REQUIRE(a.cost.pruned_saved_hours == Approx(6));
  // When its log gave the run's length, its own remaining iterations at its own rate count: a
  // slow layout would have run far longer than the median trial. 2000 of 3000 steps left at
  // 0.5 iter/s = 4000 s = 10/9 h x 8 GPUs.
  r.trials[4].train_iters = 3000;
  r.trials[4].steps = 1000;
  r.trials[4].iters_per_s = 0.5;
  a = Analyze(r);
  REQUIRE(a.cost.pruned_saved_hours == Approx(4000.0 / 3600 * 8));
  r.trials[4].train_iters.reset();
  r.trials[4].state = "cancelled";
  r.trials[4].wall_s = 1800;

  r.meta.minimize = false;  // maximising: the NaN still ranks after every number
  a = Analyze(r);
  REQUIRE(a.recommended == size_t{0});
  REQUIRE(a.ranking.front() == 0);
  REQUIRE(a.ranking[2] == 6);
}

TEST_CASE("Resource hours are GPU-hours, or CPU-hours without GPUs", "[report]") {
  StudyMeta meta;
  TrialSummary t;
  REQUIRE(!ResourceHours(t, meta));
  t.wall_s = 7200;
  meta.nodes = 3;
  meta.gpus_per_node = 8;
  REQUIRE(*ResourceHours(t, meta) == Approx(48));
  meta.gpus_per_node = 0;
  meta.cpus_per_task = 4;
  REQUIRE(*ResourceHours(t, meta) == Approx(24));
  meta.cpus_per_task = 0;  // Slurm's default: one CPU
  REQUIRE(*ResourceHours(t, meta) == Approx(6));
}

TEST_CASE("States map to outcome classes and short labels", "[report]") {
  REQUIRE(OutcomeOf("completed") == Outcome::kCompleted);
  REQUIRE(OutcomeOf("pruned") == Outcome::kCancelled);
  REQUIRE(OutcomeOf("cuda_oom") == Outcome::kFailed);
  REQUIRE(OutcomeOf("submitting") == Outcome::kQueued);
  REQUIRE(OutcomeOf("some_future_state") == Outcome::kFailed);
  REQUIRE(StateLabel("out_of_memory") == "OOM");
  REQUIRE(StateLabel("node_fail") == "node failure");
  REQUIRE(StateLabel("timeout") == "timeout");
}

}  // namespace
}  // namespace sweep::reports
