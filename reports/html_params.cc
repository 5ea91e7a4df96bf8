// The HTML report's charts by parameter: each parameter's effect (dots, or a box per value when the
// study is aggregated) and the parallel coordinates; see html_page.h.
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

std::optional<HtmlPage::ParamAxis> HtmlPage::AxisOf(size_t p) const {
  std::map<std::string, double> distinct;  // each value's text, and its number when numeric
  bool numeric = true, integers = true;
  double lo = 0, hi = 0;
  for (const auto& t : r_.trials) {
    if (OutcomeOf(t.state) == Outcome::kDropped || p >= t.param_values.size()) continue;
    const ParamCell& cell = t.param_values[p];
    std::optional<double> number = cell.Number();
    if (!distinct.emplace(cell.text, number.value_or(0)).second) continue;
    if (!number) {
      numeric = false;
      continue;
    }
    double v = *number;
    integers = integers && v == std::floor(v);
    lo = distinct.size() == 1 ? v : std::min(lo, v);
    hi = distinct.size() == 1 ? v : std::max(hi, v);
  }
  if (distinct.empty()) return std::nullopt;
  bool sampled_log = p < r_.meta.param_log.size() && r_.meta.param_log[p];
  ParamAxis axis;
  bool continuous = numeric && (sampled_log || distinct.size() > 12 || (!integers && distinct.size() >= 3));
  if (continuous) {
    axis.log = lo > 0 && (sampled_log || hi / lo >= 20);
    return axis;
  }
  if (!numeric && distinct.size() > 24) return std::nullopt;
  for (const auto& [text, number] : distinct) axis.categories.push_back(text);
  if (numeric) {
    std::sort(axis.categories.begin(), axis.categories.end(),
              [&](const std::string& x, const std::string& y) { return distinct[x] < distinct[y]; });
  }
  for (size_t c = 0; c < axis.categories.size(); ++c) axis.index[axis.categories[c]] = c;
  return axis;
}

double HtmlPage::AxisValue(const ParamAxis& axis, const TrialSummary& t, size_t p) const {
  if (p >= t.param_values.size()) return std::nan("");
  if (!axis.categories.empty()) {
    auto it = axis.index.find(t.param_values[p].text);
    return it == axis.index.end() ? std::nan("") : static_cast<double>(it->second);
  }
  return t.param_values[p].Number().value_or(std::nan(""));
}

bool HtmlPage::HasFinal(const TrialSummary& t) {
  Outcome o = OutcomeOf(t.state);
  return Finite(t.final_value) && o != Outcome::kDropped && o != Outcome::kQueued;
}

