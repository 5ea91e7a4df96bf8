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

HtmlPage::Pick HtmlPage::PickTrial(size_t i) const {
  const TrialSummary& t = T(i);
  Pick p;
  p.name = TrialName(i);
  p.plain = ParamsText(r_, t);
  p.value = t.final_value;
  p.value_text = ValueSpread(t);
  if (Finite(t.final_spread)) p.noise = t.final_spread;
  if (Finite(t.iters_per_s)) p.ips = t.iters_per_s;
  if (t.steps_to_target) p.steps = static_cast<double>(*t.steps_to_target);
  p.ttt = TimeToTarget(t);
  return p;
}

HtmlPage::Pick HtmlPage::PickConfig(size_t g) const {
  const ConfigGroup& c = r_.configs->groups[g];
  const ConfigSpeed& speed = a_.config_speed[g];
  Pick p;
  p.config = true;
  p.plain = ConfigText(*r_.configs, c);
  p.name = fmt::format("<strong>{}</strong> <span class=\"key\">({} completed of {} seed{})</span>", Esc(p.plain),
                       c.values.size(), c.rows.size(), c.rows.size() == 1 ? "" : "s");
  p.value = c.mean;
  p.value_text = MeanText(c);
  p.noise = c.sem;
  p.ips = speed.iters_per_s;
  p.steps = speed.steps_to_target;
  p.ttt = speed.time_to_target;
  return p;
}

std::optional<HtmlPage::Pick> HtmlPage::Recommended() const {
  if (a_.recommended_config) return PickConfig(*a_.recommended_config);
  if (a_.recommended) return PickTrial(*a_.recommended);
  return std::nullopt;
}

std::optional<HtmlPage::Pick> HtmlPage::RunnerUp() const {
  if (a_.runner_up_config) return PickConfig(*a_.runner_up_config);
  if (!r_.configs && a_.runner_up) return PickTrial(*a_.runner_up);
  return std::nullopt;
}

std::optional<HtmlPage::Pick> HtmlPage::Baseline() const {
  if (!r_.baseline) return std::nullopt;
  if (a_.baseline_config) return PickConfig(*a_.baseline_config);
  return PickTrial(*r_.baseline);
}

bool HtmlPage::RecommendedIsBaseline() const {
  if (a_.recommended_config) return a_.baseline_config && *a_.baseline_config == *a_.recommended_config;
  return a_.recommended && IsBaseline(*a_.recommended);
}

std::string HtmlPage::AmongText() const {
  if (!r_.configs) return CompletedText();
  size_t ranked = std::count_if(r_.configs->groups.begin(), r_.configs->groups.end(),
                                [](const ConfigGroup& g) { return g.mean.has_value(); });
  return fmt::format("{} configuration{} ({})", ranked, ranked == 1 ? "" : "s", CompletedText());
}

namespace {

// The verdict of Welch's test against the baseline, for the baseline's card.
std::string VersusText(const Separability& s) {
  using V = Separability::Verdict;
  switch (s.verdict) {
    case V::kSeparable:
      return fmt::format("a real difference (Welch's t test, p = {:.2g})", s.p);
    case V::kMoreSeeds:
      return fmt::format("not yet told apart (p = {:.2g}); about {} more seed{} each would tell", s.p, s.more_seeds,
                         s.more_seeds == 1 ? "" : "s");
    case V::kNotWithSeeds:
      return fmt::format("within the noise (p = {:.2g}); more seeds will not tell them apart", s.p);
    case V::kUnknown:
      break;
  }
  return "";
}

}  // namespace

