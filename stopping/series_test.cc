// A trial's series kept small (issue 42): the running medians, the narrow steps and the bytes a point.
#include "stopping/series.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "stopping/early_stop.h"

using namespace sweep;
using namespace sweep::stopping;

TEST_CASE("running median: at every count up to its last, the median of all values so far, from a few of them",
          "[stopping]") {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> normal(0, 1);
  for (size_t last : {1, 2, 3, 7, 64, 65, 1021, 1022, 1023}) {
    for (int kind = 0; kind < 6; ++kind) {
      RunningMedian m(last);
      std::vector<double> values;
      for (size_t c = 1; c <= last; ++c) {
        double v = 0;
        switch (kind) {
          case 0:
            v = normal(rng);
            break;
          case 1:
            v = static_cast<double>(rng() % 5);
            break;  // ties
          case 2:
            v = static_cast<double>(c);
            break;  // rising: every value goes above
          case 3:
            v = -static_cast<double>(c);
            break;  // falling: every value goes below
          case 4:
            v = 1.5;
            break;
          default:
            v = std::abs(normal(rng)) * (c < last / 3 ? 100 : 1);
            break;  // a steep start, then noise
        }
        values.push_back(v);
        m.Add(v);
        INFO("last " << last << ", kind " << kind << ", count " << c);
        REQUIRE(m.Median() == MedianOf(values));
        // What it keeps: those that can still be the median (ranks from c - ceil(last / 2) to last / 2).
        size_t half = last / 2, floor = c + half > last ? c + half - last : 0;
        REQUIRE(m.kept() <= std::min(c, half - floor + 1));
      }
      // Built at once from the first values (a series' first refresh), then added to: the same medians.
      for (size_t split : {size_t{0}, last / 3, last / 2, last - 1, last}) {
        RunningMedian b(last);
        b.Build(std::vector<double>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(split)));
        for (size_t c = split; c <= last; ++c) {
          if (c > split) b.Add(values[c - 1]);
          INFO("last " << last << ", kind " << kind << ", built at " << split << ", count " << c);
          REQUIRE(b.Median() ==
                  MedianOf(std::vector<double>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(c))));
        }
      }
    }
  }
  CHECK(RunningMedian(10).Median() == 0);  // as MedianOf of nothing
}

TEST_CASE("step column: any step reads back as it came, in four bytes while within 2^31 of the first", "[stopping]") {
  std::mt19937_64 rng(7);
  const int64_t kMin = std::numeric_limits<int64_t>::min(), kMax = std::numeric_limits<int64_t>::max();
  std::vector<std::vector<int64_t>> cases = {
      {0, 10, 20, INT32_MAX},                                   // the last one fits
      {0, 10, int64_t{INT32_MAX} + 1, 30},                      // does not: wide from there on
      {5, 5 - (int64_t{1} << 31), 5 - (int64_t{1} << 31) - 1},  // down to -2^31 fits, one more does not
      {1764790100000, 1764790100010, 1764790100020},            // epoch milliseconds: narrow, from the first
      {kMin, kMax, 0, kMin},                                    // the extremes
  };
  for (int k = 0; k < 200; ++k) {
    std::vector<int64_t> c;
    int64_t at = static_cast<int64_t>(rng());
    for (int j = 0; j < 50; ++j) c.push_back(at += static_cast<int64_t>(rng() % (k % 2 ? 1000 : 1ull << 33)));
    cases.push_back(c);
  }
  for (const auto& steps : cases) {
    StepColumn col;
    bool narrow = true;
    for (size_t j = 0; j < steps.size(); ++j) {
      col.push_back(steps[j]);
      int64_t d = 0;
      bool overflow = __builtin_sub_overflow(steps[j], steps[0], &d);
      narrow = narrow && !overflow && d >= INT32_MIN && d <= INT32_MAX;
      CAPTURE(j, steps[j]);
      REQUIRE(col.size() == j + 1);
      REQUIRE(col.back() == steps[j]);
      REQUIRE(col.MemoryBytes() >= col.size() * (narrow ? 4 : 8));
      if (narrow) REQUIRE(col.MemoryBytes() < 8 * (col.size() + 4));
    }
    REQUIRE(col.ToVector() == steps);
    for (size_t j = 0; j < steps.size(); ++j) REQUIRE(col[j] == steps[j]);
    col.pop_back();
    REQUIRE(col.size() == steps.size() - 1);
  }
}

