// Rendering of trials.csv and metrics.csv: RFC 4180 quoting, fixed number formats, and a guard so
// a parameter value, metric name or failure reason cannot run as a spreadsheet formula.
#include "reports/csv.h"

#include "base/text.h"

#include <fmt/format.h>

#include <cmath>
#include <iterator>
#include <string_view>

namespace sweep::reports {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// [+-]digits[.digits][(e|E)[+-]digits], the spellings a spreadsheet reads as a number and not a formula.
bool IsPlainNumber(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < s.size() && IsDigit(s[i])) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

bool StartsLikeFormula(std::string_view s) {
  if (s.empty()) return false;
  switch (s.front()) {
    case '=':
    case '+':
    case '-':
    case '@':
    case '\t':
    case '\r':
      return !IsPlainNumber(s);
    default:
      return false;
  }
}

// Text from users or jobs (param values, failure reasons): formula-guarded, then quoted.
void AppendText(std::string_view raw, std::string& out) {
  // Control bytes (a NUL in a metric name) and invalid UTF-8 become U+FFFD: a spreadsheet or
  // pandas reading the file sees text, never a byte that ends or confuses the cell.
  std::string clean;
  std::string_view text = raw;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (static_cast<unsigned char>(raw[i]) < 0x20 || static_cast<unsigned char>(raw[i]) >= 0x7f) {
      clean = CleanText(raw);
      text = clean;
      break;
    }
  }
  std::string_view guard = StartsLikeFormula(text) ? "'" : "";
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(guard).append(text);
    return;
  }
  out.push_back('"');
  out.append(guard);
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

// fmt_spec is one of the fixed formats of the columns; a missing value is an empty cell.
void AppendNumber(const std::optional<double>& value, fmt::format_string<double> fmt_spec, std::string& out) {
  if (value) fmt::format_to(std::back_inserter(out), fmt_spec, double{*value});
}

// Shortest round-trip form; the spellings pandas reads for the special values.
void AppendExact(double value, std::string& out) {
  if (std::isnan(value)) out.append("nan");
  else if (std::isinf(value)) out.append(value > 0 ? "inf" : "-inf");
  else fmt::format_to(std::back_inserter(out), "{}", value);
}

}  // namespace

std::string RenderTrialsCsv(const std::vector<std::string>& param_names, const std::vector<TrialRow>& rows) {
  std::string out;
  out.append("trial_id,trial_key");
  for (const std::string& name : param_names) {
    out.push_back(',');
    AppendText(name, out);
  }
  out.append(
      ",state,reason,job_id,exit_code,steps,final_objective,median_iter_time_ms,iters_per_s,train_time_s,"
      "wall_time_s\n");

  for (const TrialRow& row : rows) {
    fmt::format_to(std::back_inserter(out), "{},", row.trial_id);
    AppendText(row.trial_key, out);
    for (size_t i = 0; i < param_names.size(); ++i) {
      out.push_back(',');
      if (i < row.param_values.size()) AppendText(row.param_values[i].text, out);
    }
    for (const std::string* text : {&row.state, &row.reason, &row.job_id, &row.exit_code}) {
      out.push_back(',');
      AppendText(*text, out);
    }
    fmt::format_to(std::back_inserter(out), ",{},", row.steps);
    // Loss keeps six significant digits, enough to rank trials; times need no more than 0.1.
    AppendNumber(row.objective_value, "{:.6g}", out);
    out.push_back(',');
    AppendNumber(row.median_iter_time_ms, "{:.1f}", out);
    out.push_back(',');
    AppendNumber(row.iters_per_s, "{:.4g}", out);
    out.push_back(',');
    AppendNumber(row.train_time_s, "{:.1f}", out);
    out.push_back(',');
    AppendNumber(row.wall_time_s, "{:.1f}", out);
    out.push_back('\n');
  }
  return out;
}

void AppendCsvText(std::string_view text, std::string& out) { AppendText(text, out); }

void AppendCsvNumber(const std::optional<double>& value, std::string& out) {
  if (value) AppendExact(*value, out);
}

std::string MetricsCsvHeader() { return "trial_id,trial_key,step,time_s,name,value\n"; }

void AppendMetricsCsvRow(int64_t trial_id, std::string_view trial_key, int64_t step, double time_s,
                         std::string_view name, double value, std::string& out) {
  fmt::format_to(std::back_inserter(out), "{},", trial_id);
  AppendText(trial_key, out);
  fmt::format_to(std::back_inserter(out), ",{},", step);
  if (!std::isnan(time_s)) AppendExact(time_s, out);
  out.push_back(',');
  AppendText(name, out);
  out.push_back(',');
  AppendExact(value, out);
  out.push_back('\n');
}

}  // namespace sweep::reports
