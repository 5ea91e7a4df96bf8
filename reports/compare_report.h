// Studies side by side (`slurmsweep compare`): the same model on two kinds of GPU, or before and
// after a framework upgrade. For each study its best configuration (its own report's
// recommendation), that configuration's throughput, time to a common target and cost; and the gain
// of each study over the first, split as in the single report: throughput factor x convergence
// factor = time-to-target factor, with the cost factor (GPU-hours to the target) beside it.
// Plain data in (each study's StudyReport, collected against the common target), HTML and CSV out.
// Module reports/: rendering plain data into reports; uses base/ only. A public header (the internal
// ones say "Internal to reports/").
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reports/study_report.h"

namespace sweep::reports {

struct ComparedStudy {
  StudyReport report;  // its steps_to_target are against Comparison::target
  Analysis analysis;
};

// A study's best: its recommendation, a configuration over its seeds for a study with repeats
// (Analysis::recommended_config: its mean, its configurations' speed) or a trial.
struct StudyBest {
  std::optional<size_t> trial;   // index into report.trials: the recommendation (a configuration's typical seed)
  std::optional<size_t> config;  // index into report.configs->groups, for a study with repeats
  std::optional<double> value;   // its final value: the configuration's mean, or the trial's
  ConfigSpeed speed;             // throughput, steps and time to target (a trial's own, or its configuration's)
  double gpus = 0;               // GPUs per trial (CPUs when the study has none)
  std::optional<double> time_to_target_s;
  std::optional<double> hours_to_target;  // time to target x GPUs per trial
  std::optional<Decomposition> vs_first;  // this study's best over the first study's best
  std::optional<double> cost_factor;      // first's hours to target / this one's
};
StudyBest BestOf(const ComparedStudy& study, const ComparedStudy& first);

struct Comparison {
  std::vector<ComparedStudy> studies;  // the first is the reference
  std::optional<double> target;
  std::string target_basis;
  double generated_at = 0;
  std::string version;
};

// Objective value the comparison measures time to: the worst of the studies' best final values,
// so that every study's best reaches it (nullopt if a study has no completed trial with a value).
// `minimize` is the studies' common direction.
std::optional<double> CommonTarget(const std::vector<double>& best_finals, bool minimize);

std::string RenderCompareHtml(const Comparison& comparison);
// compare.csv: one row per study (version 1 columns, README).
inline constexpr int kCompareCsvVersion = 1;
std::string RenderCompareCsv(const Comparison& comparison);

}  // namespace sweep::reports
