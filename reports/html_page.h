// The HTML report's page, section by section: the shell (head, header, about) in html_report.cc,
// the headline in html_headline.cc, the ranking and cost tables in html_tables.cc, the charts in
// html_charts.cc, parameter importance in html_importance.cc, the stylesheet in html_style.cc.
// Internal to reports/ (scripts/include-loops.py checks that no other folder includes it).
// Module reports/: rendering plain data into reports; uses base/ only.
#pragma once

#include <cstdint>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/html_options.h"
#include "reports/study_report.h"
#include "reports/svg_chart.h"

namespace sweep::reports {

inline constexpr const char* kRecommendedColor = "#1a7f37";
inline constexpr const char* kBaselineColor = "#24292f";
inline constexpr const char* kOtherColor = "#8c959f";
// Tableau 10 without its green, which marks the recommendation.
inline constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#edc948",
                                           "#b07aa1", "#ff9da7", "#9c755f", "#59a1cf"};

using Out = std::back_insert_iterator<std::string>;

// Points across the x axis at which an aggregated report's curve bands are computed.
inline constexpr size_t kBandPoints = 120;

std::string ReplaceAll(std::string s, std::string_view from, std::string_view to);
// The CSS class of a trial's state in tables: "s-completed", "s-failed", ...
std::string OutcomeClass(Outcome o);
// Whole numbers with thin thousands separators: 12 345.
std::string FormatCount(int64_t n);

// One report being rendered: the data, its analysis, the curves' colours, and the page so far.
class HtmlPage {
 public:
  HtmlPage(const StudyReport& report, const HtmlOptions& options)
      : r_(report), o_(options), a_(Analyze(report)), metric_(report.meta.objective_metric) {
    AssignColors();
    ChooseDetailed();
  }

  std::string Render();

 private:
  const TrialSummary& T(size_t i) const { return r_.trials[i]; }
  bool IsRecommended(size_t i) const { return a_.recommended && *a_.recommended == i; }
  bool IsBaseline(size_t i) const { return r_.baseline && *r_.baseline == i; }

  // Colours for the curves worth naming: the recommendation, the baseline, the best ranked.
  void AssignColors();

  // A study above HtmlOptions::detail_limit trials is aggregated beyond its best (issue 42).
  bool Aggregated() const { return r_.trials.size() > o_.detail_limit; }
  // Which trials are drawn one by one: all of a small study; of a large one the top_n ranked, the
  // recommendation and the baseline.
  void ChooseDetailed();
  bool Detailed(size_t i) const { return detailed_[i]; }
  size_t DetailedCount() const;
  // What an aggregated report leaves to the CSV files, said once under the header.
  void AggregateNote();
  // Quantile bands (10-90, 25-75) and the median of the curves of the trials not drawn one by one.
  void CurveBands(bool by_time, LineChart& chart) const;
  // Pruned trials counted by rule, for the "Stopped early" table of an aggregated report.
  void StoppedEarlyByRule();

  void Head();

  void Header();

  std::string TrialName(size_t i) const;

  // `css`: "" for a factor, "total" for the product, "total slower" when the product is below 1.
  void Factor(std::string_view value, std::string_view label, std::string_view detail, std::string_view css = "");

  bool Hpo() const { return r_.meta.kind == StudyKind::kHyperparameter; }

  // "0.1234 ± 0.0012"
  std::string ValueSpread(const TrialSummary& t) const;

  // What the headline names and compares: a configuration over its seeds (a study with repeats) or
  // a trial.
  struct Pick {
    std::string name;   // HTML: the values in bold, then the trial key or the seeds
    std::string plain;  // the values as text
    std::optional<double> value;
    std::string value_text;       // configuration: mean ± standard error (n); trial: final ± spread of its end
    std::optional<double> noise;  // standard error of the mean, or the spread of the end
    std::optional<double> ips, steps, ttt;
    bool config = false;
  };
  Pick PickTrial(size_t i) const;
  Pick PickConfig(size_t g) const;
  std::optional<Pick> Recommended() const;
  std::optional<Pick> RunnerUp() const;
  std::optional<Pick> Baseline() const;
  bool RecommendedIsBaseline() const;
  // "12 configurations (36 completed trials)" or "36 completed trials".
  std::string AmongText() const;

  // A hyperparameter study: the best final value, how noisy its end is, and how far ahead of the
  // runner-up it is. No speedup boxes: the trials run at the same speed.
  void HpoHeadline();

  void Headline();

  void TargetLine();

  int Completed() const;

  std::string CompletedText() const;

  void Ranking();

  // Grey curves first, faded if stopped early, then the named ones on top.
  std::vector<LineSeries> CurveSeries(bool by_time) const;

  void Curves();

  // One row per trial that has telemetry (ranked trials first, at most top_n): utilization, memory
  // with the planner's prediction beside the measured GPU memory, and power when nvidia-smi gave it.
  void Telemetry();

  void TelemetryRow(size_t i);

  void Legend();

  void Throughput();
  // A study with repeats: one bar per configuration.
  void ConfigThroughput();

  // A hyperparameter study whose trials all run within 10% of each other's speed: no
  // throughput charts, one sentence instead.
  bool FlatThroughput() const;

  // How a parameter is drawn: categories, or a numeric axis (log where it was sampled on a log
  // scale or spans a factor of 20 or more) for a continuous one.
  struct ParamAxis {
    std::vector<std::string> categories;  // empty: numeric
    bool log = false;
    std::map<std::string, size_t> index;
  };
  std::optional<ParamAxis> AxisOf(size_t p) const;

  // The axis position of trial t's value of parameter p: a category index or the number.
  double AxisValue(const ParamAxis& axis, const TrialSummary& t, size_t p) const;

  // A parameter's distribution of y (throughput or final value) over every trial, by category or
  // by bin of a numeric axis.
  std::vector<Spread> Spreads(const ParamAxis& axis, size_t p, bool throughput) const;

  // Trials shown by the final-value views: completed ones, and those stopped early (pruned,
  // cancelled, failed) or still running, at the value they had when they stopped.
  static bool HasFinal(const TrialSummary& t);

  // One pair of charts per parameter: throughput and final objective by its value.
  void ParameterEffects();

  // Colour of the i-th best of n trials: dark blue for the best, pale for the worst.
  static std::string RankColor(size_t rank, size_t n);

  void ParallelCoordinates();

  // How many trials with a value the importance leaves out, and why: " Left out: ...", or "".
  static std::string ImportanceLeftOut(const Importances& imp);

  void Importance();

  void BestSoFarChart();

  void Cost();

  std::string ResourcesText() const;

  void About();

  const StudyReport& r_;
  const HtmlOptions& o_;
  Analysis a_;
  std::string metric_;
  std::map<size_t, std::string> colors_;
  std::vector<bool> detailed_;  // by trial index
  std::string out_;
};

}  // namespace sweep::reports