void HtmlPage::HpoHeadline() {
  const Pick t = *Recommended();
  fmt::format_to(Out(out_), "<p class=\"rec\">Use {}: the best {}final {} among {}.</p><div class=\"cards\">", t.name,
                 t.config ? "mean " : "", Esc(metric_), AmongText());
  if (t.config) {
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">mean final {} over its completed "
                   "seeds ± the standard error of that mean (n seeds)</div></div>",
                   Esc(t.value_text), Esc(metric_));
  } else {
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">final {} (mean of its last {} "
                   "logged points) ± their standard deviation: how much the end of the curve still moves</div></div>",
                   Esc(t.value_text), Esc(metric_), T(*a_.recommended).final_points);
  }
  std::optional<double> gap;
  double noise = t.noise.value_or(0);
  if (auto u = RunnerUp()) {
    gap = std::fabs(*t.value - *u->value);
    noise = std::max(noise, u->noise.value_or(0));
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">ahead of the runner-up {}"
                   "{}, {}final {} {}</div></div>",
                   FormatSig(*gap, 3), u->config ? "configuration " : "",
                   u->config ? Esc(Ellipsize(u->plain, 60))
                             : fmt::format("<span class=\"key\">{}</span> ({})", Esc(T(*a_.runner_up).key),
                                           Esc(Ellipsize(u->plain, 60))),
                   u->config ? "mean " : "", Esc(metric_), Esc(u->value_text));
  }
  auto b = Baseline();
  if (b && r_.baseline_named && !RecommendedIsBaseline() && Finite(b->value)) {
    std::string versus = a_.versus_baseline ? VersusText(*a_.versus_baseline) : "";
    fmt::format_to(Out(out_),
                   "<div class=\"card\"><div class=\"v\">{}</div><div class=\"l\">better than the baseline{} {}, "
                   "{}final {} {}{}</div></div>",
                   FormatSig(std::fabs(*t.value - *b->value), 3), b->config ? " configuration" : "",
                   b->config ? Esc(Ellipsize(b->plain, 60))
                             : fmt::format("<span class=\"key\">{}</span>", Esc(T(*r_.baseline).key)),
                   b->config ? "mean " : "", Esc(metric_), Esc(b->value_text), versus.empty() ? "" : ": " + versus);
  }
  out_.append("</div>");
  if (t.config) {
    // The configurations' own test (config_ranking.h), not the spread of one trial's last points.
    if (std::string s = SeparabilityText(*r_.configs); !s.empty()) {
      s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
      fmt::format_to(Out(out_), "<p class=\"basis separability\">{}.</p>", Esc(s));
    } else {
      out_.append("<p class=\"basis\">Only one configuration has completed: nothing to compare it with yet.</p>");
    }
  } else if (gap) {
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
  if (r_.baseline && r_.baseline_named && RecommendedIsBaseline())
    out_.append("<p class=\"basis\">This is the baseline configuration: no other did better.</p>");
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
  const Pick t = *Recommended();
  const std::optional<Pick> b = Baseline();
  const bool is_baseline = RecommendedIsBaseline();
  // A performance study leads with time to target: against the baseline when there is one.
  if (a_.decomposition && b && !is_baseline) {
    const Decomposition& d = *a_.decomposition;
    fmt::format_to(Out(out_),
                   "<p class=\"rec\">Use {}, {} {} to the target than the baseline ({} vs {}): the best {}final {} "
                   "({}) among {}.</p>",
                   t.name, FormatFactor(d.time_to_target >= 1 ? d.time_to_target : 1 / d.time_to_target),
                   d.time_to_target >= 1 ? "faster" : "<em>slower</em>", FormatDuration(*t.ttt),
                   FormatDuration(*b->ttt), t.config ? "mean " : "", Esc(metric_), Esc(t.value_text), AmongText());
  } else if (r_.meta.rank_by_time_to_target && t.ttt) {
    fmt::format_to(Out(out_),
                   "<p class=\"rec\">Use {}: the shortest training time to the target ({}) among {}; {}final {} "
                   "{}.</p>",
                   t.name, FormatDuration(*t.ttt), AmongText(), t.config ? "mean " : "", Esc(metric_),
                   Esc(t.value_text));
  } else {
    fmt::format_to(Out(out_), "<p class=\"rec\">Use {}: the best {}final {} ({}) among {}.</p>", t.name,
                   t.config ? "mean " : "", Esc(metric_), Esc(t.value_text), AmongText());
  }
  if (!b) {
    fmt::format_to(Out(out_), "<p class=\"note\">No speedup is shown: {}</p>", Esc(r_.baseline_note));
  } else if (is_baseline) {
    out_.append("<p class=\"basis\">This is the baseline configuration: no other did better.</p>");
  } else {
    if (a_.decomposition) {
      const Decomposition& d = *a_.decomposition;
      out_.append("<div class=\"factors\">");
      Factor(FormatFactor(d.time_to_target), "time to target",
             fmt::format("{} vs {}", FormatDuration(*t.ttt), FormatDuration(*b->ttt)),
             d.time_to_target >= 1 ? "total" : "total slower");
      out_.append("<span class=\"op\">=</span>");
      Factor(FormatFactor(d.throughput), "throughput",
             fmt::format("{} vs {} iter/s", FormatSig(*t.ips, 3), FormatSig(*b->ips, 3)));
      out_.append("<span class=\"op\">×</span>");
      Factor(FormatFactor(d.convergence), "convergence",
             fmt::format("target at step {} vs {}", FormatCount(std::llround(*t.steps)),
                         FormatCount(std::llround(*b->steps))));
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
      if (t.config) {
        fmt::format_to(Out(out_),
                       "<p class=\"note\">Configurations over their seeds: the mean throughput of their repeats and "
                       "the mean step at which their completed repeats reached the target ({} of {} and {} of {}).</p>",
                       a_.config_speed[*a_.recommended_config].reached,
                       a_.config_speed[*a_.recommended_config].completed, a_.config_speed[*a_.baseline_config].reached,
                       a_.config_speed[*a_.baseline_config].completed);
      }
    } else {
      out_.append("<p class=\"basis\">");
      if (t.ips && b->ips) {
        fmt::format_to(Out(out_), "Throughput {} ({} vs {} iter/s). ", FormatFactor(*t.ips / *b->ips),
                       FormatSig(*t.ips, 3), FormatSig(*b->ips, 3));
      }
      out_.append("Time to target cannot be compared: ");
      out_.append(!t.steps    ? "the recommendation's smoothed curve never reached the target."
                  : !b->steps ? "the baseline never reached the target."
                              : "a throughput is missing.");
      out_.append("</p>");
    }
    std::string versus = a_.versus_baseline ? VersusText(*a_.versus_baseline) : "";
    fmt::format_to(Out(out_), "<p class=\"basis\">Baseline: {}, {}final {} {}{}.</p>", b->name,
                   b->config ? "mean " : "", Esc(metric_), Esc(b->value_text),
                   b->config ? (versus.empty() ? "" : "; against the recommendation: " + versus)
                             : " (" + Esc(StateLabel(T(*r_.baseline).state)) + ")");
  }
  if (t.config) {
    if (auto u = RunnerUp()) {
      fmt::format_to(Out(out_), "<p class=\"basis\">The runner-up configuration {}: mean final {} {}{}.</p>",
                     Esc(u->plain), Esc(metric_), Esc(u->value_text),
                     u->ttt ? ", time to target " + FormatDuration(*u->ttt) : "");
    }
    if (std::string s = SeparabilityText(*r_.configs); !s.empty()) {
      s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
      fmt::format_to(Out(out_), "<p class=\"basis separability\">{}.</p>", Esc(s));
    }
  }
  fmt::format_to(Out(out_), "<p class=\"note\">A performance study ({}): the headline is the time to the target.</p>",
                 Esc(r_.meta.kind_basis));
  TargetLine();
  std::optional<Pick> fastest;
  if (a_.fastest_config && (!a_.recommended_config || *a_.fastest_config != *a_.recommended_config))
    fastest = PickConfig(*a_.fastest_config);
  else if (!r_.configs && a_.fastest && *a_.fastest != *a_.recommended) fastest = PickTrial(*a_.fastest);
  if (fastest) {
    std::string vs;
    if (b && b->ttt) vs = fmt::format(", {} vs the baseline", FormatFactor(*b->ttt / *fastest->ttt));
    fmt::format_to(Out(out_), "<p class=\"note\">Fastest to the target: {} in {}{} ({}final {} {}).</p>", fastest->name,
                   FormatDuration(*fastest->ttt), vs, fastest->config ? "mean " : "", Esc(metric_),
                   Esc(fastest->value_text));
  }
  out_.append("</section>\n");
}

void HtmlPage::TargetLine() {
  if (!r_.target) return;
  fmt::format_to(Out(out_), "<p class=\"note\">Target: {} {} {} — {}.</p>", Esc(metric_), r_.meta.minimize ? "≤" : "≥",
                 FormatSig(*r_.target, 4), Esc(r_.target_basis));
}

}  // namespace sweep::reports
