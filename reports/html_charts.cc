// The HTML report's charts: curves, telemetry, throughput and the best value found against hours
// spent; the charts by parameter are html_params.cc's. See html_page.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "reports/html_page.h"
#include "reports/html_text.h"
#include "reports/report_util.h"
#include "reports/svg_chart.h"

namespace sweep::reports {

std::vector<LineSeries> HtmlPage::CurveSeries(bool by_time) const {
  std::vector<LineSeries> grey, named;
  for (size_t i = 0; i < r_.trials.size(); ++i) {
    const TrialSummary& t = T(i);
    if (t.curve.empty() || !Detailed(i)) continue;  // the others are CurveBands'
    LineSeries s;
    for (const CurvePoint& p : t.curve) {
      s.x.push_back(by_time ? p.time_s : static_cast<double>(p.step));
      s.y.push_back(p.value);
    }
    Outcome o = OutcomeOf(t.state);
    bool stopped = o == Outcome::kCancelled || o == Outcome::kFailed;
    s.end_marker = stopped;
    s.tooltip = t.key + " (" + StateLabel(t.state) + "): " + ParamsText(r_, t);
    auto color = colors_.find(i);
    if (color != colors_.end()) {
      s.color = color->second;
      s.width = IsRecommended(i) ? 2.6 : 1.8;
      s.dashed = IsBaseline(i) && !IsRecommended(i);
      s.opacity = stopped ? 0.45 : 1;
      named.push_back(std::move(s));
    } else {
      s.color = kOtherColor;
      s.width = 1;
      s.opacity = stopped ? 0.25 : 0.5;
      grey.push_back(std::move(s));
    }
  }
  // The recommendation last, on top of everything.
  std::stable_partition(named.begin(), named.end(), [](const LineSeries& s) { return s.color != kRecommendedColor; });
  grey.insert(grey.end(), std::make_move_iterator(named.begin()), std::make_move_iterator(named.end()));
  return grey;
}

void HtmlPage::Curves() {
  bool any = std::any_of(r_.trials.begin(), r_.trials.end(), [](const auto& t) { return !t.curve.empty(); });
  out_.append("<section id=\"curves\"><h2>Training curves</h2>");
  if (!any) {
    fmt::format_to(Out(out_), "<p class=\"note\">No {} logged yet.</p></section>\n", Esc(metric_));
    return;
  }
  LineChart by_step;
  by_step.id = "curve-step";
  by_step.title = metric_ + " by iteration";
  by_step.x.label = "iteration";
  by_step.y.label = metric_;
  by_step.clip_y = r_.meta.minimize ? LineChart::Clip::kHigh : LineChart::Clip::kLow;
  by_step.reference_y = r_.target;
  by_step.reference_label = "target";
  by_step.series = CurveSeries(false);
  LineChart by_time = by_step;
  by_time.id = "curve-time";
  by_time.title = metric_ + " by training time";
  by_time.x.label = "training time";
  by_time.x.duration = true;
  by_time.series = CurveSeries(true);
  CurveBands(false, by_step);
  CurveBands(true, by_time);
  fmt::format_to(Out(out_),
                 "<div class=\"grid2\"><figure><figcaption>{0} vs iteration</figcaption>{1}</figure>"
                 "<figure><figcaption>{0} vs training time</figcaption>{2}</figure></div>",
                 Esc(metric_), RenderLineChart(by_step), RenderLineChart(by_time));
  Legend();
  if (Aggregated()) {
    fmt::format_to(Out(out_),
                   "<p class=\"note\">Shaded: the other {} trials' curves, 10th–90th (light) and 25th–75th (dark) "
                   "percentiles of their smoothed values at each point, among the trials that reached it; the "
                   "dotted line is their median. Lines: the {} trials shown in full.</p>",
                   FormatCount(static_cast<int64_t>(r_.trials.size() - DetailedCount())), DetailedCount());
  }
  out_.append(
      "<p class=\"note\">Smoothed curves (see below). Grey: other trials. Faded with × at the end: stopped "
      "early (cancelled, pruned or failed). Dashed: the baseline. The y axis is cut above the 90th percentile of "
      "the points so the ends of the curves, where trials differ, stay readable.</p></section>\n");
}

namespace {
// The same quantiles, `qs` ascending, of unsorted values (reordered), without sorting them all:
// a partial selection per quantile, as 120 points x 10,000 curves ask.
std::vector<double> Quantiles(std::vector<double>& v, std::initializer_list<double> qs) {
  std::vector<double> out;
  auto from = v.begin();
  for (double q : qs) {
    double at = q * static_cast<double>(v.size() - 1);
    auto lo = v.begin() + static_cast<std::ptrdiff_t>(at);
    std::nth_element(from, lo, v.end());
    double a = *lo, b = lo + 1 < v.end() ? *std::min_element(lo + 1, v.end()) : a;
    out.push_back(a + (b - a) * (at - std::floor(at)));
    from = lo;
  }
  return out;
}
}  // namespace

void HtmlPage::CurveBands(bool by_time, LineChart& chart) const {
  if (!Aggregated()) return;
  std::vector<const TrialSummary*> rest;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  auto x_of = [&](const CurvePoint& p) { return by_time ? p.time_s : static_cast<double>(p.step); };
  for (size_t i = 0; i < r_.trials.size(); ++i) {
    if (Detailed(i) || T(i).curve.empty()) continue;
    rest.push_back(&T(i));
    for (const CurvePoint& p : T(i).curve) {
      if (std::isfinite(x_of(p))) lo = std::min(lo, x_of(p)), hi = std::max(hi, x_of(p));
    }
  }
  if (rest.empty() || !(hi > lo)) return;
  // Each curve read at kBandPoints evenly spaced x, linearly between its points, where it reaches.
  std::vector<double> grid(kBandPoints);
  for (size_t g = 0; g < kBandPoints; ++g)
    grid[g] = lo + (hi - lo) * static_cast<double>(g) / static_cast<double>(kBandPoints - 1);
  std::vector<std::vector<double>> at(kBandPoints);
  for (const TrialSummary* t : rest) {
    const std::vector<CurvePoint>& c = t->curve;
    size_t k = 0;
    for (size_t g = 0; g < kBandPoints; ++g) {
      double gx = grid[g];
      while (k + 1 < c.size() && !(x_of(c[k + 1]) >= gx)) ++k;
      if (k + 1 >= c.size()) {
        // Past the second-last point: only the last point itself, if the grid lands on it.
        if (x_of(c[k]) == gx && std::isfinite(c[k].value)) at[g].push_back(c[k].value);
        continue;
      }
      double x0 = x_of(c[k]), x1 = x_of(c[k + 1]);
      if (!(x0 <= gx) || !std::isfinite(x0) || !std::isfinite(x1)) continue;
      double f = x1 > x0 ? (gx - x0) / (x1 - x0) : 0;
      double v = c[k].value + (c[k + 1].value - c[k].value) * f;
      if (std::isfinite(v)) at[g].push_back(v);
    }
  }
  LineBand outer, inner;
  LineSeries median;
  constexpr size_t kMinTrials = 5;  // fewer than this at a point: no band there
  for (size_t g = 0; g < kBandPoints; ++g) {
    std::vector<double>& v = at[g];
    bool ok = v.size() >= kMinTrials;
    double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> q = ok ? Quantiles(v, {0.10, 0.25, 0.5, 0.75, 0.90}) : std::vector<double>(5, nan);
    outer.x.push_back(grid[g]), inner.x.push_back(grid[g]), median.x.push_back(grid[g]);
    outer.lo.push_back(q[0]), outer.hi.push_back(q[4]);
    inner.lo.push_back(q[1]), inner.hi.push_back(q[3]);
    median.y.push_back(q[2]);
  }
  std::string who = fmt::format("the other {} trials", rest.size());
  outer.opacity = 0.18;
  outer.tooltip = who + ": 10th to 90th percentile";
  inner.opacity = 0.3;
  inner.tooltip = who + ": 25th to 75th percentile";
  median.color = kOtherColor;
  median.width = 1.2;
  median.dashed = true;
  median.tooltip = who + ": median";
  chart.bands.push_back(std::move(outer));
  chart.bands.push_back(std::move(inner));
  chart.series.insert(chart.series.begin(), std::move(median));
}

void HtmlPage::Telemetry() {
  if (!r_.meta.monitor) return;
  std::vector<size_t> order;
  std::vector<bool> placed(r_.trials.size());  // not a search per trial: 10,000 trials (issue 42)
  for (size_t i : a_.ranking) order.push_back(i), placed[i] = true;
  for (size_t i = 0; i < r_.trials.size(); ++i) {
    if (!placed[i]) order.push_back(i);
  }
  order.erase(std::remove_if(order.begin(), order.end(), [&](size_t i) { return T(i).telemetry.empty(); }),
              order.end());
  out_.append("<section id=\"telemetry\"><h2>Telemetry</h2>");
  if (order.empty()) {
    out_.append("<p class=\"note\">No telemetry sample stored yet ([job] monitor = true).</p></section>\n");
    return;
  }
  size_t shown = std::min(order.size(), o_.top_n);
  for (size_t k = 0; k < shown; ++k) TelemetryRow(order[k]);
  if (shown < order.size()) {
    fmt::format_to(Out(out_), "<p class=\"note\">{} more trials have telemetry: metrics.csv has every sample.</p>",
                   order.size() - shown);
  }
  out_.append(
      "<p class=\"note\">Sampled beside the trainer on the job's batch host every monitor_interval_s: GPUs by "
      "nvidia-smi where it is on the PATH (utilization, memory used, power), the node's CPU busy share and memory "
      "in use (MemTotal - MemAvailable) from /proc. Dashed: the memory planner's predicted peak per GPU for the "
      "configuration, beside the measured GPU memory.</p></section>\n");
}

void HtmlPage::TelemetryRow(size_t i) {
  const TrialSummary& t = T(i);
  auto series_of = [&](std::string_view suffix, bool gpus) {
    std::vector<LineSeries> out;
    size_t color = 0;
    for (const auto& s : t.telemetry) {
      bool is_gpu = s.name.rfind("system/gpu", 0) == 0;
      if (is_gpu != gpus || s.name.size() < suffix.size() ||
          s.name.compare(s.name.size() - suffix.size(), suffix.size(), suffix) != 0) {
        continue;
      }
      LineSeries l;
      l.x = s.t_s;
      l.y = s.values;
      l.color = kPalette[color++ % std::size(kPalette)];
      l.width = 1.5;
      // "system/gpu0/util_pct" -> "gpu0"
      std::string who = s.name.substr(7, s.name.find('/', 7) - 7);
      l.tooltip = who;
      out.push_back(std::move(l));
    }
    return out;
  };
  auto chart = [&](std::string id, std::string title, std::string y, std::vector<LineSeries> series) {
    LineChart c;
    c.id = fmt::format("tel-{}-{}", t.id, id);
    c.title = std::move(title);
    c.x.label = "time since the first sample";
    c.x.duration = true;
    c.y.label = std::move(y);
    c.y.min = 0;
    c.clip_y = LineChart::Clip::kNone;
    c.series = std::move(series);
    c.width = 360;
    c.height = 220;
    return c;
  };
  std::vector<std::string> figures;
  auto names = [](const std::vector<LineSeries>& v) {
    std::vector<std::string> n;
    for (const auto& l : v) n.push_back(l.tooltip);
    return n;
  };
  std::vector<LineSeries> util = series_of("/util_pct", true);
  std::vector<LineSeries> cpu = series_of("/cpu_pct", false);
  for (auto& l : cpu) l.tooltip = "node CPU", l.color = kBaselineColor, l.dashed = !util.empty();
  std::vector<std::string> util_names = names(util);
  if (!cpu.empty()) util_names.push_back("node CPU" + std::string(util.empty() ? "" : " (dashed)"));
  util.insert(util.end(), cpu.begin(), cpu.end());
  if (!util.empty()) {
    LineChart c = chart("util", "utilization", "%", std::move(util));
    c.y.max = 100;
    figures.push_back(fmt::format("<figure><figcaption>Utilization: {}</figcaption>{}</figure>",
                                  Esc(fmt::format("{}", fmt::join(util_names, ", "))), RenderLineChart(c)));
  }
  std::vector<LineSeries> mem = series_of("/mem_used_gib", true);
  std::string what = "GPU memory used";
  if (mem.empty()) {
    mem = series_of("/mem_used_gib", false);
    for (auto& l : mem) l.tooltip = "node";
    what = "node memory in use";
  }
  std::vector<std::string> mem_names = names(mem);
  if (!mem.empty() && t.predicted_gpu_mem_gib && what == "GPU memory used") {
    double lo = 0, hi = 0;
    for (const auto& l : mem) {
      for (double x : l.x) lo = std::min(lo, x), hi = std::max(hi, x);
    }
    LineSeries p;
    p.x = {lo, hi};
    p.y = {*t.predicted_gpu_mem_gib, *t.predicted_gpu_mem_gib};
    p.color = kBaselineColor;
    p.dashed = true;
    p.tooltip = fmt::format("planner's prediction {} GiB", FormatSig(*t.predicted_gpu_mem_gib, 3));
    mem_names.push_back(p.tooltip + " (dashed)");
    mem.push_back(std::move(p));
  }
  if (!mem.empty()) {
    LineChart c = chart("mem", what, "GiB", std::move(mem));
    figures.push_back(fmt::format("<figure><figcaption>{}: {}</figcaption>{}</figure>", Esc(what),
                                  Esc(fmt::format("{}", fmt::join(mem_names, ", "))), RenderLineChart(c)));
  }
  std::vector<LineSeries> power = series_of("/power_w", true);
  if (!power.empty()) {
    std::vector<std::string> power_names = names(power);
    LineChart c = chart("power", "power draw", "W", std::move(power));
    figures.push_back(fmt::format("<figure><figcaption>Power draw: {}</figcaption>{}</figure>",
                                  Esc(fmt::format("{}", fmt::join(power_names, ", "))), RenderLineChart(c)));
  }
  fmt::format_to(Out(out_), "<h3><span class=\"key\">{}</span> {}</h3><div class=\"grid3\">{}</div>", Esc(t.key),
                 Esc(Ellipsize(ParamsText(r_, t), 90)), fmt::format("{}", fmt::join(figures, "")));
}

void HtmlPage::Legend() {
  out_.append("<ul class=\"legend\">");
  auto item = [&](size_t i) {
    auto c = colors_.find(i);
    if (c == colors_.end()) return;
    std::string tag = IsRecommended(i) ? " <span class=\"tag\">recommended</span>"
                      : IsBaseline(i)  ? " <span class=\"tag base\">baseline</span>"
                                       : "";
    fmt::format_to(Out(out_),
                   "<li><span class=\"sw{}\" style=\"background:{}\"></span><span class=\"key\">{}</span> {}{}</li>",
                   IsBaseline(i) && !IsRecommended(i) ? " dash" : "", c->second, Esc(T(i).key),
                   Esc(Ellipsize(ParamsText(r_, T(i)), 70)), tag);
  };
  if (a_.recommended) item(*a_.recommended);
  if (r_.baseline && !IsRecommended(*r_.baseline)) item(*r_.baseline);
  for (size_t i : a_.ranking) {
    if (!IsRecommended(i) && !IsBaseline(i)) item(i);
  }
  out_.append("</ul>");
}

void HtmlPage::Throughput() {
  std::vector<size_t> with;
  for (size_t i = 0; i < r_.trials.size(); ++i) {
    if (Finite(T(i).iters_per_s)) with.push_back(i);
  }
  out_.append("<section id=\"throughput\"><h2>Throughput by configuration</h2>");
  if (with.empty()) {
    out_.append("<p class=\"note\">No iteration times logged yet.</p></section>\n");
    return;
  }
  std::stable_sort(with.begin(), with.end(), [&](size_t x, size_t y) { return *T(x).iters_per_s > *T(y).iters_per_s; });
  if (FlatThroughput()) {
    fmt::format_to(Out(out_),
                   "<p class=\"note\">Every configuration runs at the same speed within {:.0f}% ({} to {} "
                   "iterations per second over {} trials): this study's parameters change what is learnt, not "
                   "the speed.</p></section>\n",
                   100 * (*T(with.front()).iters_per_s / *T(with.back()).iters_per_s - 1),
                   FormatSig(*T(with.back()).iters_per_s, 3), FormatSig(*T(with.front()).iters_per_s, 3), with.size());
    return;
  }
  if (r_.configs) {
    ConfigThroughput();
    return;
  }
  size_t shown = std::min(o_.throughput_bars, with.size());
  // The baseline always has a bar, as the reference the others are read against.
  if (r_.baseline) {
    auto it = std::find(with.begin(), with.end(), *r_.baseline);
    if (it != with.end() && static_cast<size_t>(it - with.begin()) >= shown) {
      std::rotate(with.begin() + static_cast<long>(shown) - 1, it, it + 1);
    }
  }
  std::optional<double> base_ips;
  if (r_.baseline && Finite(T(*r_.baseline).iters_per_s)) base_ips = T(*r_.baseline).iters_per_s;
  BarChart chart;
  chart.title = "iterations per second by configuration";
  chart.x.label = "iterations per second (median iteration time)";
  for (size_t k = 0; k < shown; ++k) {
    const TrialSummary& t = T(with[k]);
    Bar b;
    b.label = ParamsText(r_, t, " ");
    b.tooltip = t.key + " (" + StateLabel(t.state) + "): " + ParamsText(r_, t);
    b.value = *t.iters_per_s;
    b.value_text = FormatSig(b.value, 3);
    if (base_ips && !IsBaseline(with[k])) b.value_text += " " + FormatFactor(b.value / *base_ips);
    Outcome o = OutcomeOf(t.state);
    b.color = IsRecommended(with[k])                               ? kRecommendedColor
              : IsBaseline(with[k])                                ? kBaselineColor
              : o == Outcome::kCompleted || o == Outcome::kRunning ? "#4e79a7"
                                                                   : "#c3ccd6";
    chart.bars.push_back(std::move(b));
  }
  chart.width = 1100;
  chart.label_width = 420;
  fmt::format_to(Out(out_), "<figure>{}</figure>", RenderBarChart(chart));
  // The count says how many bars are drawn of how many trials logged a time: a chart cut at
  // throughput_bars must not read as trials that logged none.
  fmt::format_to(Out(out_),
                 "<p class=\"note\">{} trials logged iteration times; {}, fastest first{}. Green: the "
                 "recommendation; {}pale: stopped or failed trials.{}</p></section>\n",
                 with.size(), shown < with.size() ? fmt::format("the fastest {} are drawn", shown) : "all are drawn",
                 shown < with.size() ? " (the rest are in the table and trials.csv)" : "",
                 r_.baseline ? "black: the baseline; " : "",
                 base_ips ? " The factor is relative to the baseline." : "");
}

void HtmlPage::ConfigThroughput() {
  // One bar per configuration: the mean throughput of its repeats (a seed does not change the
  // speed; one bar per seed would only repeat the configuration).
  const ConfigRanking& r = *r_.configs;
  std::vector<size_t> with;
  size_t trials = 0;
  for (size_t g = 0; g < r.groups.size(); ++g) {
    if (Finite(r.groups[g].iters_per_s)) with.push_back(g), trials += r.groups[g].with_throughput;
  }
  std::stable_sort(with.begin(), with.end(),
                   [&](size_t x, size_t y) { return *r.groups[x].iters_per_s > *r.groups[y].iters_per_s; });
  size_t shown = std::min(o_.throughput_bars, with.size());
  if (a_.baseline_config) {
    auto it = std::find(with.begin(), with.end(), *a_.baseline_config);
    if (it != with.end() && static_cast<size_t>(it - with.begin()) >= shown) {
      std::rotate(with.begin() + static_cast<long>(shown) - 1, it, it + 1);
    }
  }
  std::optional<double> base_ips;
  if (a_.baseline_config) base_ips = r.groups[*a_.baseline_config].iters_per_s;
  BarChart chart;
  chart.title = "iterations per second by configuration";
  chart.x.label = "iterations per second (mean over the configuration's repeats)";
  for (size_t k = 0; k < shown; ++k) {
    const ConfigGroup& g = r.groups[with[k]];
    bool rec = a_.recommended_config && *a_.recommended_config == with[k];
    bool base = a_.baseline_config && *a_.baseline_config == with[k];
    Bar b;
    b.label = ConfigText(r, g);
    b.tooltip = fmt::format("{}: mean of {} repeat{}", b.label, g.with_throughput, g.with_throughput == 1 ? "" : "s");
    b.value = *g.iters_per_s;
    b.value_text = FormatSig(b.value, 3);
    if (base_ips && !base) b.value_text += " " + FormatFactor(b.value / *base_ips);
    b.color = rec ? kRecommendedColor : base ? kBaselineColor : g.values.empty() ? "#c3ccd6" : "#4e79a7";
    chart.bars.push_back(std::move(b));
  }
  chart.width = 1100;
  chart.label_width = 420;
  fmt::format_to(Out(out_), "<figure>{}</figure>", RenderBarChart(chart));
  fmt::format_to(Out(out_),
                 "<p class=\"note\">One bar per configuration: the mean iterations per second of its repeats. {} "
                 "configuration{} ({} trials) logged iteration times; {}, fastest first. Green: the recommendation; "
                 "{}pale: no completed repeat.{}</p></section>\n",
                 with.size(), with.size() == 1 ? "" : "s", trials,
                 shown < with.size() ? fmt::format("the fastest {} are drawn", shown) : "all are drawn",
                 a_.baseline_config ? "black: the baseline; " : "",
                 base_ips ? " The factor is relative to the baseline configuration." : "");
}

bool HtmlPage::FlatThroughput() const {
  if (!Hpo()) return false;
  double lo = 0, hi = 0;
  for (const auto& t : r_.trials) {
    if (!Finite(t.iters_per_s) || *t.iters_per_s <= 0) continue;
    lo = lo == 0 ? *t.iters_per_s : std::min(lo, *t.iters_per_s);
    hi = std::max(hi, *t.iters_per_s);
  }
  return lo > 0 && hi / lo < 1.10;
}

void HtmlPage::BestSoFarChart() {
  auto points = BestSoFar(r_);
  if (std::none_of(points.begin(), points.end(), [](const BestSoFarPoint& p) { return p.improved; })) return;
  LineSeries s;
  s.color = kRecommendedColor;
  s.width = 2;
  std::optional<double> prev;
  double found_at = 0;
  for (size_t k = 0; k < points.size(); ++k) {
    const BestSoFarPoint& p = points[k];
    if (!p.best) continue;
    // A step line: a point that neither improves nor ends it draws nothing (10,000 trials, a few dozen points).
    if (prev && !p.improved && k + 1 < points.size()) continue;
    if (prev && p.improved) {
      s.x.push_back(p.hours);
      s.y.push_back(*prev);
    }
    s.x.push_back(p.hours);
    s.y.push_back(*p.best);
    prev = p.best;
    if (p.improved && a_.recommended && p.trial == *a_.recommended) found_at = p.hours;
  }
  LineChart chart;
  chart.id = "best-so-far";
  chart.title = "best final " + metric_ + " so far by " + HoursUnit(r_.meta) + " spent";
  chart.x.label = "cumulative " + HoursUnit(r_.meta) + " (trials in the order they ended)";
  chart.y.label = "best final " + metric_;
  chart.clip_y = LineChart::Clip::kNone;
  chart.series.push_back(std::move(s));
  chart.width = 1100;
  chart.height = 300;
  double total = points.back().hours;
  std::string found;
  if (found_at > 0 && total > 0) {
    found = fmt::format(" The recommendation was found after {} of the {} {} spent on ended trials ({:.0f}%).",
                        FormatHours(found_at), FormatHours(total), HoursUnit(r_.meta), 100 * found_at / total);
  }
  fmt::format_to(Out(out_),
                 "<section id=\"best-so-far\"><h2>Best so far against cost</h2><figure>{}</figure><p "
                 "class=\"note\">Each ended trial (completed, pruned or failed) adds its {} in the order the "
                 "trials ended; the line is the best final {} among the completed ones by then: what the search "
                 "cost to find its winner.{}</p></section>\n",
                 RenderLineChart(chart), HoursUnit(r_.meta), Esc(metric_), found);
}

}  // namespace sweep::reports
