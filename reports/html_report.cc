// Rendering of the HTML sweep report; see html_report.h. The page is built as one string: a
// header, the headline (recommendation and speedup decomposition), the ranking table, charts,
// cost and metadata. Anything that did not come from our own code goes through HtmlEscape. This
// file holds the page's shell (head, header, about) and its order; html_page.h lists the others.
#include "reports/html_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "reports/html_page.h"
#include "reports/html_text.h"
#include "reports/report_util.h"
#include "reports/svg_chart.h"

#include "base/clock.h"

namespace sweep::reports {

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string OutcomeClass(Outcome o) {
  switch (o) {
    case Outcome::kCompleted:
      return "s-completed";
    case Outcome::kRunning:
      return "s-running";
    case Outcome::kQueued:
      return "s-queued";
    case Outcome::kCancelled:
      return "s-cancelled";
    case Outcome::kFailed:
      return "s-failed";
    case Outcome::kDropped:
      return "s-dropped";
  }
  return "s-queued";
}

std::string FormatCount(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out.append("\u202f");
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string HtmlPage::Render() {
  Head();
  out_.append("<body><main>");
  Header();
  AggregateNote();
  Headline();
  if (r_.configs)  // repeats over seeds
    out_.append(RenderConfigsSection(*r_.configs, metric_, Aggregated() ? o_.top_n : r_.configs->groups.size()));
  Ranking();
  Curves();
  Telemetry();
  Throughput();
  ParameterEffects();
  ParallelCoordinates();
  Importance();
  BestSoFarChart();
  Cost();
  About();
  out_.append("</main></body></html>\n");
  return std::move(out_);
}

void HtmlPage::AssignColors() {
  size_t next = 0;
  if (a_.recommended) colors_[*a_.recommended] = kRecommendedColor;
  if (r_.baseline) colors_.emplace(*r_.baseline, kBaselineColor);
  for (size_t i : a_.ranking) {
    if (colors_.size() >= o_.highlighted + (r_.baseline ? 1 : 0)) break;
    if (T(i).curve.empty() || colors_.count(i)) continue;
    colors_[i] = kPalette[next++ % std::size(kPalette)];
  }
}

void HtmlPage::ChooseDetailed() {
  detailed_.assign(r_.trials.size(), !Aggregated());
  if (!Aggregated()) return;
  for (size_t k = 0; k < std::min(o_.top_n, a_.ranking.size()); ++k) detailed_[a_.ranking[k]] = true;
  if (a_.recommended) detailed_[*a_.recommended] = true;
  if (r_.baseline) detailed_[*r_.baseline] = true;
  for (const auto& [i, color] : colors_) detailed_[i] = true;
  // With repeats the decisions are between configurations (issue 41): every repeat of the
  // recommended, runner-up and baseline configurations is drawn, not only their typical seed.
  if (!r_.configs) return;
  for (const auto& g : {a_.recommended_config, a_.runner_up_config, a_.baseline_config}) {
    if (!g || *g >= r_.configs->groups.size()) continue;
    for (size_t i : r_.configs->groups[*g].rows) detailed_[i] = true;
  }
}

size_t HtmlPage::DetailedCount() const {
  return static_cast<size_t>(std::count(detailed_.begin(), detailed_.end(), true));
}

void HtmlPage::AggregateNote() {
  if (!Aggregated()) return;
  fmt::format_to(Out(out_),
                 "<p class=\"note\" id=\"aggregated\"><strong>{} trials: the {} best ranked{} are shown in full, "
                 "the other {} as aggregates</strong> (quantile bands of their curves, distributions by parameter "
                 "value, counts). trials.csv has every trial's row and metrics.csv every logged point "
                 "(<code>slurmsweep report STUDY.toml --csv DIR</code>); this report lists the top {} of the "
                 "ranking.</p>\n",
                 FormatCount(static_cast<int64_t>(r_.trials.size())), std::min(o_.top_n, a_.ranking.size()),
                 r_.baseline ? ", the recommendation and the baseline" : " and the recommendation",
                 FormatCount(static_cast<int64_t>(r_.trials.size() - DetailedCount())), o_.top_n);
}

void HtmlPage::Head() {
  fmt::format_to(Out(out_),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                 "<meta name=\"color-scheme\" content=\"light\">"
                 "<meta name=\"generator\" content=\"slurmsweep {}\">"
                 "<title>Sweep report: {}</title><style>{}</style></head>\n",
                 kReportCsp, Esc(r_.meta.version), Esc(r_.meta.study_name), ReportStyle());
}

void HtmlPage::Header() {
  std::map<std::string, int> by_label;
  for (const auto& t : r_.trials) ++by_label[StateLabel(t.state)];
  // Completed first, then the other states, most frequent first.
  std::vector<std::pair<std::string, int>> states(by_label.begin(), by_label.end());
  std::stable_sort(states.begin(), states.end(), [](const auto& x, const auto& y) {
    return std::make_pair(x.first != "completed", -x.second) < std::make_pair(y.first != "completed", -y.second);
  });
  std::string counts;
  for (const auto& [label, n] : states) counts += fmt::format(" · {} {}", n, Esc(label));
  fmt::format_to(Out(out_),
                 "<header><p class=\"eyebrow\">slurmsweep sweep report</p><h1>{}</h1>"
                 "<p class=\"sub\">{} trials{} · objective: {} {} · generated {}</p></header>\n",
                 Esc(r_.meta.study_name), r_.trials.size(), counts, r_.meta.minimize ? "minimise" : "maximise",
                 Esc(metric_), Esc(FormatUtc(r_.meta.generated_at)));
}

std::string HtmlPage::TrialName(size_t i) const {
  return fmt::format("<strong>{}</strong> <span class=\"key\">({})</span>", Esc(ParamsText(r_, T(i))), Esc(T(i).key));
}

int HtmlPage::Completed() const {
  return static_cast<int>(std::count_if(r_.trials.begin(), r_.trials.end(), [](const TrialSummary& t) {
    return OutcomeOf(t.state) == Outcome::kCompleted;
  }));
}

std::string HtmlPage::CompletedText() const {
  int n = Completed();
  return n == 1 ? std::string("the 1 completed trial") : fmt::format("{} completed trials", n);
}

std::string HtmlPage::ResourcesText() const {
  const StudyMeta& m = r_.meta;
  if (m.gpus_per_node > 0) {
    return fmt::format("{} node{} × {} GPU{}", m.nodes, m.nodes == 1 ? "" : "s", m.gpus_per_node,
                       m.gpus_per_node == 1 ? "" : "s");
  }
  int cpus = std::max(1, m.cpus_per_task);
  return fmt::format("{} node{} × {} CPU{}", m.nodes, m.nodes == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s");
}

void HtmlPage::About() {
  const StudyMeta& m = r_.meta;
  out_.append("<section id=\"about\"><h2>About this report</h2><dl class=\"meta\">");
  auto item = [&](std::string_view term, const std::string& value, bool code = false) {
    if (value.empty()) return;
    fmt::format_to(Out(out_), "<dt>{}</dt><dd>{}{}{}</dd>", term, code ? "<code>" : "", Esc(value),
                   code ? "</code>" : "");
  };
  item("Generated", FormatUtc(m.generated_at));
  item("Study", m.study_name);
  item("Study file", m.study_path, true);
  item("Study file hash", m.study_hash, true);
  item("Template", m.template_path, true);
  item("Cluster", m.cluster);
  item("Resources per trial", ResourcesText());
  item("Objective", fmt::format("{} {}", m.minimize ? "minimise" : "maximise", m.objective_metric));
  if (m.trials_left_out > 0) {
    item("Left out", fmt::format("{} trial(s) run by an earlier version of the study file, whose parameter values "
                                 "are no longer in its [space]",
                                 m.trials_left_out));
  }
  if (r_.baseline) item("Baseline", T(*r_.baseline).key + " — " + r_.baseline_note);
  else item("Baseline", "none — " + r_.baseline_note);
  item("slurmsweep", m.version);
  out_.append(
      "</dl><h3 style=\"margin-top:12px\">How the numbers are computed</h3><ul class=\"defs\">"
      "<li>Throughput: iterations per second = 1000 / steady iteration time (ms): the median of the means of "
      "consecutive logged iteration times (32 or more each, kept by the database), the first (start-up) left "
      "out (below 96 points: the mean of the points after the first). TFLOP/s per GPU: median of the "
      "throughput_tflops metric.</li>"
      "<li>Final value (ranking, recommendation, target, status, trials.csv): mean of the objective's last 10 "
      "logged points (fewer for a shorter trial); ± is their standard deviation. The same trailing mean at every "
      "point is the smoothed curve the charts draw; steps to target is where it crosses the target for the last "
      "time, read between the two logged points it crosses between (a lucky first point, or a dip it climbs back "
      "out of, is not a crossing: it stays at or past the target from there to the end), so a trial whose final "
      "value is the target reaches it.</li>");
  if (r_.configs) {
    out_.append(
        "<li>Configurations (a study with repeats): a configuration is its trials that differ only in the seed. "
        "It is ranked, recommended and compared with the runner-up and the baseline by the mean final value of "
        "its completed repeats, ± the standard error of that mean (sd / √n). Two configurations are told apart by "
        "Welch's t test of their means (two-sided, 5%); when they are not, the same gap and spreads are projected "
        "to more seeds each, up to 50, to say how many would tell them apart. A configuration's throughput is the "
        "mean of its repeats'; its steps to target the mean of its completed repeats that reached it.</li>");
  }
  out_.append(
      "<li>Study type: a performance study when the configurations' measured speeds differ by 10% or more "
      "(fastest against slowest), whatever the parameters are called; its headline is the time to target.</li>");
  if (m.curves_from_buckets > 0) {
    fmt::format_to(Out(out_),
                   "<li>The curves of the {} longest trials are drawn from the means of consecutive points (32 or "
                   "more each, kept by the database as it ingests), ending at the final value; their final values "
                   "and steps to target are computed from the points as above, and their TFLOP/s, tokens/s and "
                   "batch size are the mean of their points after the first, not the median.</li>",
                   m.curves_from_buckets);
  }
  out_.append(
      "<li>Time to target = steps to target / throughput (steady state, start-up excluded). Throughput factor × "
      "convergence factor = time-to-target factor, all relative to the baseline the study names (none without "
      "one).</li>"
      "<li>GPU-hours = wall time (Slurm start to end, every attempt of a retried trial) × nodes × GPUs per node; "
      "CPU-hours with CPUs per task when "
      "the study uses no GPUs. Queue time = submission to start (for a job array's tasks, including the wait for a "
      "free slot under "
      "max_concurrent).</li>"
      "<li>Curves show the smoothed objective, downsampled (largest-triangle-three-buckets); trials.csv and "
      "metrics.csv have every logged point.</li>");
  if (Aggregated()) {
    fmt::format_to(Out(out_),
                   "<li>Aggregated (more than {} trials): the ranking table lists the top {} and the baseline, "
                   "the curves, the parameter charts' dots and the parallel coordinates draw the {} trials shown in "
                   "full; the others' curves are drawn as the 10th–90th and 25th–75th percentiles and the median "
                   "of their smoothed values at {} points across the axis (of the trials that reached each point), "
                   "and the parameter charts as the 10th, 25th, 50th, 75th and 90th percentiles of every trial by "
                   "value (by bin on a numeric axis). trials.csv and metrics.csv have every trial.</li>",
                   o_.detail_limit, o_.top_n, DetailedCount(), kBandPoints);
  }
  out_.append("</ul></section>\n");
}

std::string RenderHtmlReport(const StudyReport& report, const HtmlOptions& options) {
  return HtmlPage(report, options).Render();
}

}  // namespace sweep::reports
