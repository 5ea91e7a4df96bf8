// A run restarted on a study with stored curves (curve_loader.h): it ticks before it has read them
// all, its stopping rules wait for every curve they weigh, and once read they decide as a run that
// read the curves in one go.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <string>
#include <vector>

#include "run/runner.h"
#include "tests/fake_slurm.h"
#include "tests/fake_sweep.h"

using namespace sweep;
using testing::MegatronLine;

namespace {

constexpr int kTrials = 4;
constexpr const char* kStudy = "[space]\nlr = [0.1, 0.2, 0.3, 0.4]\n\n[stopping.median]\ngrace_s = 0\nmin_trials = 2\n";

// Submits the trials, starts them and stores `steps` points of the same curve for each (no rule
// fires on equal curves), then restarts the orchestrator.
void StoreCurvesAndRestart(testing::FakeSweep& s, int steps) {
  s.Tick();
  for (int i = 0; i < kTrials; ++i) s.slurm.Start(fmt::format("100_{}", i));
  for (int step = 1; step <= steps; ++step) {
    for (int i = 0; i < kTrials; ++i)
      s.slurm.AppendLog(fmt::format("100_{}", i), MegatronLine(step, 1000, 3.0 - 0.01 * step));
  }
  s.Tick();
  REQUIRE(s.slurm.issued("scancel").empty());
  s.Restart();
}

// One more line in every log: the last trial stops learning from `bad_from` on.
void Grow(testing::FakeSweep& s, int step, int bad_from) {
  for (int i = 0; i < kTrials; ++i) {
    double loss = i == kTrials - 1 && step >= bad_from ? 9.0 : 3.0 - 0.01 * step;
    s.slurm.AppendLog(fmt::format("100_{}", i), MegatronLine(step, 1000, loss));
  }
}

}  // namespace

TEST_CASE(
    "restart: a run on stored curves ticks before reading them all, and once read its stop decisions are those of "
    "a run that read them in one go",
    "[runner][stopping]") {
  // Rows a tick: 1 reads one trial a tick; 50 two or three; the default all of them at once.
  const int64_t rows = GENERATE(int64_t{1}, int64_t{50}, int64_t{1} << 40);
  INFO("slice of " << rows << " rows");
  testing::FakeSweep sliced(kStudy, kTrials), whole(kStudy, kTrials);
  StoreCurvesAndRestart(sliced, 20);
  StoreCurvesAndRestart(whole, 20);
  sliced.runner().set_curve_slice(1e9, 1e9, rows);

  std::vector<int64_t> ids;
  for (const auto& t : whole.Trials()) ids.push_back(t.id);
  int step = 20;
  for (int tick = 1; tick <= 6; ++tick) {
    // Both logs grow alike while the curves are read; the last trial goes bad before the fourth tick,
    // when even one trial a tick has read all four.
    for (int k = 0; k < 3; ++k) {
      ++step;
      Grow(sliced, step, 30);
      Grow(whole, step, 30);
    }
    run::TickReport a = sliced.Tick(), b = whole.Tick();
    INFO("tick " << tick << "\n" << sliced.log());
    // The tick's own work went on: every log's new lines are stored.
    CHECK(a.points == b.points);
    CHECK(a.points > 0);
    for (size_t k = 0; k < ids.size(); ++k) CHECK(sliced.Loss(sliced.Trials()[k]).size() == static_cast<size_t>(step));
    if (rows == 1 && tick < kTrials) {
      CHECK_THAT(sliced.log(), Catch::Contains(fmt::format(
                                   "early stopping waits for the stored curves: {} of {} trials read", tick, kTrials)));
      CHECK(sliced.slurm.issued("scancel").empty());  // the rules wait, though the whole run may decide
    }
    // Once every curve is read, each trial's series is the one built in one go and extended alike:
    // no point appended twice or skipped.
    if (sliced.Events("stopping_resumed") + (rows == (int64_t{1} << 40) ? 1 : 0) > 0) {
      for (size_t k = 0; k < ids.size(); ++k) {
        auto got = sliced.runner().stopping_state().Inspect(sliced.Trials()[k].id);
        auto want = whole.runner().stopping_state().Inspect(ids[k]);
        REQUIRE(got);
        REQUIRE(want);
        CHECK(*got == *want);
      }
      // And the same decisions, in the same tick.
      CHECK(sliced.slurm.issued("scancel").size() == whole.slurm.issued("scancel").size());
      CHECK(sliced.Trial("0.4").stop_request == whole.Trial("0.4").stop_request);
    }
  }
  // The last trial was pruned by both, for the same reason, and said once that the rules waited.
  CHECK_THAT(whole.Trial("0.4").stop_request, Catch::StartsWith("pruned by the median rule"));
  CHECK(sliced.Trial("0.4").stop_request == whole.Trial("0.4").stop_request);
  CHECK(sliced.Events("stopping_waits") == (rows == (int64_t{1} << 40) ? 0 : 1));
  CHECK(sliced.Events("stopping_resumed") == sliced.Events("stopping_waits"));
  CHECK(whole.Events("stopping_waits") == 0);
}
