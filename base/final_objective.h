// The one definition of a trial's final objective, used by the ranking, the recommendation, the
// target, `status`, trials.csv and the comparison of studies: the mean of the objective's last
// kFinalWindow logged points (fewer if the trial logged fewer). The same trailing mean, at every
// point, is the smoothed curve on which "reached the target" is decided and that the charts draw,
// so a trial whose final value is the target reaches it, at its last point at the latest: the
// baseline reaches its own target by definition. A crossing counts once the curve stays past the
// target (SustainedReach), read between the two points it crosses between (InterpolatedCrossing).
// The window is a fixed number of points for every trial, whatever its length, so a trial that ran
// longer is not judged on a smoother curve.
// Module base/: the vocabulary every module shares; uses the standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace sweep {

inline constexpr size_t kFinalWindow = 10;

struct FinalObjective {
  double value = 0;   // mean of the last `points` values (NaN if one of them is not finite)
  double spread = 0;  // their sample standard deviation (0 for one point): how noisy the end is
  double last = 0;    // the last logged value, raw
  size_t points = 0;  // min(kFinalWindow, number of values)
};

// The mean of values[0, n), summed in order: the one summation of the final value and of every
// point of the smoothed curve (the store's summaries use it too, to keep each bucket's range of
// the smoothed curve as they ingest), so that all of them are the same doubles.
double WindowMean(const double* values, size_t n);

// nullopt for no values.
std::optional<FinalObjective> FinalObjectiveOf(const std::vector<double>& values);

// The smoothed curve: at each point i, the mean of values[max(0, i+1-kFinalWindow) .. i]. Its
// last element is bit for bit FinalObjectiveOf(values)->value. A NaN spoils the windows holding it.
std::vector<double> TrailingMean(const std::vector<double>& values);

// Where the smoothed curve reaches `target` for good: the first index i such that every point
// from i to the end is at or better than the target (<= when minimising; NaN is not). A lucky
// first point, or a dip past the target that the curve climbs back out of, is no crossing (issue
// 31): the curve must stay past it to the end. There is no floor at the window's length (issue 41:
// a fast trial crossing within its first window read as the window's floor); a curve past the
// target from its first point reaches it there. A curve whose last point (its final value) is at
// the target reaches it, at its last point at the latest.
std::optional<size_t> SustainedReach(const std::vector<double>& smoothed, double target, bool minimize);

// The step where the smoothed curve crosses `target` between two consecutive points (step0,
// value0), not past it, and (step1, value1), past it: linear between them, rounded to a step.
int64_t InterpolatedCrossing(int64_t step0, double value0, int64_t step1, double value1, double target);

// True when `value` is at or better than `target` (<= when minimising); NaN never is.
bool AtOrPast(double value, double target, bool minimize);

// True when `a` is a better objective value than `b` (NaN is worse than any number).
bool Better(double a, double b, bool minimize);

}  // namespace sweep
