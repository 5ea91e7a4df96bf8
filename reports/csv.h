// trials.csv (one row per trial) and metrics.csv (one row per logged metric point) of a study, for
// spreadsheets and pandas. The columns are versioned formats (kTrialsCsvVersion,
// kMetricsCsvVersion); reports only render plain data handed to them.
// Module reports/: rendering plain data into reports; uses base/ only. A public header (the internal
// ones say "Internal to reports/").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.h"

namespace sweep::reports {

// Version 2 columns:
//   trial_id,trial_key,<param names...>,state,reason,job_id,exit_code,steps,final_objective,
//   median_iter_time_ms,iters_per_s,train_time_s,wall_time_s
// (version 1 had final_loss, the raw last lm_loss, where final_objective is the study's objective,
// smoothed: base/final_objective.h). Bump when a column is renamed, removed or reordered; the
// README documents each version.
inline constexpr int kTrialsCsvVersion = 2;

struct TrialRow {
  int64_t trial_id = 0;
  std::string trial_key;
  std::vector<ParamCell> param_values;  // same order as param_names
  std::string state, reason, job_id, exit_code;
  int64_t steps = 0;  // last logged step
  std::optional<double> median_iter_time_ms;
  std::optional<double> iters_per_s;      // 1000 / median_iter_time_ms
  std::optional<double> train_time_s;     // training time axis at the last point
  std::optional<double> wall_time_s;      // job end - start (or now - start if running)
  std::optional<double> objective_value;  // the study's objective, final value (base/final_objective.h)
};

// A header row then one row per trial, RFC 4180 quoting, '\n' line ends. Missing values are
// empty cells; text cells that a spreadsheet would run as a formula are prefixed with '.
// A row with fewer or more param values than param_names is padded or cut to keep columns aligned.
std::string RenderTrialsCsv(const std::vector<std::string>& param_names, const std::vector<TrialRow>& rows);

// metrics.csv, long format, version 1 columns:
//   trial_id,trial_key,step,time_s,name,value
// Numbers are written in the shortest form that reads back to the same double ("nan", "inf" and
// "-inf" for those; an unknown time is an empty cell). Built row by row because a large study
// has ~10^7 points: the caller streams the text to the file trial by trial.
inline constexpr int kMetricsCsvVersion = 1;
std::string MetricsCsvHeader();
void AppendMetricsCsvRow(int64_t trial_id, std::string_view trial_key, int64_t step, double time_s,
                         std::string_view name, double value, std::string& out);

// One cell of user text (formula-guarded, RFC 4180 quoted when needed), and one number in the
// shortest form that reads back to the same double (empty for none): for the other CSV files.
void AppendCsvText(std::string_view text, std::string& out);
void AppendCsvNumber(const std::optional<double>& value, std::string& out);

}  // namespace sweep::reports
