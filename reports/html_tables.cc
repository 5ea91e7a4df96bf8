// The HTML report's tables: the ranking and what the sweep cost; see html_page.h.
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

void HtmlPage::Ranking() {
  bool tokens = std::any_of(r_.trials.begin(), r_.trials.end(), [](const auto& t) { return Finite(t.tokens_per_s); });
  // A workload without a FLOP count (or on CPUs) logs zeros: no column then.
  bool tflops = std::any_of(r_.trials.begin(), r_.trials.end(),
                            [](const auto& t) { return Finite(t.tflops_per_gpu) && *t.tflops_per_gpu > 0; });
  std::string head = "<div class=\"table-wrap\"><table><thead><tr><th class=\"n\">#</th><th>trial</th>";
  // Long parameter names may break after an underscore, so the table fits a laptop screen.
  for (const auto& p : r_.meta.param_names) head += "<th>" + ReplaceAll(Esc(p), "_", "_<wbr>") + "</th>";
  // Steps and queue time are left off the printed page, which has no room for every column.
  head += "<th>state</th><th class=\"n np\">steps</th><th class=\"n\">iter/s</th>";
  if (tokens) head += "<th class=\"n\">tokens/s</th>";
  if (tflops)
    head += r_.meta.gpus_per_node > 0 ? "<th class=\"n\">TFLOP/s per GPU</th>" : "<th class=\"n\">TFLOP/s</th>";
  bool mfu = std::any_of(r_.trials.begin(), r_.trials.end(), [](const auto& t) { return Finite(t.mfu); });
  if (mfu) head += "<th class=\"n\" title=\"model FLOPs utilisation against the peak the study gives\">MFU</th>";
  head += fmt::format(
      "<th class=\"n\">final {}</th><th class=\"n\">time to target</th><th class=\"n\">{}</th>"
      "<th class=\"n np\" title=\"from submission to start: the cluster's queue, and for a job "
      "array's tasks also the wait for a free slot under max_concurrent\">queued</th></tr></thead>"
      "<tbody>",
      Esc(metric_), HoursUnit(r_.meta));
  auto row = [&](size_t rank, size_t i) {
    const TrialSummary& t = T(i);
    Outcome o = OutcomeOf(t.state);
    std::string cls = IsRecommended(i) ? " class=\"recommended\"" : IsBaseline(i) ? " class=\"baseline\"" : "";
    fmt::format_to(Out(out_), "<tr{}><td class=\"n\">{}</td><td><span class=\"key\">{}</span>{}{}</td>", cls, rank + 1,
                   Esc(t.key), IsRecommended(i) ? "<br><span class=\"tag\">recommended</span>" : "",
                   IsBaseline(i) ? "<br><span class=\"tag base\">baseline</span>" : "");
    for (size_t p = 0; p < r_.meta.param_names.size(); ++p) {
      const std::string value = p < t.param_values.size() ? t.param_values[p].text : "";
      if (value.size() > 24) {
        fmt::format_to(Out(out_), "<td title=\"{}\">{}</td>", Esc(value), Esc(Ellipsize(value, 24)));
      } else {
        fmt::format_to(Out(out_), "<td>{}</td>", Esc(value));
      }
    }
    std::string detail = t.reason;
    if (!t.exit_code.empty() && t.exit_code != "0:0") detail += (detail.empty() ? "" : "; ") + ("exit " + t.exit_code);
    // The reason in full on hover; beside the badge only for failures, shortened, to keep the table narrow.
    bool show = !detail.empty() && (o == Outcome::kFailed || o == Outcome::kCancelled);
    // A pruned trial's badge says "pruned" already: beside it, which rule (the numbers on hover
    // and in the Stopped early table).
    std::string note = Ellipsize(detail, 22);
    if (constexpr std::string_view kBy = "pruned by the "; t.state == "pruned" && detail.starts_with(kBy)) {
      note = detail.substr(kBy.size(),
                           detail.find(':') == std::string::npos ? std::string::npos : detail.find(':') - kBy.size());
    }
    fmt::format_to(Out(out_), "<td><span class=\"badge {}\" title=\"{}\">{}</span>{}</td>", OutcomeClass(o),
                   Esc(detail), Esc(StateLabel(t.state)), show ? " <span class=\"note\">" + Esc(note) + "</span>" : "");
    fmt::format_to(Out(out_), "<td class=\"n np\">{}</td><td class=\"n\">{}</td>", FormatCount(t.steps),
                   FormatSigOr(t.iters_per_s, 3));
    if (tokens)
      fmt::format_to(Out(out_), "<td class=\"n\">{}</td>", t.tokens_per_s ? FormatCompact(*t.tokens_per_s) : "–");
    if (tflops) fmt::format_to(Out(out_), "<td class=\"n\">{}</td>", FormatSigOr(t.tflops_per_gpu, 3));
    if (mfu) {
      fmt::format_to(Out(out_), "<td class=\"n\">{}</td>",
                     Finite(t.mfu) ? fmt::format("{:.1f}%", *t.mfu * 100) : std::string("–"));
    }
    auto ttt = TimeToTarget(t);
    auto hours = ResourceHours(t, r_.meta);
    fmt::format_to(
        Out(out_),
        "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n np\">{}</td></tr>",
        FormatObjective(t.final_value), ttt ? FormatDuration(*ttt) : (t.final_value && r_.target ? "not reached" : "–"),
        hours ? FormatHours(*hours) : "–", t.queue_s ? FormatDuration(std::max(0.0, *t.queue_s)) : "–");
  };
  size_t shown = std::min(o_.top_n, a_.ranking.size());
  fmt::format_to(
      Out(out_),
      "<section id=\"ranking\"><h2>Ranking</h2><p class=\"note\">Completed trials first, {}; "
      "then running, stopped, failed, waiting and dropped ones.</p>",
      r_.meta.rank_by_time_to_target
          ? "quickest to the target first (the objective), then those that never reached it by final " + Esc(metric_)
          : "best final " + Esc(metric_) + " first");
  out_.append(head);
  for (size_t k = 0; k < shown; ++k) row(k, a_.ranking[k]);
  if (Aggregated()) {
    // Beyond the top rows: the baseline's row at its rank, then what is left counted by state.
    for (size_t k = shown; k < a_.ranking.size(); ++k) {
      if (IsBaseline(a_.ranking[k]) || IsRecommended(a_.ranking[k])) row(k, a_.ranking[k]);
    }
    out_.append("</tbody></table></div>");
    std::map<std::string, int> by_label;
    for (size_t k = shown; k < a_.ranking.size(); ++k) {
      size_t i = a_.ranking[k];
      if (!IsBaseline(i) && !IsRecommended(i)) ++by_label[StateLabel(T(i).state)];
    }
    int rest = 0;
    std::string counts;
    for (const auto& [label, n] : by_label) {
      rest += n;
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", FormatCount(n), Esc(label));
    }
    if (rest > 0) {
      fmt::format_to(Out(out_),
                     "<p class=\"note\" id=\"ranking-rest\">{} more trials ranked below these ({}): not listed "
                     "here; trials.csv has every trial's row.</p>",
                     FormatCount(rest), counts);
    }
    out_.append("</section>\n");
    return;
  }
  out_.append("</tbody></table></div>");
  if (shown < a_.ranking.size()) {
    fmt::format_to(Out(out_), "<details><summary>{} more trials</summary>", a_.ranking.size() - shown);
    out_.append(head);
    for (size_t k = shown; k < a_.ranking.size(); ++k) row(k, a_.ranking[k]);
    out_.append("</tbody></table></div></details>");
  }
  out_.append("</section>\n");
}