void HtmlPage::ParameterEffects() {
  if (r_.meta.param_names.empty()) return;
  out_.append("<section id=\"parameters\"><h2>Effect of each parameter</h2><div class=\"grid3\">");
  const bool flat = FlatThroughput();
  for (size_t p = 0; p < r_.meta.param_names.size(); ++p) {
    auto axis = AxisOf(p);
    if (!axis) {
      fmt::format_to(Out(out_), "<p class=\"note\">{}: too many distinct values to chart.</p>",
                     Esc(r_.meta.param_names[p]));
      continue;
    }
    auto chart = [&](bool throughput) {
      DotChart d;
      const std::string& name = r_.meta.param_names[p];
      d.title = (throughput ? "iterations per second" : "final " + metric_) + " by " + name;
      d.x.label = name + (axis->log ? " (log scale)" : "");
      d.y.label = throughput ? "iter/s" : "final " + metric_;
      if (throughput) d.y.min = 0;
      d.x.log = axis->log;
      d.categories = axis->categories;
      d.spreads = Spreads(*axis, p, throughput);
      for (size_t i = 0; i < r_.trials.size(); ++i) {
        const TrialSummary& t = T(i);
        Outcome o = OutcomeOf(t.state);
        std::optional<double> y = throughput ? t.iters_per_s : t.final_value;
        if (!Finite(y) || (!throughput && !HasFinal(t)) || !Detailed(i)) continue;
        Dot dot;
        dot.x = AxisValue(*axis, t, p);
        if (!std::isfinite(dot.x)) continue;
        dot.y = *y;
        bool stopped = o != Outcome::kCompleted;
        dot.hollow = !throughput && stopped;
        dot.color = IsRecommended(i)                                     ? kRecommendedColor
                    : IsBaseline(i)                                      ? kBaselineColor
                    : o == Outcome::kCompleted || o == Outcome::kRunning ? "#4e79a7"
                                                                         : "#8c959f";
        dot.opacity = o == Outcome::kCompleted || IsBaseline(i) ? 0.85 : 0.6;
        dot.tooltip = t.key + " (" + StateLabel(t.state) +
                      (stopped ? fmt::format(" at step {}", t.steps) : std::string()) + "): " + FormatSig(*y, 4);
        d.dots.push_back(std::move(dot));
      }
      if (d.dots.empty() && d.spreads.empty()) return std::string();
      return fmt::format("<figure><figcaption>{}</figcaption>{}</figure>", Esc(d.title), RenderDotChart(d));
    };
    if (!flat) out_.append(chart(true));
    out_.append(chart(false));
  }
  if (Aggregated()) {
    fmt::format_to(Out(out_),
                   "</div><p class=\"note\">Boxes: every trial by value (by bin on a numeric axis): the 25th to "
                   "75th percentile, whiskers to the 10th and 90th, the line the median; the count on hover. Dots: "
                   "the {} trials shown in full (green: recommended, black: baseline; rings stopped early or still "
                   "running, at the value they had then).</p></section>\n",
                   DetailedCount());
    return;
  }
  fmt::format_to(Out(out_),
                 "</div><p class=\"note\">One dot per trial (green: recommended, black: baseline). Final value: "
                 "filled dots completed, rings stopped early (pruned, cancelled, failed) or still running, at the "
                 "value they had then (the last {} points' mean); the bar is the median of the completed trials "
                 "of each value. Continuous parameters are on a numeric axis, logarithmic where sampled so."
                 "{}</p></section>\n",
                 kFinalWindow, flat ? "" : " Throughput includes running and stopped trials.");
}

std::vector<Spread> HtmlPage::Spreads(const ParamAxis& axis, size_t p, bool throughput) const {
  if (!Aggregated()) return {};
  // (x, y) of every trial the chart would draw a dot for.
  std::vector<std::pair<double, double>> points;
  for (const TrialSummary& t : r_.trials) {
    std::optional<double> y = throughput ? t.iters_per_s : t.final_value;
    if (!Finite(y) || (!throughput && !HasFinal(t))) continue;
    double x = AxisValue(axis, t, p);
    if (std::isfinite(x) && (!axis.log || x > 0)) points.emplace_back(x, *y);
  }
  if (points.empty()) return {};
  constexpr size_t kBins = 12;
  std::map<size_t, std::vector<double>> groups;  // by category or bin
  double lo = 0, hi = 0;
  if (axis.categories.empty()) {
    auto domain = [&](double x) { return axis.log ? std::log10(x) : x; };
    lo = hi = domain(points[0].first);
    for (const auto& [x, y] : points) lo = std::min(lo, domain(x)), hi = std::max(hi, domain(x));
    for (const auto& [x, y] : points) {
      size_t bin = hi > lo ? std::min(kBins - 1, static_cast<size_t>((domain(x) - lo) / (hi - lo) * kBins)) : 0;
      groups[bin].push_back(y);
    }
  } else {
    for (const auto& [x, y] : points) groups[static_cast<size_t>(x)].push_back(y);
  }
  std::vector<Spread> out;
  for (auto& [g, ys] : groups) {
    std::sort(ys.begin(), ys.end());
    Spread sp;
    if (axis.categories.empty()) {
      double width = hi > lo ? (hi - lo) / kBins : 1;
      auto value = [&](double d) { return axis.log ? std::pow(10.0, d) : d; };
      sp.x_lo = value(lo + width * static_cast<double>(g));
      sp.x_hi = value(lo + width * static_cast<double>(g + 1));
    } else {
      sp.x = static_cast<double>(g);
    }
    sp.p10 = Quantile(ys, 0.10), sp.p25 = Quantile(ys, 0.25), sp.p50 = Quantile(ys, 0.5);
    sp.p75 = Quantile(ys, 0.75), sp.p90 = Quantile(ys, 0.90);
    sp.n = ys.size();
    sp.tooltip = fmt::format(
        "{} trials{}: median {}, 25th–75th percentile {} to {}, 10th–90th {} to {}", ys.size(),
        axis.categories.empty()
            ? fmt::format(" with {} {} to {}", r_.meta.param_names[p], FormatSig(sp.x_lo, 3), FormatSig(sp.x_hi, 3))
            : " with " + r_.meta.param_names[p] + " = " + axis.categories[g],
        FormatSig(sp.p50, 4), FormatSig(sp.p25, 4), FormatSig(sp.p75, 4), FormatSig(sp.p10, 4), FormatSig(sp.p90, 4));
    out.push_back(std::move(sp));
  }
  return out;
}

