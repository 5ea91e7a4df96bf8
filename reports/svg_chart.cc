// SVG drawing for the report's charts; see svg_chart.h. Coordinates are rounded to 0.1 px and
// written compactly because a large study draws ~10^5 curve points.
#include "reports/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>

#include "reports/html_text.h"

namespace sweep::reports {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kCharWidth = 6.3;  // average width of an 11 px sans-serif character

struct Margins {
  double left = 58, right = 22, top = 14, bottom = 44;
};

// Seconds shown in the unit that keeps tick labels short.
struct TimeUnit {
  double seconds = 1;
  const char* name = "s";
};
TimeUnit UnitFor(double max_seconds) {
  if (max_seconds >= 2 * 86400) return {86400, "d"};
  if (max_seconds >= 2 * 3600) return {3600, "h"};
  if (max_seconds >= 120) return {60, "min"};
  return {1, "s"};
}

// Maps data values (times `factor`, then log10 if logarithmic) onto pixels.
struct Scale {
  double d0 = 0, d1 = 1;  // domain, after factor and log
  double r0 = 0, r1 = 1;  // pixels
  double factor = 1;
  bool log = false;

  bool Drawable(double v) const { return std::isfinite(v) && (!log || v > 0); }
  double Domain(double v) const { return log ? std::log10(v * factor) : v * factor; }
  double operator()(double v) const { return Pixel(Domain(v)); }
  double Pixel(double d) const { return d1 == d0 ? (r0 + r1) / 2 : r0 + (d - d0) / (d1 - d0) * (r1 - r0); }
};

// One decimal, no trailing ".0".
void AppendCoord(double v, std::string& out) {
  long long tenths = std::llround(v * 10);
  if (tenths < 0) {
    out.push_back('-');
    tenths = -tenths;
  }
  out += std::to_string(tenths / 10);
  if (tenths % 10) {
    out.push_back('.');
    out.push_back(static_cast<char>('0' + tenths % 10));
  }
}
std::string Coord(double v) {
  std::string s;
  AppendCoord(v, s);
  return s;
}

struct Ticks {
  std::vector<double> values;  // in the scale's domain (log10 for log axes)
  double step = 1;
};

// Labels of the ticks: decimals as the step needs; thousands as "20k" and millions as "3M" so
// the labels of an iteration axis stay short.
std::string TickLabel(double v, const Ticks& ticks, bool log) {
  // Log ticks sit at 1, 2 and 5 times a power of ten: one significant digit ("0.001", not "0.0010").
  if (log) return FormatSig(std::pow(10.0, v), 1);
  double top = 0;
  for (double t : ticks.values) top = std::max(top, std::fabs(t));
  double unit = top >= 1e7 ? 1e6 : top >= 1e4 ? 1e3 : 1;
  const char* suffix = unit == 1e6 ? "M" : unit == 1e3 ? "k" : "";
  double step = ticks.step / unit;
  if (unit == 1 && v != 0 && top < 1e-3) return FormatSig(v, 2);
  // Beyond millions (a diverged loss of -1e300), or steps finer than 6 decimals: 3 significant
  // digits in scientific notation, never hundreds of digits.
  if (top >= 1e10 && v != 0) return FormatSig(v, 3);
  int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  if (decimals > 6) return FormatSig(v, 3);
  std::string s = fmt::format("{:.{}f}", v / unit, decimals);
  if (s.starts_with("-") && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s == "0" ? s : s + suffix;
}

// Sets the scale's domain from data values (already factor-scaled) and returns its ticks.
Ticks FitDomain(std::vector<double> values, const Axis& axis, Scale& scale, int tick_count, LineChart::Clip clip) {
  values.erase(std::remove_if(values.begin(), values.end(), [&](double v) { return !scale.Drawable(v); }),
               values.end());
  for (double& v : values) v = scale.Domain(v);
  double lo = 0, hi = 1;
  if (!values.empty()) {
    auto [mn, mx] = std::minmax_element(values.begin(), values.end());
    lo = *mn;
    hi = *mx;
    if (clip != LineChart::Clip::kNone && values.size() >= 20) {
      size_t k = clip == LineChart::Clip::kHigh ? values.size() * 90 / 100 : values.size() * 10 / 100;
      std::nth_element(values.begin(), values.begin() + static_cast<long>(k), values.end());
      double q = values[k];
      if (clip == LineChart::Clip::kHigh) hi = std::min(hi, q + 0.25 * (q - lo));
      else lo = std::max(lo, q - 0.25 * (hi - q));
    }
  }
  if (axis.min) lo = scale.log ? std::log10(*axis.min * scale.factor) : *axis.min * scale.factor;
  if (axis.max) hi = scale.log ? std::log10(*axis.max * scale.factor) : *axis.max * scale.factor;
  if (!(hi > lo)) {
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= scale.log ? 0.5 : pad;
    hi += scale.log ? 0.5 : pad;
  }
  Ticks ticks;
  if (scale.log) {
    lo = std::floor(lo);
    hi = std::ceil(hi);
    ticks.step = 1;
    for (double d = lo; d <= hi + 1e-9; d += 1) {
      ticks.values.push_back(d);
      // Few decades: 2 and 5 between the powers of ten too.
      if (hi - lo <= 2 && d < hi)
        ticks.values.push_back(d + std::log10(2.0)), ticks.values.push_back(d + std::log10(5.0));
    }
  } else {
    ticks.values = NiceTicks(lo, hi, tick_count);
    ticks.step = ticks.values.size() > 1 ? ticks.values[1] - ticks.values[0] : 1;
    if (!axis.min) lo = std::min(lo, std::floor(lo / ticks.step + 1e-9) * ticks.step);
    if (!axis.max) hi = std::max(hi, std::ceil(hi / ticks.step - 1e-9) * ticks.step);
    ticks.values = NiceTicks(lo, hi, tick_count);
  }
  scale.d0 = lo;
  scale.d1 = hi;
  return ticks;
}

std::string AxisLabel(const Axis& axis, const TimeUnit& unit) {
  return axis.duration ? fmt::format("{} ({})", axis.label, unit.name) : axis.label;
}

void OpenSvg(std::string& out, double width, double height, const std::string& title) {
  fmt::format_to(std::back_inserter(out),
                 "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\" "
                 "xmlns=\"http://www.w3.org/2000/svg\">",
                 Coord(width), Coord(height), HtmlEscape(title));
}

// Grid lines and tick labels of a y axis on the left.
void DrawYAxis(const Scale& y, const Ticks& ticks, double x0, double x1, const std::string& label, double top,
               double bottom, std::string& out) {
  for (double t : ticks.values) {
    double py = y.Pixel(t);
    if (py < top - 0.5 || py > bottom + 0.5) continue;
    fmt::format_to(std::back_inserter(out),
                   "<line class=\"grid\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>"
                   "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                   Coord(x0), Coord(x1), Coord(py), Coord(py), Coord(x0 - 5), Coord(py + 3.5),
                   HtmlEscape(TickLabel(t, ticks, y.log)));
  }
  double mid = (top + bottom) / 2;
  fmt::format_to(
      std::back_inserter(out),
      "<text class=\"axis-label\" transform=\"translate(13 {}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
      Coord(mid), HtmlEscape(label));
}

// Tick marks and labels of an x axis at the bottom.
void DrawXAxis(const Scale& x, const Ticks& ticks, double y0, const std::string& label, double left, double right,
               std::string& out) {
  fmt::format_to(std::back_inserter(out), "<line class=\"axis\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>", Coord(left),
                 Coord(right), Coord(y0), Coord(y0));
  for (double t : ticks.values) {
    double px = x.Pixel(t);
    if (px < left - 0.5 || px > right + 0.5) continue;
    fmt::format_to(std::back_inserter(out),
                   "<line class=\"axis\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
                   "<text class=\"tick\" x=\"{0}\" y=\"{3}\" text-anchor=\"middle\">{4}</text>",
                   Coord(px), Coord(y0), Coord(y0 + 4), Coord(y0 + 16), HtmlEscape(TickLabel(t, ticks, x.log)));
  }
  fmt::format_to(std::back_inserter(out),
                 "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                 Coord((left + right) / 2), Coord(y0 + 34), HtmlEscape(label));
}

void AppendTitle(const std::string& tooltip, std::string& out) {
  if (tooltip.empty()) return;
  out.append("<title>");
  AppendHtmlEscaped(tooltip, out);
  out.append("</title>");
}

}  // namespace

std::vector<double> NiceTicks(double lo, double hi, int count) {
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi)) return {lo};
  double raw = (hi - lo) / std::max(1, count);
  double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double f = raw / magnitude;
  double step = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  for (double i = std::ceil(lo / step - 1e-9); i * step <= hi + step * 1e-9; i += 1) {
    double v = i * step;
    ticks.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return ticks;
}

std::string RenderLineChart(const LineChart& chart) {
  Margins m;
  const double w = chart.width, h = chart.height;
  const double left = m.left, right = w - m.right, top = m.top, bottom = h - m.bottom;

  std::vector<double> xs, ys;
  double max_x = 0;
  for (const LineSeries& s : chart.series) {
    xs.insert(xs.end(), s.x.begin(), s.x.end());
    ys.insert(ys.end(), s.y.begin(), s.y.end());
  }
  for (const LineBand& b : chart.bands) {
    xs.insert(xs.end(), b.x.begin(), b.x.end());
    ys.insert(ys.end(), b.lo.begin(), b.lo.end());
    ys.insert(ys.end(), b.hi.begin(), b.hi.end());
  }
  for (double v : xs)
    if (std::isfinite(v)) max_x = std::max(max_x, std::fabs(v));
  double max_y = 0;
  for (double v : ys)
    if (std::isfinite(v)) max_y = std::max(max_y, std::fabs(v));
  TimeUnit xu = chart.x.duration ? UnitFor(max_x) : TimeUnit{};
  TimeUnit yu = chart.y.duration ? UnitFor(max_y) : TimeUnit{};

  Scale x{.r0 = left, .r1 = right, .factor = 1 / xu.seconds, .log = chart.x.log};
  Scale y{.r0 = bottom, .r1 = top, .factor = 1 / yu.seconds, .log = chart.y.log};
  Ticks xt = FitDomain(std::move(xs), chart.x, x, 6, LineChart::Clip::kNone);
  std::vector<double> y_all = std::move(ys);
  if (chart.reference_y) y_all.push_back(*chart.reference_y);
  Ticks yt = FitDomain(std::move(y_all), chart.y, y, 5, chart.clip_y);

  std::string out;
  OpenSvg(out, w, h, chart.title);
  fmt::format_to(
      std::back_inserter(out),
      "<defs><clipPath id=\"{}-plot\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath></defs>", chart.id,
      Coord(left), Coord(top - 2), Coord(right - left + 2), Coord(bottom - top + 2));
  DrawYAxis(y, yt, left, right, AxisLabel(chart.y, yu), top, bottom, out);
  DrawXAxis(x, xt, bottom, AxisLabel(chart.x, xu), left, right, out);

  fmt::format_to(std::back_inserter(out), "<g clip-path=\"url(#{}-plot)\" fill=\"none\" stroke-linejoin=\"round\">",
                 chart.id);
  for (const LineBand& b : chart.bands) {
    // Each unbroken run of the band: along its top, then back along its bottom.
    size_t n = std::min({b.x.size(), b.lo.size(), b.hi.size()});
    std::string d;
    for (size_t i = 0; i < n;) {
      auto ok = [&](size_t k) { return x.Drawable(b.x[k]) && y.Drawable(b.lo[k]) && y.Drawable(b.hi[k]); };
      if (!ok(i)) {
        ++i;
        continue;
      }
      size_t end = i;
      while (end < n && ok(end)) ++end;
      for (size_t k = i; k < end; ++k) {
        d.push_back(k == i ? 'M' : k == i + 1 ? 'L' : ' ');
        AppendCoord(x(b.x[k]), d);
        d.push_back(' ');
        AppendCoord(y(b.hi[k]), d);
      }
      for (size_t k = end; k-- > i;) {
        d.push_back(' ');
        AppendCoord(x(b.x[k]), d);
        d.push_back(' ');
        AppendCoord(y(b.lo[k]), d);
      }
      d.push_back('Z');
      i = end;
    }
    if (d.empty()) continue;
    fmt::format_to(std::back_inserter(out), "<path d=\"{}\" fill=\"{}\" fill-opacity=\"{:.2f}\" stroke=\"none\">", d,
                   b.color, b.opacity);
    AppendTitle(b.tooltip, out);
    out.append("</path>");
  }
  for (const LineSeries& s : chart.series) {
    std::string d;
    d.reserve(s.x.size() * 11);
    int since_move = -1;  // points since the last M; -1: the pen is up
    double last_x = kNaN, last_y = kNaN;
    size_t n = std::min(s.x.size(), s.y.size());
    for (size_t i = 0; i < n; ++i) {
      if (!x.Drawable(s.x[i]) || !y.Drawable(s.y[i])) {
        since_move = -1;
        continue;
      }
      last_x = x(s.x[i]);
      last_y = y(s.y[i]);
      // "M x y L x y x y ...": the pairs after one L are implicit line-tos.
      if (since_move < 0) d.push_back('M');
      else if (since_move == 0) d.push_back('L');
      else d.push_back(' ');
      since_move = since_move < 0 ? 0 : 1;
      AppendCoord(last_x, d);
      d.push_back(' ');
      AppendCoord(last_y, d);
    }
    if (d.empty()) continue;
    fmt::format_to(std::back_inserter(out), "<path d=\"{}\" stroke=\"{}\" stroke-width=\"{}\"", d, s.color,
                   Coord(s.width));
    if (s.opacity < 1) fmt::format_to(std::back_inserter(out), " stroke-opacity=\"{:.2f}\"", s.opacity);
    if (s.dashed) out.append(" stroke-dasharray=\"5 3\"");
    out.append(">");
    AppendTitle(s.tooltip, out);
    out.append("</path>");
    if (s.end_marker && std::isfinite(last_x)) {
      fmt::format_to(std::back_inserter(out), "<path d=\"M{} {}l6 6m0 -6l-6 6\" stroke=\"{}\" stroke-width=\"1.5\"{}>",
                     Coord(last_x - 3), Coord(last_y - 3), s.color,
                     s.opacity < 1 ? fmt::format(" stroke-opacity=\"{:.2f}\"", std::min(1.0, s.opacity * 2)) : "");
      AppendTitle(s.tooltip.empty() ? "" : "stopped here: " + s.tooltip, out);
      out.append("</path>");
    }
  }
  out.append("</g>");
  if (chart.reference_y && y.Drawable(*chart.reference_y)) {
    double py = y(*chart.reference_y);
    fmt::format_to(std::back_inserter(out),
                   "<line class=\"reference\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>"
                   "<text class=\"reference-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                   Coord(left), Coord(right), Coord(py), Coord(py), Coord(right - 4), Coord(py + 13),
                   HtmlEscape(chart.reference_label));
  }
  out.append("</svg>");
  return out;
}

std::string RenderBarChart(const BarChart& chart) {
  const double row = 20, top = 6, bottom_axis = 40;
  const double w = chart.width;
  // The longest value text right of the longest bar still fits inside the chart.
  size_t value_chars = 0;
  for (const Bar& b : chart.bars) {
    const std::string text = b.value_text.empty() ? FormatSig(b.value, 3) : b.value_text;
    // Characters, not bytes: "ε²" is two.
    value_chars = std::max<size_t>(value_chars, std::count_if(text.begin(), text.end(), [](char c) {
                                     return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
                                   }));
  }
  // 7 px a character: digits are wider than the average (DejaVu Sans's are 0.64 em of 11 px).
  const double left = chart.label_width, right = w - std::max(64.0, static_cast<double>(value_chars) * 7.0 + 8);
  const double h = top + row * static_cast<double>(chart.bars.size()) + bottom_axis;
  const double bottom = h - bottom_axis;

  double max_v = 0;
  for (const Bar& b : chart.bars)
    if (std::isfinite(b.value)) max_v = std::max(max_v, b.value);
  TimeUnit xu = chart.x.duration ? UnitFor(max_v) : TimeUnit{};
  Scale x{.r0 = left, .r1 = right, .factor = 1 / xu.seconds};
  Axis axis = chart.x;
  if (!axis.min) axis.min = 0;
  std::vector<double> values;
  for (const Bar& b : chart.bars) values.push_back(b.value);
  Ticks xt = FitDomain(std::move(values), axis, x, 5, LineChart::Clip::kNone);

  std::string out;
  OpenSvg(out, w, h, chart.title);
  for (double t : xt.values) {
    double px = x.Pixel(t);
    fmt::format_to(std::back_inserter(out), "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>",
                   Coord(px), Coord(top), Coord(bottom));
  }
  DrawXAxis(x, xt, bottom, AxisLabel(chart.x, xu), left, right, out);
  const size_t label_chars = static_cast<size_t>(std::max(4.0, (left - 10) / kCharWidth));
  for (size_t i = 0; i < chart.bars.size(); ++i) {
    const Bar& b = chart.bars[i];
    double y0 = top + row * static_cast<double>(i);
    double x1 = std::isfinite(b.value) ? std::max(left, x(b.value)) : left;
    out.append("<g>");
    AppendTitle(b.tooltip, out);
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"bar-label\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>"
                   "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" rx=\"2\"/>"
                   "<text class=\"bar-value\" x=\"{}\" y=\"{}\">{}</text>",
                   Coord(left - 6), Coord(y0 + row / 2 + 4), HtmlEscape(Ellipsize(b.label, label_chars)), Coord(left),
                   Coord(y0 + 3), Coord(x1 - left), Coord(row - 6), b.color, Coord(x1 + 4), Coord(y0 + row / 2 + 4),
                   HtmlEscape(b.value_text.empty() ? FormatSig(b.value, 3) : b.value_text));
    out.append("</g>");
  }
  out.append("</svg>");
  return out;
}