void HtmlPage::Cost() {
  const CostSummary& c = a_.cost;
  const std::string unit = HoursUnit(r_.meta);
  out_.append("<section id=\"cost\"><h2>Cost</h2><div class=\"cards\">");
  fmt::format_to(Out(out_),
                 "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">{} spent (wall time × {}) — completed "
                 "{}, failed {}, stopped {}, running {}</div></div>",
                 FormatHours(c.resource_hours), unit, Esc(ResourcesText()), FormatHours(c.completed_hours),
                 FormatHours(c.failed_hours), FormatHours(c.cancelled_hours), FormatHours(c.running_hours));
  if (c.with_queue_time > 0) {
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">median queue time (submitted → "
                   "started) over {} trials; longest {}, total {}</div></div>",
                   FormatDuration(c.queue_median_s), c.with_queue_time, FormatDuration(c.queue_max_s),
                   FormatDuration(c.queue_total_s));
  }
  int failed = 0;
  double failed_hours = 0;
  for (const auto& f : c.failures) failed += f.trials, failed_hours += f.hours;
  fmt::format_to(Out(out_),
                 "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">trials failed or stopped early, "
                 "using {} {}</div></div>",
                 failed, FormatHours(failed_hours), unit);
  if (c.pruned > 0) {
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">≈ {}</div><div class=\"l\">{} saved by early stopping: {} "
                   "pruned trial{}, each counted as the iterations it had left at its own speed (up to the median "
                   "completed trial's wall time when its log does not give the run's length)</div></div>",
                   FormatHours(c.pruned_saved_hours), unit, c.pruned, c.pruned == 1 ? "" : "s");
  }
  out_.append("</div>");
  if (!c.failures.empty()) {
    fmt::format_to(Out(out_),
                   "<h3>Failures by class</h3><table style=\"width:auto\"><thead><tr><th>class</th>"
                   "<th class=\"n\">trials</th><th class=\"n\">{}</th></tr></thead><tbody>",
                   unit);
    for (const auto& f : c.failures) {
      fmt::format_to(Out(out_), "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", Esc(f.label),
                     f.trials, FormatHours(f.hours));
    }
    out_.append("</tbody></table>");
  }
  // Each early stop in full: the ranking shows the rule on hover only, which a printout loses.
  if (Aggregated()) {
    StoppedEarlyByRule();
    out_.append("</section>\n");
    return;
  }
  bool any_pruned = false;
  for (const TrialSummary& t : r_.trials) {
    if (t.state != "pruned") continue;
    if (!any_pruned) {
      out_.append(
          "<h3>Stopped early</h3><table><thead><tr><th>trial</th><th class=\"n\">steps</th>"
          "<th>rule and the numbers that decided it</th></tr></thead><tbody>");
      any_pruned = true;
    }
    // The rule's numbers run long: they wrap inside the card rather than widen it.
    fmt::format_to(Out(out_), "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"why\">{}</td></tr>", Esc(t.key),
                   FormatCount(t.steps), Esc(t.reason));
  }
  if (any_pruned) out_.append("</tbody></table>");
  out_.append("</section>\n");
}

