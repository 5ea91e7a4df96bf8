// The HTML report's parameter importance (study_report.h: ParamImportances); see html_page.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "reports/html_page.h"
#include "reports/html_text.h"
#include "reports/report_util.h"
#include "reports/svg_chart.h"

namespace sweep::reports {

std::string HtmlPage::StoppedLeftOut(int n) {
  if (n == 0) return "";
  return fmt::format(
      "; {} trial{} stopped early (pruned or cancelled) {} left out, {} value{} being from "
      "earlier in training",
      n, n == 1 ? "" : "s", n == 1 ? "is" : "are", n == 1 ? "its" : "their", n == 1 ? "" : "s");
}

void HtmlPage::Importance() {
  if (r_.meta.param_names.size() < 1) return;
  Importances imp = ParamImportances(r_);
  out_.append("<section id=\"importance\"><h2>Parameter importance</h2>");
  if (!imp.why_none.empty()) {
    fmt::format_to(Out(out_), "<p class=\"note\">Not estimated: {}{}.</p></section>\n", Esc(imp.why_none),
                   StoppedLeftOut(imp.stopped_left_out));
    return;
  }
  BarChart chart;
  chart.title = "share of the variance of the final value explained by each parameter";
  chart.x.label = "share of the explained variance";
  chart.x.min = 0;
  chart.x.max = 1;
  for (const ParamImportance& p : imp.params) {
    Bar b;
    b.label = r_.meta.param_names[p.param];
    b.value = p.share;
    if (p.estimable) {
      b.value_text = fmt::format("{:.0f}% (ε² {:.2f}, {} groups)", 100 * p.share, p.epsilon2, p.groups);
    } else if (p.groups < 2) {
      b.value_text = "not estimable: one value";
    } else {
      // Each group a trial or two explains the spread by construction, not by effect.
      b.value_text = fmt::format("not estimable: {} groups of {} trials", p.groups, imp.trials);
    }
    b.tooltip = b.label + ": " + b.value_text;
    b.color = "#4e79a7";
    chart.bars.push_back(std::move(b));
  }
  chart.width = 1100;
  chart.label_width = 260;
  fmt::format_to(Out(out_),
                 "<figure>{}</figure><p class=\"note\">From the {} completed trials' final {}{}. Method: for "
                 "each parameter alone, a one-way analysis of variance of the final value grouped by the "
                 "parameter's value (a numeric parameter with more than 6 values, or fewer than 2 trials per "
                 "value: 2 to 5 groups of equal size by rank); not estimable with one value or fewer than 2 "
                 "trials per group; "
                 "ε² = (between-group sum of squares − (groups − 1) × within-group mean square) / total sum of "
                 "squares, the share of the variance the parameter explains beyond what as many random groups "
                 "would, clipped at 0; the bars are each ε² over their sum. Main effects only: an effect that "
                 "exists only in combination with another parameter is not shown. "
                 "<code>bench/importance_vs_optuna.py</code> checks it against Optuna's fANOVA.</p></section>\n",
                 RenderBarChart(chart), imp.trials, Esc(metric_), StoppedLeftOut(imp.stopped_left_out));
}

}  // namespace sweep::reports
