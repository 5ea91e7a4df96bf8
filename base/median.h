// The median of a sample, as the progress view (the typical run time, for the ETA) and a trial's
// report entry (its typical throughput) show it. Module base/: uses the standard library only.
#pragma once

#include <optional>
#include <vector>

namespace sweep {

// The middle value of `v`, or the mean of the two middle values when their count is even;
// nothing when `v` is empty.
std::optional<double> Median(std::vector<double> v);

}  // namespace sweep