namespace {
// The rule of a pruned trial's reason: "pruned by the lead rule: ..." -> "lead rule".
std::string RuleOf(const std::string& reason) {
  constexpr std::string_view kBy = "pruned by the ";
  std::string rule = reason.starts_with(kBy) ? reason.substr(kBy.size()) : reason;
  return rule.substr(0, rule.find(':'));
}
}  // namespace

void HtmlPage::StoppedEarlyByRule() {
  std::map<std::string, std::vector<int64_t>> by_rule;  // steps at the stop
  for (const TrialSummary& t : r_.trials) {
    if (t.state == "pruned") by_rule[RuleOf(t.reason)].push_back(t.steps);
  }
  if (by_rule.empty()) return;
  out_.append(
      "<h3>Stopped early</h3><table style=\"width:auto\"><thead><tr><th>rule</th><th class=\"n\">trials</th>"
      "<th class=\"n\">median steps at the stop</th></tr></thead><tbody>");
  for (auto& [rule, steps] : by_rule) {
    std::sort(steps.begin(), steps.end());
    fmt::format_to(Out(out_), "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>", Esc(rule),
                   FormatCount(static_cast<int64_t>(steps.size())), FormatCount(steps[steps.size() / 2]));
  }
  out_.append("</tbody></table>");
  // The numbers that decided each stop, for the trials shown in full.
  bool any = false;
  for (size_t i = 0; i < r_.trials.size(); ++i) {
    const TrialSummary& t = T(i);
    if (t.state != "pruned" || !Detailed(i)) continue;
    if (!any) {
      out_.append(
          "<table><thead><tr><th>trial</th><th class=\"n\">steps</th><th>rule and the numbers that decided it "
          "(trials shown in full)</th></tr></thead><tbody>");
      any = true;
    }
    fmt::format_to(Out(out_), "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"why\">{}</td></tr>", Esc(t.key),
                   FormatCount(t.steps), Esc(t.reason));
  }
  if (any) out_.append("</tbody></table>");
  out_.append("<p class=\"note\">Every pruned trial's rule and numbers: trials.csv (reason).</p>");
}

}  // namespace sweep::reports
