// The HTML report's headline: the recommendation, its speedup over the baseline split into
// throughput x convergence, or for a hyperparameter study the best value, its noise and the gap to
// the runner-up; see html_page.h.
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

void HtmlPage::Factor(std::string_view value, std::string_view label, std::string_view detail, std::string_view css) {
  fmt::format_to(Out(out_), "<div class=\"factor {}\"><div class=\"v\">{}</div><div class=\"l\">{}<br>{}</div></div>",
                 css, value, label, detail);
}

std::string HtmlPage::ValueSpread(const TrialSummary& t) const {
  std::string s = FormatObjective(t.final_value);
  if (Finite(t.final_spread) && Finite(t.final_value)) s += " ± " + FormatSig(*t.final_spread, 2);
  return s;
}

void HtmlPage::HpoHeadline() {
  size_t rec = *a_.recommended;
  const TrialSummary& t = T(rec);
  fmt::format_to(Out(out_), "<p class=\"rec\">Use {}: the best final {} among {}.</p><div class=\"cards\">",
                 TrialName(rec), Esc(metric_), CompletedText());
  fmt::format_to(Out(out_),
                 "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">final {} (mean of its last {} "
                 "logged points) ± their standard deviation: how much the end of the curve still moves</div></div>",
                 Esc(ValueSpread(t)), Esc(metric_), t.final_points);
  std::optional<double> gap;
  double noise = Finite(t.final_spread) ? *t.final_spread : 0;
  if (a_.runner_up) {
    const TrialSummary& u = T(*a_.runner_up);
    gap = std::fabs(*t.final_value - *u.final_value);
    if (Finite(u.final_spread)) noise = std::max(noise, *u.final_spread);
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">ahead of the runner-up "
                   "<span class=\"key\">{}</span> ({}), final {} {}</div></div>",
                   FormatSig(*gap, 3), Esc(u.key), Esc(Ellipsize(ParamsText(r_, u), 60)), Esc(metric_),
                   Esc(ValueSpread(u)));
  }
  if (r_.baseline && r_.baseline_named && !IsBaseline(rec) && Finite(T(*r_.baseline).final_value)) {
    const TrialSummary& b = T(*r_.baseline);
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">better than the baseline "
                   "<span class=\"key\">{}</span>, final {} {}</div></div>",
                   FormatSig(std::fabs(*t.final_value - *b.final_value), 3), Esc(b.key), Esc(metric_),
                   Esc(ValueSpread(b)));
  }
  out_.append("</div>");
  if (gap) {
    if (noise > 0 && *gap <= noise) {
      fmt::format_to(Out(out_),
                     "<p class=\"basis\">The gap to the runner-up is within the noise of the last points ({} ≤ "
                     "{}): these runs do not tell the two apart; rerun both with other seeds before choosing.</p>",
                     FormatSig(*gap, 2), FormatSig(noise, 2));
    } else if (noise > 0) {
      fmt::format_to(Out(out_),
                     "<p class=\"basis\">The gap to the runner-up is {} the larger spread of their last "
                     "points.</p>",
                     FormatFactor(*gap / noise));
    }
  } else {
    out_.append("<p class=\"basis\">Only one trial has completed: nothing to compare it with yet.</p>");
  }
  fmt::format_to(Out(out_),
                 "<p class=\"note\">A hyperparameter study ({}): the headline is the final value, not speed.</p>",
                 Esc(r_.meta.kind_basis));
  if (r_.baseline && r_.baseline_named && IsBaseline(rec))
    out_.append("<p class=\"basis\">This is the baseline configuration: no other trial did better.</p>");
  if (r_.target && r_.target_basis == "set for this report") TargetLine();
}

