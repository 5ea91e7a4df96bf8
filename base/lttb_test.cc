// Tests of LTTB downsampling: ends kept, size bounded, order kept, peaks survive.
#include "base/lttb.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

namespace sweep {
namespace {

TEST_CASE("LTTB keeps the first and last point and bounds the size", "[report]") {
  for (size_t n : {3u, 10u, 501u, 10'000u}) {
    std::vector<double> x, y;
    for (size_t i = 0; i < n; ++i) {
      x.push_back(static_cast<double>(i * 10));
      y.push_back(std::sin(static_cast<double>(i) / 37.0) + 2.0 / (1 + i));
    }
    for (size_t max_points : {1u, 2u, 3u, 50u, 500u}) {
      auto kept = LttbIndices(x, y, max_points);
      INFO("n=" << n << " max_points=" << max_points);
      REQUIRE(kept.size() <= std::max<size_t>(max_points, 2));
      REQUIRE(kept.front() == 0);
      REQUIRE(kept.back() == n - 1);
      for (size_t i = 1; i < kept.size(); ++i) REQUIRE(kept[i - 1] < kept[i]);
      if (n > max_points && max_points >= 3) REQUIRE(kept.size() == max_points);
    }
  }
}

TEST_CASE("LTTB keeps a short curve whole", "[report]") {
  std::vector<double> x = {1, 2, 3, 4}, y = {4, 3, 2, 1};
  REQUIRE(LttbIndices(x, y, 500) == std::vector<size_t>{0, 1, 2, 3});
  REQUIRE(LttbIndices({}, {}, 500).empty());
  REQUIRE(LttbIndices({5}, {1}, 1) == std::vector<size_t>{0});
}

TEST_CASE("LTTB keeps a lone spike that uniform sampling would miss", "[report]") {
  std::vector<double> x, y;
  for (int i = 0; i < 10'000; ++i) {
    x.push_back(i);
    y.push_back(i == 4321 ? 50.0 : 1.0);  // e.g. a loss spike
  }
  auto kept = LttbIndices(x, y, 100);
  REQUIRE(std::find(kept.begin(), kept.end(), 4321u) != kept.end());
}

}  // namespace
}  // namespace sweep
