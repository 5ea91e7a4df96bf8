// CurveLoader: the stopping rules' series of a restarted run, read from the store in slices. A run
// that starts on a study with stored curves (10,000 trials x 1,000 points: seconds of reading) must
// not hold its first tick until every curve is read: the queue, the logs and the submissions go on
// from the first tick, and each tick reads what its slice allows. The rules decide nothing until
// every curve they weigh is read: a rule that saw part of the rivals would decide otherwise than
// the run that stopped (early_stop.h: a state rebuilt from the stored curves is the one that died).
// Each trial's curve is read whole, within one tick, after that tick's points are stored; the
// Ingester extends only the series already read (ingester.cc): no point is appended twice or missed.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "base/status.h"
#include "run/run_context.h"
#include "stopping/early_stop.h"

namespace sweep::run {

class CurveLoader {
 public:
  // The slice after the first tick: half the study's poll interval (at least kLeastSliceS), so that a
  // restarted run reads for at most about as long as it waits between ticks.
  CurveLoader(RunContext& ctx, stopping::StoppingState& stopping);

  // Reads into the stopping state the stored curves (the objective, Megatron's NaN-iteration counts)
  // of those of `ids` it has no series of, in order, until this tick's slice is spent (at least one
  // trial a tick). Returns how many of `ids` have their series: all of them, the rules may decide.
  Result<size_t> Load(const std::vector<int64_t>& ids);

  // The slice: seconds of reading a tick (the first tick's is shorter, so that a restarted run
  // shows its first tick at once) and, for tests, rows a tick.
  void set_slice(double first_s, double then_s, int64_t rows = std::numeric_limits<int64_t>::max()) {
    first_s_ = first_s, then_s_ = then_s, rows_ = rows;
  }

 private:
  // One trial's curves, whole.
  Result<int64_t> LoadOne(int64_t trial_id);

  RunContext& ctx_;
  stopping::StoppingState& stopping_;
  // The first tick reads a twentieth of a second's worth (all of a study of a few hundred trials; it is
  // there to show the queue and the logs at once), the next ones at least a quarter of a second's.
  static constexpr double kFirstSliceS = 0.05, kLeastSliceS = 0.25;
  double first_s_ = kFirstSliceS, then_s_;
  int64_t rows_ = std::numeric_limits<int64_t>::max();
  bool first_ = true;
};

}  // namespace sweep::run