// What a run holds for each running trial (issue 42: 10,000 trials of 1,000 points in 512 MB, with the
// store's caches, the logs read and the report beside them): a series' bytes at 1,000 points, and past the
// 1,024 kept exactly (knots, histograms), built at once (a restart) or point by point (ticks). Every point
// was kept at 45 KB; past 1,024 points a series held 47 KB (room for 2,048 knots taken at the 1,025th, two
// histograms of every bin); 34.3 KB at 1,000 points with each second difference's histogram bin kept.
// What still grows with the length: 16 bytes a stall seen (its slow intervals),
// here one every 50 points.
TEST_CASE("stopping state: a trial holds under 34 KB at 1,000 points and past them, and 16 bytes a stall",
          "[stopping]") {
  auto [length, limit_kb] = GENERATE(table<int, size_t>({{1000, 34}, {1025, 34}, {1500, 34}, {20000, 34 + 9}}));
  INFO(length << " points");
  // A Megatron-like noisy loss logged every 10 iterations, a checkpoint stall every 500.
  std::mt19937_64 rng(3);
  std::normal_distribution<double> noise(0, 0.03);
  std::vector<CurvePoint> curve;
  double t = 0;
  for (int64_t step = 10; step <= 10 * length; step += 10) {
    t += 4 * (1 + 0.05 * noise(rng)) + (step % 500 == 0 ? 30 : 0);
    curve.push_back({step, t, 2 + 3 * std::exp(-static_cast<double>(step) / 3000.0) + noise(rng)});
  }
  StoppingConfig config;
  StoppingState whole(config), ticked(config);
  whole.Append(1, 1, curve, {});
  for (const CurvePoint& p : curve) ticked.Append(1, 1, {p}, {});
  auto a = whole.Inspect(1), b = ticked.Inspect(1);
  REQUIRE(a);
  REQUIRE(b);
  REQUIRE(a->points == static_cast<size_t>(length));
  CHECK(whole.MemoryBytes() < limit_kb * 1024);
  CHECK(ticked.MemoryBytes() < limit_kb * 1024);
  // The same curve holds the same series either way.
  CHECK(*a == *b);
}

// A histogram holds only the bins from its lowest to its highest value (issue 42), growing down as
// well as up: its median is the one of every bin counted (the upper median's bin, its geometric
// middle), whatever order the values arrive in, and within 2.2% of the exact median.
TEST_CASE("LogHistogram: the median of the bins counted, in any order of the values, near the exact one",
          "[stopping]") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::vector<double> values;
    const int n = 1 + static_cast<int>(rng() % 400);
    const double lo = -30 + static_cast<double>(rng() % 40), span = 1 + static_cast<double>(rng() % 20);
    for (int k = 0; k < n; ++k) {
      // Decades apart, some zeros (and what counts as one: a negative or NaN second difference is none).
      switch (rng() % 12) {
        case 0:
          values.push_back(0);
          break;
        case 1:
          values.push_back(std::numeric_limits<double>::quiet_NaN());
          break;
        default:
          values.push_back(std::exp2(lo + span * std::uniform_real_distribution<double>(0, 1)(rng)));
      }
    }
    // The reference: every bin counted, the rank n / 2 found from the zeros' bin up.
    std::vector<uint64_t> bins(LogHistogram::kBins + 1, 0);
    for (double v : values) ++bins[LogHistogram::Bin(v)];
    double expected = 0;
    uint64_t seen = 0;
    for (size_t b = 0; b < bins.size(); ++b) {
      seen += bins[b];
      if (seen > values.size() / 2) {
        expected = b == 0 ? 0
                          : std::exp2(LogHistogram::kMinOctave +
                                      (static_cast<double>(b - 1) + 0.5) / LogHistogram::kBinsPerOctave);
        break;
      }
    }
    for (int order = 0; order < 3; ++order) {
      std::shuffle(values.begin(), values.end(), rng);
      auto key = [](double v) { return v > 0 ? v : 0; };  // NaN with the zeros: a strict order
      if (order == 1) std::sort(values.begin(), values.end(), [&](double a, double b) { return key(a) > key(b); });
      LogHistogram h;
      for (double v : values) h.Add(v);
      INFO("round " << round << ", order " << order << ", " << n << " values");
      CHECK(h.Median() == expected);
    }
    std::vector<double> exact;
    for (double v : values) exact.push_back(v > 0 ? v : 0);
    double median = MedianOf(exact);
    if (median > 0) CHECK(std::abs(expected / median - 1) <= 0.022);
    else CHECK(expected == 0);
  }
}