std::string RenderDotChart(const DotChart& chart) {
  Margins m;
  const double w = chart.width, h = chart.height;
  const double left = m.left, right = w - m.right, top = m.top, bottom = h - m.bottom;
  const bool categorical = !chart.categories.empty();

  double max_y = 0;
  for (const Dot& d : chart.dots)
    if (std::isfinite(d.y)) max_y = std::max(max_y, std::fabs(d.y));
  TimeUnit yu = chart.y.duration ? UnitFor(max_y) : TimeUnit{};
  Scale y{.r0 = bottom, .r1 = top, .factor = 1 / yu.seconds, .log = chart.y.log};
  std::vector<double> ys;
  for (const Dot& d : chart.dots) ys.push_back(d.y);
  for (const Spread& sp : chart.spreads) ys.push_back(sp.p10), ys.push_back(sp.p90);
  Ticks yt = FitDomain(std::move(ys), chart.y, y, 4, LineChart::Clip::kNone);

  std::string out;
  OpenSvg(out, w, h, chart.title);
  DrawYAxis(y, yt, left, right, AxisLabel(chart.y, yu), top, bottom, out);

  Scale x{.r0 = left, .r1 = right, .log = !categorical && chart.x.log};
  double band = 0;
  if (categorical) {
    band = (right - left) / static_cast<double>(chart.categories.size());
    fmt::format_to(std::back_inserter(out), "<line class=\"axis\" x1=\"{}\" x2=\"{}\" y1=\"{}\" y2=\"{}\"/>",
                   Coord(left), Coord(right), Coord(bottom), Coord(bottom));
    size_t chars = static_cast<size_t>(std::max(3.0, band / kCharWidth));
    for (size_t i = 0; i < chart.categories.size(); ++i) {
      double cx = left + band * (static_cast<double>(i) + 0.5);
      fmt::format_to(std::back_inserter(out), "<text class=\"tick\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">",
                     Coord(cx), Coord(bottom + 16));
      AppendTitle(chart.categories[i], out);
      AppendHtmlEscaped(Ellipsize(chart.categories[i], chars), out);
      out.append("</text>");
    }
    fmt::format_to(std::back_inserter(out),
                   "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
                   Coord((left + right) / 2), Coord(bottom + 34), HtmlEscape(chart.x.label));
  } else {
    std::vector<double> xs;
    for (const Dot& d : chart.dots) xs.push_back(d.x);
    for (const Spread& sp : chart.spreads) xs.push_back(sp.x_lo), xs.push_back(sp.x_hi);
    Ticks xt = FitDomain(std::move(xs), chart.x, x, 5, LineChart::Clip::kNone);
    DrawXAxis(x, xt, bottom, chart.x.label, left, right, out);
  }

  // Spreads under the dots: whiskers p10..p90, a box p25..p75, the median across it.
  for (const Spread& sp : chart.spreads) {
    double x0, x1;
    if (categorical) {
      double cx = left + band * (sp.x + 0.5);
      x0 = cx - band * 0.3, x1 = cx + band * 0.3;
    } else {
      if (!x.Drawable(sp.x_lo) || !x.Drawable(sp.x_hi)) continue;
      double a = x(sp.x_lo), b = x(sp.x_hi), pad = std::min(2.0, std::fabs(b - a) / 6);
      x0 = std::min(a, b) + pad, x1 = std::max(a, b) - pad;
    }
    if (!y.Drawable(sp.p10) || !y.Drawable(sp.p90) || !y.Drawable(sp.p25) || !y.Drawable(sp.p75) ||
        !y.Drawable(sp.p50)) {
      continue;
    }
    double cx = (x0 + x1) / 2, top_box = std::min(y(sp.p25), y(sp.p75)), box_h = std::fabs(y(sp.p75) - y(sp.p25));
    fmt::format_to(std::back_inserter(out),
                   "<g class=\"spread\"><path d=\"M{0} {1}V{2}\" stroke=\"#8c959f\"/>"
                   "<rect x=\"{3}\" y=\"{4}\" width=\"{5}\" height=\"{6}\" fill=\"#8c959f\" fill-opacity=\"0.25\" "
                   "stroke=\"#8c959f\"/><path d=\"M{3} {7}H{8}\" stroke=\"#24292f\" stroke-width=\"1.5\"/>",
                   Coord(cx), Coord(y(sp.p10)), Coord(y(sp.p90)), Coord(x0), Coord(top_box), Coord(x1 - x0),
                   Coord(std::max(box_h, 0.5)), Coord(y(sp.p50)), Coord(x1));
    AppendTitle(sp.tooltip, out);
    out.append("</g>");
  }

  // Categorical: spread the dots of a category over 60% of its band (golden-ratio sequence, so
  // the layout is the same every time), and mark the category's median.
  std::map<long, std::vector<double>> by_category;
  std::map<long, int> seen;
  for (const Dot& d : chart.dots) {
    if (!y.Drawable(d.y)) continue;
    double px;
    if (categorical) {
      long c = std::lround(d.x);
      if (c < 0 || c >= static_cast<long>(chart.categories.size())) continue;
      double jitter = std::fmod(0.618034 * seen[c]++, 1.0) - 0.5;
      px = left + band * (static_cast<double>(c) + 0.5 + 0.5 * jitter);
      if (!d.hollow) by_category[c].push_back(d.y);
    } else {
      if (!x.Drawable(d.x)) continue;
      px = x(d.x);
    }
    if (d.hollow) {
      fmt::format_to(std::back_inserter(out),
                     "<circle cx=\"{}\" cy=\"{}\" r=\"3\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.3\" "
                     "stroke-opacity=\"{:.2f}\">",
                     Coord(px), Coord(y(d.y)), d.color, d.opacity);
    } else {
      fmt::format_to(std::back_inserter(out),
                     "<circle cx=\"{}\" cy=\"{}\" r=\"3.2\" fill=\"{}\" fill-opacity=\"{:.2f}\">", Coord(px),
                     Coord(y(d.y)), d.color, d.opacity);
    }
    AppendTitle(d.tooltip, out);
    out.append("</circle>");
  }
  for (auto& [c, values] : by_category) {
    if (!chart.spreads.empty()) break;  // the spreads mark the medians of every trial
    std::sort(values.begin(), values.end());
    size_t n = values.size();
    double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
    double cx = left + band * (static_cast<double>(c) + 0.5);
    fmt::format_to(
        std::back_inserter(out),
        "<line class=\"median\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"><title>median {3}</title></line>",
        Coord(cx - band * 0.35), Coord(cx + band * 0.35), Coord(y(median)), HtmlEscape(FormatSig(median, 3)));
  }
  out.append("</svg>");
  return out;
}

