// Reading the stopping rules' stored curves in slices across ticks (curve_loader.h).
#include "run/curve_loader.h"

#include <algorithm>
#include <chrono>

namespace sweep::run {

CurveLoader::CurveLoader(RunContext& ctx, stopping::StoppingState& stopping)
    : ctx_(ctx), stopping_(stopping), then_s_(std::max(kLeastSliceS, ctx.study.cluster.poll_interval_s / 2)) {}

Result<size_t> CurveLoader::Load(const std::vector<int64_t>& ids) {
  // The wall clock, not ctx_.clock: the slice bounds real time spent reading, which a test clock does not pass.
  using Steady = std::chrono::steady_clock;
  const auto start = Steady::now();
  const double slice_s = std::exchange(first_, false) ? first_s_ : then_s_;
  int64_t rows = 0;
  bool spent = false;
  size_t have = 0;
  for (int64_t id : ids) {
    if (stopping_.Has(id)) {
      ++have;
      continue;
    }
    if (spent) continue;
    auto read = LoadOne(id);
    if (!read.ok()) return read.status();
    rows += *read;
    if (stopping_.Has(id)) ++have;
    spent = rows >= rows_ || std::chrono::duration<double>(Steady::now() - start).count() >= slice_s;
  }
  return have;
}

Result<int64_t> CurveLoader::LoadOne(int64_t trial_id) {
  // Both metrics in one pass over the trial's rows.
  auto curves = ctx_.store.MetricCurves(trial_id, {ctx_.study.objective.metric, "nan_iters"});
  if (!curves.ok()) return curves.status();
  stopping_.Append(trial_id, ctx_.Gpus(), (*curves)[0], (*curves)[1]);
  return static_cast<int64_t>((*curves)[0].size() + (*curves)[1].size());
}

}  // namespace sweep::run
