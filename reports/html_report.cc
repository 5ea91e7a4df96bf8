// Rendering of the HTML sweep report; see html_report.h. The page is built as one string: a
// header, the headline (recommendation and speedup decomposition), the ranking table, charts,
// cost and metadata. Anything that did not come from our own code goes through HtmlEscape.
#include "reports/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <iterator>
#include <map>
#include <set>

#include "base/clock.h"
#include "reports/html_text.h"
#include "reports/svg_chart.h"

namespace sweep::reports {
namespace {

constexpr const char* kRecommendedColor = "#1a7f37";
constexpr const char* kBaselineColor = "#24292f";
constexpr const char* kOtherColor = "#8c959f";
// Tableau 10 without its green, which marks the recommendation.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#edc948",
                                    "#b07aa1", "#ff9da7", "#9c755f", "#59a1cf"};

constexpr const char* kStyle = R"css(
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#f6f8fa;--card:#fff;--accent:#1a7f37;--warn:#bc4c00;--bad:#cf222e}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1200px;margin:0 auto;padding:24px 28px 40px}
header h1{font-size:26px;margin:2px 0 4px}
.eyebrow{margin:0;color:var(--muted);text-transform:uppercase;letter-spacing:.06em;font-size:12px}
.sub{margin:0;color:var(--muted)}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:16px 20px;margin:16px 0}
h2{font-size:18px;margin:0 0 10px}
h3{font-size:14px;margin:0 0 6px;color:var(--muted);font-weight:600}
.key{white-space:nowrap}
code,.key{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px}
.headline{border-left:5px solid var(--accent)}
.rec{font-size:17px;margin:0 0 12px}
.rec strong{font-size:19px}
.factors{display:flex;flex-wrap:wrap;align-items:center;gap:10px;margin:8px 0 12px}
.factor{border:1px solid var(--line);border-radius:8px;padding:8px 14px;min-width:170px;background:#fbfcfd}
.factor .v{font-size:28px;font-weight:700;line-height:1.1;font-variant-numeric:tabular-nums}
.factor .l{color:var(--muted);font-size:12.5px}
.factor.total{border-color:var(--accent);background:#eef8f0}
.factor.total .v{color:var(--accent)}
.factor.total.slower{border-color:var(--warn);background:#fff8f0}
.factor.total.slower .v{color:var(--warn)}
.op{font-size:24px;color:var(--muted)}
.basis{margin:4px 0;color:var(--fg)}
.note{color:var(--muted);font-size:13px}
table{border-collapse:collapse;width:100%;font-size:12.5px;font-variant-numeric:tabular-nums}
th,td{padding:4px 6px;border-bottom:1px solid #eaeef2;text-align:left;white-space:nowrap}
th{background:#f6f8fa;font-weight:600;position:sticky;top:0;white-space:normal;vertical-align:bottom;min-width:3.5em}
td.n,th.n{text-align:right}
td.why{white-space:normal;overflow-wrap:anywhere}
tbody tr:nth-child(even){background:#fafbfc}
tr.recommended td{background:#eef8f0}
tr.baseline td{background:#f3f4f6}
.table-wrap{overflow-x:auto}
.badge{display:inline-block;padding:0 6px;border-radius:9px;font-size:11.5px;border:1px solid transparent}
.s-completed{background:#dafbe1;color:#116329}
.s-running{background:#ddf4ff;color:#0550ae}
.s-queued{background:#f6f8fa;color:#59636e;border-color:#d1d9e0}
.s-cancelled{background:#fff8c5;color:#7d4e00}
.s-failed{background:#ffebe9;color:#a40e26}
.s-dropped{background:#f6f8fa;color:#8c959f}
.tag{display:inline-block;padding:0 5px;border-radius:4px;font-size:10.5px;color:#fff;background:var(--accent)}
.tag.base{background:#24292f}
details summary{cursor:pointer;color:#0550ae;margin:8px 0}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(460px,1fr));gap:14px}
.grid3{display:grid;grid-template-columns:repeat(auto-fit,minmax(330px,1fr));gap:12px}
figure{margin:0}
figcaption{font-weight:600;font-size:13px;margin-bottom:2px}
svg.chart{width:100%;height:auto;display:block;font:11px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
svg .grid{stroke:#eaeef2}
svg .axis{stroke:#8c959f}
svg .tick{fill:#59636e}
svg .axis-label{fill:#1f2328;font-weight:600}
svg .reference{stroke:#1a7f37;stroke-dasharray:4 3}
svg .reference-label{fill:#1a7f37;font-weight:600}
svg .median{stroke:#1f2328;stroke-width:2}
svg .bar-label{fill:#1f2328}
svg .bar-value{fill:#59636e}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;margin:8px 0 0;padding:0;list-style:none;font-size:12.5px}
.legend li{display:flex;align-items:center;gap:6px}
.sw{display:inline-block;width:18px;height:3px;border-radius:2px}
.sw.dash{background:repeating-linear-gradient(90deg,#24292f 0 5px,transparent 5px 8px)!important}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(230px,1fr));gap:12px;margin-bottom:12px}
.card{border:1px solid var(--line);border-radius:8px;padding:10px 14px}
.card .v{font-size:24px;font-weight:700;font-variant-numeric:tabular-nums}
.card .l{color:var(--muted);font-size:12.5px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:4px 16px;margin:0}
dl.meta dt{color:var(--muted)}
dl.meta dd{margin:0;overflow-wrap:anywhere}
ul.defs{margin:6px 0 0;padding-left:18px;color:var(--muted);font-size:13px}
@page{size:A4;margin:12mm}
@media print{
  *{-webkit-print-color-adjust:exact;print-color-adjust:exact}
  body{background:#fff;font-size:10pt}
  main{max-width:none;padding:0}
  section{border:none;border-top:1px solid var(--line);border-radius:0;padding:10px 0;margin:8px 0}
  .headline{border-left:none;border-top:3px solid var(--accent)}
  figure,.card,.factors,.headline,tr{break-inside:avoid}
  h2{break-after:avoid}
  .grid2{grid-template-columns:1fr 1fr}
  .grid3{grid-template-columns:1fr 1fr 1fr}
  th{position:static}
  table{font-size:7.5pt}
  th,td{padding:2px 3px;white-space:normal}
  .table-wrap{overflow:visible}
  .np{display:none}
  details summary{color:var(--muted)}
}
)css";

using Out = std::back_insert_iterator<std::string>;

std::string Esc(std::string_view s) { return HtmlEscape(s); }

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

bool Finite(const std::optional<double>& v) { return v && std::isfinite(*v); }

std::string ParamsText(const StudyReport& r, const TrialSummary& t, std::string_view sep = ", ") {
  std::string s;
  for (size_t i = 0; i < r.meta.param_names.size(); ++i) {
    if (i) s.append(sep);
    s += r.meta.param_names[i] + "=" + (i < t.param_values.size() ? t.param_values[i] : "");
  }
  return s.empty() ? t.key : s;
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

std::string HoursUnit(const Analysis& a) { return a.gpu ? "GPU-hours" : "CPU-hours"; }

// Three significant digits: a short CPU study costs thousandths of an hour, a large one thousands.
std::string FormatHours(double h) { return h >= 1000 ? fmt::format("{:.0f}", h) : FormatSig(h, 3); }

std::string FormatLoss(const std::optional<double>& v) {
  if (!v) return "–";
  if (std::isnan(*v)) return "NaN";
  return FormatSig(*v, 4);
}

// Whole numbers with thin thousands separators: 12 345.
std::string FormatCount(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out.append("\u202f");
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

class Page {
 public:
  Page(const StudyReport& report, const HtmlOptions& options)
      : r_(report), o_(options), a_(Analyze(report)), metric_(report.meta.objective_metric) {
    AssignColors();
  }

  std::string Render() {
    Head();
    out_.append("<body><main>");
    Header();
    Headline();
    if (r_.configs) out_.append(RenderConfigsSection(*r_.configs, metric_));  // repeats over seeds
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

 private:
  const TrialSummary& T(size_t i) const { return r_.trials[i]; }
  bool IsRecommended(size_t i) const { return a_.recommended && *a_.recommended == i; }
  bool IsBaseline(size_t i) const { return r_.baseline && *r_.baseline == i; }

  // Colours for the curves worth naming: the recommendation, the baseline, the best ranked.
  void AssignColors() {
    size_t next = 0;
    if (a_.recommended) colors_[*a_.recommended] = kRecommendedColor;
    if (r_.baseline) colors_.emplace(*r_.baseline, kBaselineColor);
    for (size_t i : a_.ranking) {
      if (colors_.size() >= o_.highlighted + (r_.baseline ? 1 : 0)) break;
      if (T(i).curve.empty() || colors_.count(i)) continue;
      colors_[i] = kPalette[next++ % std::size(kPalette)];
    }
  }

  void Head() {
    fmt::format_to(Out(out_),
                   "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<meta name=\"color-scheme\" content=\"light\">"
                   "<meta name=\"generator\" content=\"slurmsweep {}\">"
                   "<title>Sweep report: {}</title><style>{}</style></head>\n",
                   kReportCsp, Esc(r_.meta.version), Esc(r_.meta.study_name), kStyle);
  }

  void Header() {
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

  std::string TrialName(size_t i) const {
    return fmt::format("<strong>{}</strong> <span class=\"key\">({})</span>", Esc(ParamsText(r_, T(i))), Esc(T(i).key));
  }

  // `css`: "" for a factor, "total" for the product, "total slower" when the product is below 1.
  void Factor(std::string_view value, std::string_view label, std::string_view detail, std::string_view css = "") {
    fmt::format_to(Out(out_), "<div class=\"factor {}\"><div class=\"v\">{}</div><div class=\"l\">{}<br>{}</div></div>",
                   css, value, label, detail);
  }

  bool Hpo() const { return r_.meta.kind == StudyKind::kHyperparameter; }

  // "0.1234 ± 0.0012"
  std::string ValueSpread(const TrialSummary& t) const {
    std::string s = FormatLoss(t.final_value);
    if (Finite(t.final_spread) && Finite(t.final_value)) s += " ± " + FormatSig(*t.final_spread, 2);
    return s;
  }

  // A hyperparameter study: the best final value, how noisy its end is, and how far ahead of the
  // runner-up it is. No speedup boxes: the trials run at the same speed.
  void HpoHeadline() {
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

  void Headline() {
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
                     FormatLoss(t.final_value));
    } else {
      fmt::format_to(Out(out_), "<p class=\"rec\">Use {}: the best final {} ({}) among {}.</p>", TrialName(rec),
                     Esc(metric_), FormatLoss(t.final_value), CompletedText());
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
        Factor(
            FormatFactor(d.convergence), "convergence",
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
                     Esc(metric_), FormatLoss(b.final_value), Esc(StateLabel(b.state)));
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
                     FormatLoss(f.final_value));
    }
    out_.append("</section>\n");
  }

  void TargetLine() {
    if (!r_.target) return;
    fmt::format_to(Out(out_), "<p class=\"note\">Target: {} {} {} — {}.</p>", Esc(metric_),
                   r_.meta.minimize ? "≤" : "≥", FormatSig(*r_.target, 4), Esc(r_.target_basis));
  }

  int Completed() const {
    return static_cast<int>(std::count_if(r_.trials.begin(), r_.trials.end(), [](const TrialSummary& t) {
      return OutcomeOf(t.state) == Outcome::kCompleted;
    }));
  }

  std::string CompletedText() const {
    int n = Completed();
    return n == 1 ? std::string("the 1 completed trial") : fmt::format("{} completed trials", n);
  }

  void Ranking() {
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
        Esc(metric_), HoursUnit(a_));
    auto row = [&](size_t rank, size_t i) {
      const TrialSummary& t = T(i);
      Outcome o = OutcomeOf(t.state);
      std::string cls = IsRecommended(i) ? " class=\"recommended\"" : IsBaseline(i) ? " class=\"baseline\"" : "";
      fmt::format_to(Out(out_), "<tr{}><td class=\"n\">{}</td><td><span class=\"key\">{}</span>{}{}</td>", cls,
                     rank + 1, Esc(t.key), IsRecommended(i) ? "<br><span class=\"tag\">recommended</span>" : "",
                     IsBaseline(i) ? "<br><span class=\"tag base\">baseline</span>" : "");
      for (size_t p = 0; p < r_.meta.param_names.size(); ++p) {
        const std::string value = p < t.param_values.size() ? t.param_values[p] : "";
        if (value.size() > 24) {
          fmt::format_to(Out(out_), "<td title=\"{}\">{}</td>", Esc(value), Esc(Ellipsize(value, 24)));
        } else {
          fmt::format_to(Out(out_), "<td>{}</td>", Esc(value));
        }
      }
      std::string detail = t.reason;
      if (!t.exit_code.empty() && t.exit_code != "0:0")
        detail += (detail.empty() ? "" : "; ") + ("exit " + t.exit_code);
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
                     Esc(detail), Esc(StateLabel(t.state)),
                     show ? " <span class=\"note\">" + Esc(note) + "</span>" : "");
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
          FormatLoss(t.final_value), ttt ? FormatDuration(*ttt) : (t.final_value && r_.target ? "not reached" : "–"),
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
    out_.append("</tbody></table></div>");
    if (shown < a_.ranking.size()) {
      fmt::format_to(Out(out_), "<details><summary>{} more trials</summary>", a_.ranking.size() - shown);
      out_.append(head);
      for (size_t k = shown; k < a_.ranking.size(); ++k) row(k, a_.ranking[k]);
      out_.append("</tbody></table></div></details>");
    }
    out_.append("</section>\n");
  }

  // Grey curves first, faded if stopped early, then the named ones on top.
  std::vector<LineSeries> CurveSeries(bool by_time) const {
    std::vector<LineSeries> grey, named;
    for (size_t i = 0; i < r_.trials.size(); ++i) {
      const TrialSummary& t = T(i);
      if (t.curve.empty()) continue;
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

  void Curves() {
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
    fmt::format_to(Out(out_),
                   "<div class=\"grid2\"><figure><figcaption>{0} vs iteration</figcaption>{1}</figure>"
                   "<figure><figcaption>{0} vs training time</figcaption>{2}</figure></div>",
                   Esc(metric_), RenderLineChart(by_step), RenderLineChart(by_time));
    Legend();
    out_.append(
        "<p class=\"note\">Smoothed curves (see below). Grey: other trials. Faded with × at the end: stopped "
        "early (cancelled, pruned or failed). Dashed: the baseline. The y axis is cut above the 90th percentile of "
        "the points so the ends of the curves, where trials differ, stay readable.</p></section>\n");
  }

  // One row per trial that has telemetry (ranked trials first, at most top_n): utilization, memory
  // with the planner's prediction beside the measured GPU memory, and power when nvidia-smi gave it.
  void Telemetry() {
    if (!r_.meta.monitor) return;
    std::vector<size_t> order;
    for (size_t i : a_.ranking) order.push_back(i);
    for (size_t i = 0; i < r_.trials.size(); ++i) {
      if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
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

  void TelemetryRow(size_t i) {
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

  void Legend() {
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

  void Throughput() {
    std::vector<size_t> with;
    for (size_t i = 0; i < r_.trials.size(); ++i) {
      if (Finite(T(i).iters_per_s)) with.push_back(i);
    }
    out_.append("<section id=\"throughput\"><h2>Throughput by configuration</h2>");
    if (with.empty()) {
      out_.append("<p class=\"note\">No iteration times logged yet.</p></section>\n");
      return;
    }
    std::stable_sort(with.begin(), with.end(),
                     [&](size_t x, size_t y) { return *T(x).iters_per_s > *T(y).iters_per_s; });
    if (FlatThroughput()) {
      fmt::format_to(Out(out_),
                     "<p class=\"note\">Every configuration runs at the same speed within {:.0f}% ({} to {} "
                     "iterations per second over {} trials): this study's parameters change what is learnt, not "
                     "the speed.</p></section>\n",
                     100 * (*T(with.front()).iters_per_s / *T(with.back()).iters_per_s - 1),
                     FormatSig(*T(with.back()).iters_per_s, 3), FormatSig(*T(with.front()).iters_per_s, 3),
                     with.size());
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
    fmt::format_to(Out(out_),
                   "<p class=\"note\">{} of {} trials with logged iteration times, fastest first{}. Green: the "
                   "recommendation; {}pale: stopped or failed trials.{}</p></section>\n",
                   shown, with.size(), shown < with.size() ? " (the rest are in the table and trials.csv)" : "",
                   r_.baseline ? "black: the baseline; " : "",
                   base_ips ? " The factor is relative to the baseline." : "");
  }

  static bool ParseNumber(const std::string& s, double& v) {
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(s.data(), end, v);
    return ec == std::errc() && ptr == end && std::isfinite(v);
  }

  // A hyperparameter study whose trials all run within 10% of each other's speed: no
  // throughput charts, one sentence instead.
  bool FlatThroughput() const {
    if (!Hpo()) return false;
    double lo = 0, hi = 0;
    for (const auto& t : r_.trials) {
      if (!Finite(t.iters_per_s) || *t.iters_per_s <= 0) continue;
      lo = lo == 0 ? *t.iters_per_s : std::min(lo, *t.iters_per_s);
      hi = std::max(hi, *t.iters_per_s);
    }
    return lo > 0 && hi / lo < 1.10;
  }

  // How a parameter is drawn: categories, or a numeric axis (log where it was sampled on a log
  // scale or spans a factor of 20 or more) for a continuous one.
  struct ParamAxis {
    std::vector<std::string> categories;  // empty: numeric
    bool log = false;
    std::map<std::string, size_t> index;
  };
  std::optional<ParamAxis> AxisOf(size_t p) const {
    std::set<std::string> distinct;
    bool numeric = true, integers = true;
    double lo = 0, hi = 0;
    for (const auto& t : r_.trials) {
      if (OutcomeOf(t.state) == Outcome::kDropped || p >= t.param_values.size()) continue;
      if (!distinct.insert(t.param_values[p]).second) continue;
      double v;
      if (!ParseNumber(t.param_values[p], v)) {
        numeric = false;
        continue;
      }
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
    axis.categories.assign(distinct.begin(), distinct.end());
    if (numeric) {
      std::sort(axis.categories.begin(), axis.categories.end(), [](const std::string& x, const std::string& y) {
        double a = 0, b = 0;
        ParseNumber(x, a);
        ParseNumber(y, b);
        return a < b;
      });
    }
    for (size_t c = 0; c < axis.categories.size(); ++c) axis.index[axis.categories[c]] = c;
    return axis;
  }

  // The axis position of trial t's value of parameter p: a category index or the number.
  double AxisValue(const ParamAxis& axis, const TrialSummary& t, size_t p) const {
    if (p >= t.param_values.size()) return std::nan("");
    if (!axis.categories.empty()) {
      auto it = axis.index.find(t.param_values[p]);
      return it == axis.index.end() ? std::nan("") : static_cast<double>(it->second);
    }
    double v;
    return ParseNumber(t.param_values[p], v) ? v : std::nan("");
  }

  // Trials shown by the final-value views: completed ones, and those stopped early (pruned,
  // cancelled, failed) or still running, at the value they had when they stopped.
  static bool HasFinal(const TrialSummary& t) {
    Outcome o = OutcomeOf(t.state);
    return Finite(t.final_value) && o != Outcome::kDropped && o != Outcome::kQueued;
  }

  // One pair of charts per parameter: throughput and final objective by its value.
  void ParameterEffects() {
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
        for (size_t i = 0; i < r_.trials.size(); ++i) {
          const TrialSummary& t = T(i);
          Outcome o = OutcomeOf(t.state);
          std::optional<double> y = throughput ? t.iters_per_s : t.final_value;
          if (!Finite(y) || (!throughput && !HasFinal(t))) continue;
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
        if (d.dots.empty()) return std::string();
        return fmt::format("<figure><figcaption>{}</figcaption>{}</figure>", Esc(d.title), RenderDotChart(d));
      };
      if (!flat) out_.append(chart(true));
      out_.append(chart(false));
    }
    fmt::format_to(Out(out_),
                   "</div><p class=\"note\">One dot per trial (green: recommended, black: baseline). Final value: "
                   "filled dots completed, rings stopped early (pruned, cancelled, failed) or still running, at the "
                   "value they had then (the last {} points' mean); the bar is the median of the completed trials "
                   "of each value. Continuous parameters are on a numeric axis, logarithmic where sampled so."
                   "{}</p></section>\n",
                   kFinalWindow, flat ? "" : " Throughput includes running and stopped trials.");
  }

  // Colour of the i-th best of n trials: dark blue for the best, pale for the worst.
  static std::string RankColor(size_t rank, size_t n) {
    double f = n > 1 ? static_cast<double>(rank) / static_cast<double>(n - 1) : 0;
    auto mix = [&](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
    return fmt::format("#{:02x}{:02x}{:02x}", mix(0x08, 0xb8), mix(0x45, 0xcf), mix(0x94, 0xe4));
  }

  void ParallelCoordinates() {
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
      if (!HasFinal(T(i))) continue;
      (OutcomeOf(T(i).state) == Outcome::kCompleted ? completed : stopped).push_back(i);
    }
    if (completed.empty() && stopped.empty()) return;
    auto line = [&](size_t i) {
      ParallelLine l;
      for (size_t k = 0; k < params.size(); ++k) l.values.push_back(AxisValue(axes[k], T(i), params[k]));
      l.values.push_back(*T(i).final_value);
      l.tooltip = T(i).key + " (" + StateLabel(T(i).state) + "): " + ParamsText(r_, T(i)) + "; final " +
                  FormatLoss(T(i).final_value);
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
                   "still running, at their value then.</p></section>\n",
                   RenderParallelChart(chart), Esc(metric_), r_.meta.minimize ? "lowest" : "highest");
  }

  // Trials stopped early stopped at an earlier point of training than the completed ones: their
  // values do not compare, and the reader is told how many the estimate leaves out.
  static std::string StoppedLeftOut(int n) {
    if (n == 0) return "";
    return fmt::format(
        "; {} trial{} stopped early (pruned or cancelled) {} left out, {} value{} being from "
        "earlier in training",
        n, n == 1 ? "" : "s", n == 1 ? "is" : "are", n == 1 ? "its" : "their", n == 1 ? "" : "s");
  }

  void Importance() {
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

  void BestSoFarChart() {
    auto points = BestSoFar(r_);
    if (std::none_of(points.begin(), points.end(), [](const BestSoFarPoint& p) { return p.improved; })) return;
    LineSeries s;
    s.color = kRecommendedColor;
    s.width = 2;
    std::optional<double> prev;
    double found_at = 0;
    for (const BestSoFarPoint& p : points) {
      if (!p.best) continue;
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
    chart.title = "best final " + metric_ + " so far by " + HoursUnit(a_) + " spent";
    chart.x.label = "cumulative " + HoursUnit(a_) + " (trials in the order they ended)";
    chart.y.label = "best final " + metric_;
    chart.clip_y = LineChart::Clip::kNone;
    chart.series.push_back(std::move(s));
    chart.width = 1100;
    chart.height = 300;
    double total = points.back().hours;
    std::string found;
    if (found_at > 0 && total > 0) {
      found = fmt::format(" The recommendation was found after {} of the {} {} spent on ended trials ({:.0f}%).",
                          FormatHours(found_at), FormatHours(total), HoursUnit(a_), 100 * found_at / total);
    }
    fmt::format_to(Out(out_),
                   "<section id=\"best-so-far\"><h2>Best so far against cost</h2><figure>{}</figure><p "
                   "class=\"note\">Each ended trial (completed, pruned or failed) adds its {} in the order the "
                   "trials ended; the line is the best final {} among the completed ones by then: what the search "
                   "cost to find its winner.{}</p></section>\n",
                   RenderLineChart(chart), HoursUnit(a_), Esc(metric_), found);
  }

  void Cost() {
    const CostSummary& c = a_.cost;
    const std::string unit = HoursUnit(a_);
    out_.append("<section id=\"cost\"><h2>Cost</h2><div class=\"cards\">");
    fmt::format_to(
        Out(out_),
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

  std::string ResourcesText() const {
    const StudyMeta& m = r_.meta;
    if (m.gpus_per_node > 0) {
      return fmt::format("{} node{} × {} GPU{}", m.nodes, m.nodes == 1 ? "" : "s", m.gpus_per_node,
                         m.gpus_per_node == 1 ? "" : "s");
    }
    int cpus = std::max(1, m.cpus_per_task);
    return fmt::format("{} node{} × {} CPU{}", m.nodes, m.nodes == 1 ? "" : "s", cpus, cpus == 1 ? "" : "s");
  }

  void About() {
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
        "point is the smoothed curve the charts draw; steps to target is the first logged step from which it stays "
        "at or past the target to the end, with a full window of points behind it (a lucky first point is not a "
        "crossing), so a trial whose final value is the target reaches it.</li>");
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
        "metrics.csv have every logged point.</li></ul></section>\n");
  }

  const StudyReport& r_;
  const HtmlOptions& o_;
  Analysis a_;
  std::string metric_;
  std::map<size_t, std::string> colors_;
  std::string out_;
};

}  // namespace

const char* ReportStyle() { return kStyle; }

std::string RenderHtmlReport(const StudyReport& report, const HtmlOptions& options) {
  return Page(report, options).Render();
}

}  // namespace sweep::reports