std::string RenderParallelChart(const ParallelChart& chart) {
  const double w = chart.width, h = chart.height;
  const double left = 70, right = w - 70, top = 26, bottom = h - 40;
  const size_t n = chart.axes.size();
  std::string out;
  OpenSvg(out, w, h, chart.title);
  if (n == 0) {
    out.append("</svg>");
    return out;
  }
  auto axis_x = [&](size_t a) {
    return n == 1 ? (left + right) / 2 : left + (right - left) * static_cast<double>(a) / static_cast<double>(n - 1);
  };
  // Each axis maps its values onto [bottom, top]; categories evenly, with a little room at the ends.
  std::vector<Scale> scales(n);
  std::vector<Ticks> ticks(n);
  for (size_t a = 0; a < n; ++a) {
    const ParallelAxis& ax = chart.axes[a];
    Scale& sc = scales[a];
    sc.r0 = ax.reversed ? top : bottom;
    sc.r1 = ax.reversed ? bottom : top;
    if (!ax.categories.empty()) {
      sc.d0 = -0.5;
      sc.d1 = static_cast<double>(ax.categories.size()) - 0.5;
      continue;
    }
    sc.log = ax.log;
    std::vector<double> values;
    for (const ParallelLine& l : chart.lines) {
      if (a < l.values.size()) values.push_back(l.values[a]);
    }
    Axis spec;
    ticks[a] = FitDomain(std::move(values), spec, sc, 4, LineChart::Clip::kNone);
  }
  for (size_t a = 0; a < n; ++a) {
    const ParallelAxis& ax = chart.axes[a];
    double px = axis_x(a);
    fmt::format_to(std::back_inserter(out), "<line class=\"axis\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>",
                   Coord(px), Coord(top), Coord(bottom));
    fmt::format_to(std::back_inserter(out), "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">",
                   Coord(px), Coord(top - 10));
    AppendHtmlEscaped(Ellipsize(ax.label, 22), out);
    out.append("</text>");
    auto tick = [&](double py, const std::string& label) {
      if (py < top - 0.5 || py > bottom + 0.5) return;
      fmt::format_to(std::back_inserter(out),
                     "<line class=\"axis\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>"
                     "<text class=\"tick\" x=\"{3}\" y=\"{4}\" text-anchor=\"end\">",
                     Coord(px - 4), Coord(px), Coord(py), Coord(px - 6), Coord(py + 3.5));
      AppendHtmlEscaped(label, out);
      out.append("</text>");
    };
    if (!ax.categories.empty()) {
      for (size_t c = 0; c < ax.categories.size(); ++c)
        tick(scales[a].Pixel(static_cast<double>(c)), Ellipsize(ax.categories[c], 10));
    } else {
      for (double t : ticks[a].values) tick(scales[a].Pixel(t), TickLabel(t, ticks[a], scales[a].log));
    }
  }
  for (const ParallelLine& l : chart.lines) {
    std::string d;
    bool pen_down = false;
    for (size_t a = 0; a < n && a < l.values.size(); ++a) {
      double v = l.values[a];
      const Scale& sc = scales[a];
      bool ok = chart.axes[a].categories.empty() ? sc.Drawable(v) : std::isfinite(v);
      if (!ok) {
        pen_down = false;
        continue;
      }
      double py = chart.axes[a].categories.empty() ? sc(v) : sc.Pixel(v);
      py = std::clamp(py, top, bottom);
      d.push_back(pen_down ? 'L' : 'M');
      AppendCoord(axis_x(a), d);
      d.push_back(' ');
      AppendCoord(py, d);
      pen_down = true;
    }
    if (d.empty()) continue;
    fmt::format_to(std::back_inserter(out),
                   "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{:.1f}\" stroke-opacity=\"{:.2f}\"{}>", d,
                   l.color, l.width, l.opacity, l.dashed ? " stroke-dasharray=\"4 3\"" : "");
    AppendTitle(l.tooltip, out);
    out.append("</path>");
  }
  out.append("</svg>");
  return out;
}

}  // namespace sweep::reports