std::string HtmlPage::RankColor(size_t rank, size_t n) {
  double f = n > 1 ? static_cast<double>(rank) / static_cast<double>(n - 1) : 0;
  auto mix = [&](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
  return fmt::format("#{:02x}{:02x}{:02x}", mix(0x08, 0xb8), mix(0x45, 0xcf), mix(0x94, 0xe4));
}

void HtmlPage::ParallelCoordinates() {
  if (r_.meta.param_names.empty()) return;
  ParallelChart chart;
  chart.title = "parallel coordinates: parameters and final " + metric_;
  std::vector<ParamAxis> axes;
  std::vector<size_t> params;
  for (size_t p = 0; p < r_.meta.param_names.size(); ++p) {
    auto axis = AxisOf(p);
    if (!axis) continue;
    ParallelAxis pa;
    pa.label = r_.meta.param_names[p];
    pa.categories = axis->categories;
    pa.log = axis->log;
    chart.axes.push_back(pa);
    axes.push_back(*axis);
    params.push_back(p);
  }
  ParallelAxis objective;
  objective.label = "final " + metric_;
  objective.reversed = r_.meta.minimize;  // the best at the top
  chart.axes.push_back(objective);
  std::vector<size_t> completed, stopped;
  for (size_t i : a_.ranking) {
    if (!HasFinal(T(i)) || !Detailed(i)) continue;
    (OutcomeOf(T(i).state) == Outcome::kCompleted ? completed : stopped).push_back(i);
  }
  if (completed.empty() && stopped.empty()) return;
  auto line = [&](size_t i) {
    ParallelLine l;
    for (size_t k = 0; k < params.size(); ++k) l.values.push_back(AxisValue(axes[k], T(i), params[k]));
    l.values.push_back(*T(i).final_value);
    l.tooltip = T(i).key + " (" + StateLabel(T(i).state) + "): " + ParamsText(r_, T(i)) + "; final " +
                FormatObjective(T(i).final_value);
    return l;
  };
  for (size_t i : stopped) {
    ParallelLine l = line(i);
    l.color = "#8c959f";
    l.opacity = 0.35;
    l.dashed = true;
    chart.lines.push_back(std::move(l));
  }
  // Worst first, so the best lie on top.
  for (size_t k = completed.size(); k-- > 0;) {
    ParallelLine l = line(completed[k]);
    l.color = IsRecommended(completed[k]) ? kRecommendedColor : RankColor(k, completed.size());
    l.width = IsRecommended(completed[k]) ? 2.6 : 1.4;
    l.opacity = IsRecommended(completed[k]) ? 1 : 0.75;
    chart.lines.push_back(std::move(l));
  }
  if (a_.recommended)
    std::stable_partition(chart.lines.begin(), chart.lines.end(),
                          [&](const ParallelLine& l) { return l.color != kRecommendedColor; });
  fmt::format_to(Out(out_),
                 "<section id=\"parallel\"><h2>Parallel coordinates</h2><figure>{}</figure><p class=\"note\">One "
                 "line per trial through its parameter values to its final {} ({} at the top). Completed trials "
                 "from dark (best) to pale (worst), the recommendation in green; dashed grey: stopped early or "
                 "still running, at their value then.{}</p></section>\n",
                 RenderParallelChart(chart), Esc(metric_), r_.meta.minimize ? "lowest" : "highest",
                 Aggregated() ? fmt::format(" Only the {} trials shown in full are drawn; the distributions of "
                                            "all {} are in the charts above, every trial in trials.csv.",
                                            DetailedCount(), FormatCount(static_cast<int64_t>(r_.trials.size())))
                              : std::string());
}

}  // namespace sweep::reports