void HtmlPage::Headline() {
  out_.append("<section id=\"recommendation\" class=\"headline\"><h2>Recommendation</h2>");
  if (a_.recommended && Hpo()) {
    HpoHeadline();
    out_.append("</section>\n");
    return;
  }
  if (!a_.recommended) {
    out_.append("<p class=\"rec\">No trial has completed with a value of the objective yet.</p>");
    TargetLine();
    out_.append("</section>\n");
    return;
  }
  size_t rec = *a_.recommended;
  const TrialSummary& t = T(rec);
  if (r_.meta.rank_by_time_to_target && TimeToTarget(t)) {
    fmt::format_to(Out(out_),
                   "<p class=\"rec\">Use {}: the shortest training time to the target ({}) among {}; final {} "
                   "{}.</p>",
                   TrialName(rec), FormatDuration(*TimeToTarget(t)), CompletedText(), Esc(metric_),
                   FormatObjective(t.final_value));
  } else {
    fmt::format_to(Out(out_), "<p class=\"rec\">Use {}: the best final {} ({}) among {}.</p>", TrialName(rec),
                   Esc(metric_), FormatObjective(t.final_value), CompletedText());
  }
  if (!r_.baseline) {
    fmt::format_to(Out(out_), "<p class=\"note\">No speedup is shown: {}</p>", Esc(r_.baseline_note));
  } else if (IsBaseline(rec)) {
    out_.append("<p class=\"basis\">This is the baseline configuration: no other trial did better.</p>");
  } else {
    const TrialSummary& b = T(*r_.baseline);
    if (a_.decomposition) {
      const Decomposition& d = *a_.decomposition;
      out_.append("<div class=\"factors\">");
      Factor(FormatFactor(d.throughput), "throughput",
             fmt::format("{} vs {} iter/s", FormatSig(*t.iters_per_s, 3), FormatSig(*b.iters_per_s, 3)));
      out_.append("<span class=\"op\">×</span>");
      Factor(FormatFactor(d.convergence), "convergence",
             fmt::format("target at step {} vs {}", FormatCount(*t.steps_to_target), FormatCount(*b.steps_to_target)));
      out_.append("<span class=\"op\">=</span>");
      Factor(FormatFactor(d.time_to_target), "time to target",
             fmt::format("{} vs {}", FormatDuration(*TimeToTarget(t)), FormatDuration(*TimeToTarget(b))),
             d.time_to_target >= 1 ? "total" : "total slower");
      out_.append("</div>");
      std::string why = fmt::format("it runs {} the iterations per second and needs {:.0f}% of the iterations",
                                    FormatFactor(d.throughput), 100.0 / d.convergence);
      if (d.time_to_target >= 1) {
        fmt::format_to(Out(out_), "<p class=\"basis\">{} faster to the target than the baseline: {}.</p>",
                       FormatFactor(d.time_to_target), why);
      } else {
        // Best at the end is not always first to the baseline's level; say so plainly.
        fmt::format_to(Out(out_),
                       "<p class=\"basis\">{} <em>slower</em> to the target than the baseline ({}), but it ends at "
                       "a better {}.</p>",
                       FormatFactor(1 / d.time_to_target), why, Esc(metric_));
      }
    } else {
      out_.append("<p class=\"basis\">");
      if (Finite(t.iters_per_s) && Finite(b.iters_per_s)) {
        fmt::format_to(Out(out_), "Throughput {} ({} vs {} iter/s). ", FormatFactor(*t.iters_per_s / *b.iters_per_s),
                       FormatSig(*t.iters_per_s, 3), FormatSig(*b.iters_per_s, 3));
      }
      out_.append("Time to target cannot be compared: ");
      out_.append(!t.steps_to_target   ? "the recommendation's smoothed curve never reached the target."
                  : !b.steps_to_target ? "the baseline never reached the target."
                                       : "a throughput is missing.");
      out_.append("</p>");
    }
    fmt::format_to(Out(out_), "<p class=\"basis\">Baseline: {}, final {} {} ({}).</p>", TrialName(*r_.baseline),
                   Esc(metric_), FormatObjective(b.final_value), Esc(StateLabel(b.state)));
  }
  TargetLine();
  if (a_.fastest && *a_.fastest != rec) {
    const TrialSummary& f = T(*a_.fastest);
    std::string vs;
    if (r_.baseline && TimeToTarget(T(*r_.baseline))) {
      vs = fmt::format(", {} vs the baseline", FormatFactor(*TimeToTarget(T(*r_.baseline)) / *TimeToTarget(f)));
    }
    fmt::format_to(Out(out_), "<p class=\"note\">Fastest to the target: {} in {}{} (final {} {}).</p>",
                   TrialName(*a_.fastest), FormatDuration(*TimeToTarget(f)), vs, Esc(metric_),
                   FormatObjective(f.final_value));
  }
  out_.append("</section>\n");
}

void HtmlPage::TargetLine() {
  if (!r_.target) return;
  fmt::format_to(Out(out_), "<p class=\"note\">Target: {} {} {} — {}.</p>", Esc(metric_), r_.meta.minimize ? "≤" : "≥",
                 FormatSig(*r_.target, 4), Esc(r_.target_basis));
}

}  // namespace sweep::reports
