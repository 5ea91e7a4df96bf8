// Rendering of `slurmsweep compare`; see compare_report.h. Everything from a study file, its
// parameters or its logs goes through HtmlEscape (HTML) or AppendCsvText (CSV).
#include "reports/compare_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "base/clock.h"
#include "reports/csv.h"
#include "reports/html_report.h"
#include "reports/html_text.h"
#include "reports/report_util.h"
#include "reports/svg_chart.h"

namespace sweep::reports {
namespace {

constexpr const char* kColors[] = {"#24292f", "#1a7f37", "#4e79a7", "#f28e2b", "#e15759", "#b07aa1", "#9c755f"};

using Out = std::back_insert_iterator<std::string>;
int CountCompleted(const StudyReport& r) {
  return static_cast<int>(std::count_if(r.trials.begin(), r.trials.end(), [](const TrialSummary& t) {
    return OutcomeOf(t.state) == Outcome::kCompleted;
  }));
}

}  // namespace

std::optional<double> CommonTarget(const std::vector<double>& best_finals, bool minimize) {
  if (best_finals.empty()) return std::nullopt;
  double worst = best_finals.front();
  for (double v : best_finals) {
    if (!std::isfinite(v)) return std::nullopt;
    if (Better(worst, v, minimize)) worst = v;
  }
  return worst;
}

StudyBest BestOf(const ComparedStudy& study, const ComparedStudy& first) {
  StudyBest b;
  const StudyMeta& m = study.report.meta;
  b.gpus = std::max(1, m.nodes) * (m.gpus_per_node > 0 ? m.gpus_per_node : std::max(1, m.cpus_per_task));
  b.trial = study.analysis.recommended;
  if (!b.trial) return b;
  const TrialSummary& t = study.report.trials[*b.trial];
  b.config = study.analysis.recommended_config;
  if (b.config) {
    b.value = study.report.configs->groups[*b.config].mean;
    b.speed = study.analysis.config_speed[*b.config];
  } else {
    b.value = t.final_value;
    if (Finite(t.iters_per_s)) b.speed.iters_per_s = t.iters_per_s;
    if (t.steps_to_target) b.speed.steps_to_target = static_cast<double>(*t.steps_to_target);
    b.speed.time_to_target = TimeToTarget(t);
  }
  b.time_to_target_s = b.speed.time_to_target;
  if (b.time_to_target_s) b.hours_to_target = *b.time_to_target_s * b.gpus / 3600;
  if (&study != &first && first.analysis.recommended) {
    StudyBest fb = BestOf(first, first);
    b.vs_first = Decompose(b.speed, fb.speed);
    if (b.hours_to_target && fb.hours_to_target && *b.hours_to_target > 0)
      b.cost_factor = *fb.hours_to_target / *b.hours_to_target;
  }
  return b;
}

std::string RenderCompareHtml(const Comparison& c) {
  std::string out;
  std::string names;
  for (size_t i = 0; i < c.studies.size(); ++i) names += (i ? " vs " : "") + c.studies[i].report.meta.study_name;
  const StudyMeta& m0 = c.studies.front().report.meta;
  const std::string metric = m0.objective_metric;
  fmt::format_to(Out(out),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">"
                 "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                 "<meta name=\"color-scheme\" content=\"light\">"
                 "<meta name=\"generator\" content=\"slurmsweep {}\">"
                 "<title>Comparison: {}</title><style>{}</style></head>\n<body><main>",
                 kReportCsp, Esc(c.version), Esc(names), ReportStyle());
  fmt::format_to(Out(out),
                 "<header><p class=\"eyebrow\">slurmsweep comparison of {} studies</p><h1>{}</h1>"
                 "<p class=\"sub\">objective: {} {} · generated {}</p></header>\n",
                 c.studies.size(), Esc(names), m0.minimize ? "minimise" : "maximise", Esc(metric),
                 Esc(FormatUtc(c.generated_at)));

  std::vector<StudyBest> best;
  for (const auto& s : c.studies) best.push_back(BestOf(s, c.studies.front()));

  // The headline: each study's gain over the first, split as in the single report.
  out.append("<section id=\"gain\" class=\"headline\"><h2>Gain over ");
  out.append(Esc(m0.study_name));
  out.append("</h2>");
  if (c.target) {
    fmt::format_to(Out(out), "<p class=\"note\">Target: {} {} {} — {}.</p>", Esc(metric), m0.minimize ? "≤" : "≥",
                   FormatSig(*c.target, 4), Esc(c.target_basis));
  }
  for (size_t i = 1; i < c.studies.size(); ++i) {
    const StudyReport& r = c.studies[i].report;
    const StudyBest& b = best[i];
    fmt::format_to(Out(out), "<h3>{}</h3>", Esc(r.meta.study_name));
    if (!b.trial || !best[0].trial) {
      fmt::format_to(Out(out), "<p class=\"basis\">No comparison: {} has no completed trial with a value of {}.</p>",
                     Esc(!b.trial ? r.meta.study_name : m0.study_name), Esc(metric));
      continue;
    }
    const ConfigSpeed& t = b.speed;
    const ConfigSpeed& f = best[0].speed;
    if (!b.vs_first) {
      out.append("<p class=\"basis\">");
      if (Finite(t.iters_per_s) && Finite(f.iters_per_s)) {
        fmt::format_to(Out(out), "Throughput {} ({} vs {} iter/s). ", FormatFactor(*t.iters_per_s / *f.iters_per_s),
                       FormatSig(*t.iters_per_s, 3), FormatSig(*f.iters_per_s, 3));
      }
      out.append("Time to target cannot be compared: ");
      out.append(!Finite(t.iters_per_s) || !Finite(f.iters_per_s) ? "an iteration time is missing."
                 : !t.steps_to_target || !f.steps_to_target       ? "a best trial never reached the target."
                                                                  : "the target is reached at the first point.");
      out.append("</p>");
      continue;
    }
    const Decomposition& d = *b.vs_first;
    auto factor = [&](const std::string& v, const std::string& label, const std::string& detail, const char* css) {
      fmt::format_to(Out(out),
                     "<div class=\"factor {}\"><div class=\"v\">{}</div><div class=\"l\">{}<br>{}</div></div>", css, v,
                     label, detail);
    };
    out.append("<div class=\"factors\">");
    factor(FormatFactor(d.throughput), "throughput",
           fmt::format("{} vs {} iter/s", FormatSig(*t.iters_per_s, 3), FormatSig(*f.iters_per_s, 3)), "");
    out.append("<span class=\"op\">×</span>");
    factor(FormatFactor(d.convergence), "convergence",
           fmt::format("target at step {} vs {}", std::llround(*t.steps_to_target), std::llround(*f.steps_to_target)),
           "");
    out.append("<span class=\"op\">=</span>");
    factor(FormatFactor(d.time_to_target), "time to target",
           fmt::format("{} vs {}", FormatDuration(*b.time_to_target_s), FormatDuration(*best[0].time_to_target_s)),
           d.time_to_target >= 1 ? "total" : "total slower");
    if (b.cost_factor) {
      factor(FormatFactor(*b.cost_factor), "cost to target",
             fmt::format("{} vs {} {} ({} vs {} {} per trial)", FormatHours(*b.hours_to_target),
                         FormatHours(*best[0].hours_to_target), HoursUnit(r.meta), b.gpus, best[0].gpus,
                         r.meta.gpus_per_node > 0 ? "GPUs" : "CPUs"),
             "");
    }
    out.append("</div>");
    fmt::format_to(Out(out),
                   "<p class=\"basis\">{}'s best reaches the target {} {} than {}'s: it runs {} the iterations per "
                   "second and needs {:.0f}% of the iterations.{}</p>",
                   Esc(r.meta.study_name),
                   FormatFactor(d.time_to_target >= 1 ? d.time_to_target : 1 / d.time_to_target),
                   d.time_to_target >= 1 ? "faster" : "<em>slower</em>", Esc(m0.study_name), FormatFactor(d.throughput),
                   100.0 / d.convergence,
                   b.cost_factor ? fmt::format(" In {}, {} {}.", HoursUnit(r.meta),
                                               FormatFactor(*b.cost_factor >= 1 ? *b.cost_factor : 1 / *b.cost_factor),
                                               *b.cost_factor >= 1 ? "cheaper" : "dearer")
                                 : std::string());
  }
  if (c.studies.size() < 2) out.append("<p class=\"note\">Only one study given.</p>");
  out.append("</section>\n");

  // The table of bests.
  out.append(
      "<section id=\"best\"><h2>Best configuration of each study</h2><div class=\"table-wrap\"><table><thead><tr>"
      "<th>study</th><th>best trial</th><th>configuration</th>");
  fmt::format_to(Out(out),
                 "<th class=\"n\">final {}</th><th class=\"n\">iter/s</th><th class=\"n\">tokens/s</th>"
                 "<th class=\"n\">steps to target</th><th class=\"n\">time to target</th><th class=\"n\">GPUs per "
                 "trial</th><th class=\"n\">hours to target</th><th class=\"n\">study hours spent</th>"
                 "<th class=\"n\">trials completed</th></tr></thead><tbody>",
                 Esc(metric));
  for (size_t i = 0; i < c.studies.size(); ++i) {
    const StudyReport& r = c.studies[i].report;
    const StudyBest& b = best[i];
    fmt::format_to(Out(out), "<tr><td><strong>{}</strong><br><code>{}</code></td>", Esc(r.meta.study_name),
                   Esc(r.meta.study_path));
    if (!b.trial) {
      out.append("<td colspan=\"2\">no completed trial with a value</td><td></td><td></td><td></td><td></td><td></td>");
      fmt::format_to(Out(out), "<td class=\"n\">{}</td><td></td>", b.gpus);
    } else {
      const TrialSummary& t = r.trials[*b.trial];
      std::string spread = Finite(t.final_spread) ? " ± " + FormatSig(*t.final_spread, 2) : "";
      std::string params = ParamsText(r, t);
      std::string key = t.key;
      if (b.config) {
        // A configuration over its seeds: its mean ± standard error (n), its mean speed.
        const ConfigGroup& g = r.configs->groups[*b.config];
        params = ConfigText(*r.configs, g);
        key = fmt::format("{} seeds", g.values.size());
        spread = MeanText(g).substr(MeanText(g).find(' '));
      }
      fmt::format_to(Out(out),
                     "<td><span class=\"key\">{}</span></td><td style=\"white-space:normal\">{}</td><td "
                     "class=\"n\">{}{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                     "<td class=\"n\">{}</td>",
                     Esc(key), Esc(params), FormatObjective(b.value), Esc(spread), FormatSigOr(b.speed.iters_per_s, 3),
                     t.tokens_per_s ? FormatCompact(*t.tokens_per_s) : "–",
                     b.speed.steps_to_target ? std::to_string(std::llround(*b.speed.steps_to_target)) : "not reached",
                     b.time_to_target_s ? FormatDuration(*b.time_to_target_s) : "–", b.gpus,
                     b.hours_to_target ? FormatHours(*b.hours_to_target) + " " + HoursUnit(r.meta) : "–");
    }
    fmt::format_to(Out(out), "<td class=\"n\">{} {}</td><td class=\"n\">{} of {}</td></tr>",
                   FormatHours(c.studies[i].analysis.cost.resource_hours), HoursUnit(r.meta), CountCompleted(r),
                   r.trials.size());
  }
  out.append("</tbody></table></div></section>\n");

  // The best trials' curves on one time axis, and their throughput.
  LineChart curves;
  curves.id = "compare-curves";
  curves.title = metric + " of each study's best by training time";
  curves.x.label = "training time";
  curves.x.duration = true;
  curves.y.label = metric;
  curves.clip_y = m0.minimize ? LineChart::Clip::kHigh : LineChart::Clip::kLow;
  curves.reference_y = c.target;
  curves.reference_label = "target";
  curves.width = 1100;
  BarChart bars;
  bars.title = "iterations per second of each study's best";
  bars.x.label = "iterations per second";
  bars.width = 1100;
  bars.label_width = 300;
  std::string legend = "<ul class=\"legend\">";
  for (size_t i = 0; i < c.studies.size(); ++i) {
    if (!best[i].trial) continue;
    const StudyReport& r = c.studies[i].report;
    const TrialSummary& t = r.trials[*best[i].trial];
    const char* color = kColors[i % std::size(kColors)];
    LineSeries s;
    for (const CurvePoint& p : t.curve) s.x.push_back(p.time_s), s.y.push_back(p.value);
    s.color = color;
    s.width = 2.2;
    s.dashed = i == 0;
    s.tooltip = r.meta.study_name + ": " + t.key;
    curves.series.push_back(std::move(s));
    if (Finite(t.iters_per_s)) {
      Bar b;
      b.label = r.meta.study_name + " " + t.key;
      b.value = *t.iters_per_s;
      b.color = color;
      b.value_text = FormatSig(b.value, 3);
      b.tooltip = r.meta.study_name + ": " + ParamsText(r, t);
      bars.bars.push_back(std::move(b));
    }
    fmt::format_to(Out(legend),
                   "<li><span class=\"sw{}\" style=\"background:{}\"></span>{} <span class=\"key\">{}</span></li>",
                   i == 0 ? " dash" : "", color, Esc(r.meta.study_name), Esc(t.key));
  }
  legend += "</ul>";
  if (!curves.series.empty()) {
    fmt::format_to(Out(out),
                   "<section id=\"curves\"><h2>Best trials</h2><figure>{}</figure>{}<figure>{}</figure><p "
                   "class=\"note\">Smoothed {} (mean of the last {} points) against training time; dashed: the "
                   "first study, the reference.</p></section>\n",
                   RenderLineChart(curves), legend, RenderBarChart(bars), Esc(metric), kFinalWindow);
  }

  out.append("<section id=\"about\"><h2>About this comparison</h2><dl class=\"meta\">");
  for (const auto& s : c.studies) {
    const StudyMeta& m = s.report.meta;
    fmt::format_to(Out(out), "<dt>{}</dt><dd><code>{}</code> (hash <code>{}</code>), {}</dd>", Esc(m.study_name),
                   Esc(m.study_path), Esc(m.study_hash), Esc(m.cluster));
  }
  fmt::format_to(Out(out), "<dt>slurmsweep</dt><dd>{}</dd></dl>", Esc(c.version));
  fmt::format_to(
      Out(out),
      "<ul class=\"defs\"><li>Best configuration: each study's own recommendation (its ranking, as in its "
      "report).</li><li>Final value: mean of the objective's last {} logged points; ± their standard "
      "deviation.</li><li>Time to target = steps until the smoothed curve reaches the common target / iterations "
      "per second (median iteration time). Throughput factor × convergence factor = time-to-target factor, each "
      "study's best against the first study's best.</li><li>Hours to target = time to target × GPUs per trial "
      "(nodes × GPUs per node; CPUs when the study has no GPUs); the cost factor is the first study's over this "
      "one's. Study hours spent: wall time × resources of every trial of the study.</li></ul></section>\n",
      kFinalWindow);
  out.append("</main></body></html>\n");
  return out;
}

std::string RenderCompareCsv(const Comparison& c) {
  std::string out =
      "study,study_file,best_trial,configuration,final_objective,final_spread,iters_per_s,tokens_per_s,"
      "steps_to_target,time_to_target_s,gpus_per_trial,hours_to_target,study_hours,throughput_factor,"
      "convergence_factor,time_to_target_factor,cost_factor\n";
  for (const auto& s : c.studies) {
    const StudyReport& r = s.report;
    StudyBest b = BestOf(s, c.studies.front());
    AppendCsvText(r.meta.study_name, out);
    out.push_back(',');
    AppendCsvText(r.meta.study_path, out);
    out.push_back(',');
    const TrialSummary* t = b.trial ? &r.trials[*b.trial] : nullptr;
    const ConfigGroup* g = b.config ? &r.configs->groups[*b.config] : nullptr;
    if (t) AppendCsvText(t->key, out);
    out.push_back(',');
    if (g) AppendCsvText(ConfigText(*r.configs, *g), out);
    else if (t) AppendCsvText(ParamsText(r, *t), out);
    // A configuration: its mean, the standard error of that mean, its mean speed and steps.
    for (std::optional<double> v :
         {b.value,
          g   ? g->sem
          : t ? t->final_spread
              : std::nullopt,
          b.speed.iters_per_s, t ? t->tokens_per_s : std::nullopt, b.speed.steps_to_target, b.time_to_target_s,
          std::optional<double>(b.gpus), b.hours_to_target, std::optional<double>(s.analysis.cost.resource_hours),
          b.vs_first ? std::optional<double>(b.vs_first->throughput) : std::nullopt,
          b.vs_first ? std::optional<double>(b.vs_first->convergence) : std::nullopt,
          b.vs_first ? std::optional<double>(b.vs_first->time_to_target) : std::nullopt, b.cost_factor}) {
      out.push_back(',');
      AppendCsvNumber(v, out);
    }
    out.push_back('\n');
  }
  return out;
}

}  // namespace sweep::reports
