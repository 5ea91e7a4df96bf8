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

namespace {

std::string Trials(int n) { return fmt::format("{} trial{}", n, n == 1 ? "" : "s"); }

}  // namespace

std::string HtmlPage::ImportanceLeftOut(const Importances& imp) {
  std::string out;
  std::vector<std::string> left;
  if (imp.stopped_left_out > 0) {
    left.push_back(
        fmt::format("{} stopped early before step {} (a quarter of the completed trials' median length: "
                    "comparing every trial there would compare the start of training)",
                    Trials(imp.stopped_left_out), imp.min_step));
  }
  if (imp.running_left_out > 0) left.push_back(fmt::format("{} still running", Trials(imp.running_left_out)));
  if (imp.failed_left_out > 0) {
    left.push_back(
        fmt::format("{} that failed (their values are from a run that broke off)", Trials(imp.failed_left_out)));
  }
  if (!left.empty()) fmt::format_to(Out(out), " Left out: {}.", fmt::join(left, "; "));
  return out;
}

void HtmlPage::Importance() {
  if (r_.meta.param_names.size() < 1) return;
  Importances imp = ParamImportances(r_);
  out_.append("<section id=\"importance\"><h2>Parameter importance</h2>");
  if (!imp.why_none.empty()) {
    fmt::format_to(Out(out_), "<p class=\"note\">Not estimated: {}.{}</p></section>\n", Esc(imp.why_none),
                   ImportanceLeftOut(imp));
    return;
  }
  BarChart chart;
  chart.title = imp.at_step ? fmt::format("share of the variance of the value at step {} explained by each parameter",
                                          *imp.at_step)
                            : "share of the variance of the final value explained by each parameter";
  chart.x.label = "share of the explained variance";
  chart.x.min = 0;
  chart.x.max = 1;
  for (const ParamImportance& p : imp.params) {
    Bar b;
    b.label = r_.meta.param_names[p.param];
    b.value = p.share;
    if (p.estimable) {
      b.value_text = fmt::format("{:.0f}% (ε² {:.2f}, {} groups{})", 100 * p.share, p.epsilon2, p.groups,
                                 p.by_rank ? " by rank" : "");
    } else if (p.groups < 2) {
      b.value_text = "not estimable: one value";
    } else {
      // Each group a trial or two explains the spread by construction, not by effect.
      b.value_text = fmt::format("not estimable: {} groups of {} {}", p.groups, imp.trials,
                                 imp.configurations ? "configurations" : "trials");
    }
    b.tooltip = b.label + ": " + b.value_text;
    b.color = "#4e79a7";
    chart.bars.push_back(std::move(b));
  }
  chart.width = 1100;
  chart.label_width = 260;
  std::string basis =
      imp.at_step ? fmt::format(
                        "From {} trials' smoothed {} at step {}, the last step all of them reached ({} completed, {} "
                        "stopped early by pruning or cancellation): compared at equal step, since a stopped trial's "
                        "final value is from earlier in training than a completed one's, and leaving it out would "
                        "hide what stopped it.",
                        imp.trials, Esc(metric_), *imp.at_step, imp.trials - imp.stopped, imp.stopped)
                  : fmt::format("From the {} completed trials' final {}.", imp.trials, Esc(metric_));
  if (imp.configurations > 0) {
    // Seeds of one configuration are not independent draws of its parameters.
    basis = fmt::format(
        "Over the {} configurations, each by the mean of its repeats' {} (the seeds of a configuration are repeats "
        "of one draw of the parameters, not more draws; the seed is no parameter here){}.",
        imp.configurations, Esc(metric_),
        imp.at_step ? fmt::format(", at step {}, the last step all compared trials reached", *imp.at_step) : "");
  }
  std::string caveat;
  if (!imp.correlated.empty()) {
    std::vector<std::string> pairs;
    for (const ParamCorrelation& c : imp.correlated) {
      pairs.push_back(fmt::format("{} and {} (Spearman ρ = {:.2f})", Esc(r_.meta.param_names[c.a]),
                                  Esc(r_.meta.param_names[c.b]), c.rho));
    }
    caveat = fmt::format(
        "<p class=\"basis caveat\">Caution: the sampler drew some parameters together over the {} compared "
        "{}: {}. A share given to one of a correlated pair may be the other's effect; these shares cannot tell "
        "them apart (a grid or random sampler, or a study that varies one of them alone, can).</p>",
        imp.trials, imp.configurations ? "configurations" : "trials", fmt::join(pairs, "; "));
  }
  fmt::format_to(Out(out_),
                 "<figure>{}</figure><p class=\"note\">{}{} Method: for "
                 "each parameter alone, a one-way analysis of variance of the value grouped by the "
                 "parameter's value (a numeric parameter with more than 6 values, or fewer than 2 trials per "
                 "value: 2 to 5 groups of equal size by rank); not estimable with one value or fewer than 2 "
                 "trials per group; "
                 "ε² = (between-group sum of squares − (groups − 1) × within-group mean square) / total sum of "
                 "squares, the share of the variance the parameter explains beyond what as many random groups "
                 "would, clipped at 0; the bars are each ε² over their sum. Main effects only: an effect that "
                 "exists only in combination with another parameter is not shown. "
                 "<code>bench/importance_vs_optuna.py</code> checks it against Optuna's fANOVA.</p>{}</section>\n",
                 RenderBarChart(chart), basis, ImportanceLeftOut(imp), caveat);
}

}  // namespace sweep::reports
