// Inline SVG charts for the HTML report, drawn by our code so the file needs no script and no
// network: line charts (curves), horizontal bar charts and dot charts (one value per trial,
// by category or against a number). Every text that reaches the SVG is escaped here.
// Internal to reports/ (scripts/include-loops.py checks that no other folder includes it);
// tests may include it.
// Module reports/: rendering plain data into reports; uses base/ only.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace sweep::reports {

struct Axis {
  std::string label;
  bool log = false;                // logarithmic (positive values only; others are not drawn)
  bool duration = false;           // values are seconds: ticks in s, min or h, named in the label
  std::optional<double> min, max;  // fixed range; otherwise from the data
};

struct LineSeries {
  std::vector<double> x, y;  // NaN points break the line
  std::string color = "#888";
  double width = 1;
  double opacity = 1;
  bool dashed = false;
  bool end_marker = false;  // an × at the last point: the trial was stopped there
  std::string tooltip;
};

// A shaded band between two lines over the same x (quantiles of many curves: issue 42), drawn
// under the series.
struct LineBand {
  std::vector<double> x, lo, hi;  // a NaN in lo or hi breaks the band
  std::string color = "#8c959f";
  double opacity = 0.2;
  std::string tooltip;
};

struct LineChart {
  std::string id;  // unique in the page, [a-z0-9-] (names the clip path)
  std::string title;
  Axis x, y;
  std::vector<LineSeries> series;  // later series are drawn on top
  std::vector<LineBand> bands;     // under every series, in order
  // Which end of the y axis to cut (just beyond the 10% most extreme points), so the first
  // points of the curves do not squash the tail where trials differ: the high end for a loss.
  enum class Clip { kNone, kHigh, kLow } clip_y = Clip::kHigh;
  std::optional<double> reference_y;  // dashed horizontal line, e.g. the target
  std::string reference_label;
  int width = 560, height = 330;
};

struct Bar {
  std::string label;  // left of the bar, shortened to fit
  std::string tooltip;
  double value = 0;
  std::string color = "#4c78a8";
  std::string value_text;  // right of the bar; the value itself when empty
};

// Horizontal bars, one row each, in the given order.
struct BarChart {
  std::string title;
  Axis x;
  std::vector<Bar> bars;
  int width = 560;
  int label_width = 230;
};

struct Dot {
  double x = 0;  // an index into categories, or a value on the x axis
  double y = 0;
  std::string color = "#4c78a8";
  double opacity = 0.8;
  bool hollow = false;  // a ring, not a disc (a trial stopped early); left out of the category median
  std::string tooltip;
};

// The distribution of many trials' values at one x (a category, or a bin of a numeric axis): a
// box from the 25th to the 75th percentile, whiskers to the 10th and 90th, the median marked.
struct Spread {
  double x = 0;               // category index (categorical axis)
  double x_lo = 0, x_hi = 0;  // numeric axis: the bin's range
  double p10 = 0, p25 = 0, p50 = 0, p75 = 0, p90 = 0;
  size_t n = 0;
  std::string tooltip;
};

// A dot per trial. With categories, x is the category index, dots are spread a little sideways
// and each category's median is marked (unless spreads are given: theirs is); without, x is a
// number on the x axis. Spreads are drawn under the dots.
struct DotChart {
  std::string title;
  Axis x, y;
  std::vector<std::string> categories;
  std::vector<Dot> dots;
  std::vector<Spread> spreads;
  int width = 360, height = 240;
};

// Parallel coordinates: one vertical axis per parameter (and the objective last), one polyline
// per trial through its values.
struct ParallelAxis {
  std::string label;
  std::vector<std::string> categories;  // set: a categorical axis, values are indices
  bool log = false;                     // numeric axis on a log scale
  bool reversed = false;                // larger values at the bottom (an objective to minimise: best on top)
};
struct ParallelLine {
  std::vector<double> values;  // one per axis; NaN: missing (the line stops short of it)
  std::string color = "#8c959f";
  double opacity = 0.6;
  double width = 1.2;
  bool dashed = false;
  std::string tooltip;
};
struct ParallelChart {
  std::string title;
  std::vector<ParallelAxis> axes;
  std::vector<ParallelLine> lines;  // later lines on top
  int width = 1100, height = 340;
};

std::string RenderLineChart(const LineChart& chart);
std::string RenderParallelChart(const ParallelChart& chart);
std::string RenderBarChart(const BarChart& chart);
std::string RenderDotChart(const DotChart& chart);

// Nice tick values covering [lo, hi]: about `count` of them, at 1, 2 or 5 times a power of ten.
std::vector<double> NiceTicks(double lo, double hi, int count);

}  // namespace sweep::reports
