// Text and JSON renderings of a log check. The JSON's keys are a contract: add, never rename.
#include "cli/metrics_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/terminal.h"
#include "base/text.h"

namespace sweep::cli {

bool MetricsCheck::objective_present() const {
  return std::any_of(summary.metrics.begin(), summary.metrics.end(),
                     [&](const logs::LogSummary::Metric& m) { return m.name == objective; });
}

namespace {
std::vector<std::string_view> Names(const logs::LogSummary& s) {
  std::vector<std::string_view> names;
  for (const auto& m : s.metrics) names.push_back(m.name);
  return names;
}
}  // namespace

std::string MetricsCheck::did_you_mean() const { return DidYouMean(objective, Names(summary)); }

std::string RenderMetricsCheckText(const MetricsCheck& c) {
  const logs::LogSummary& s = c.summary;
  std::string out = fmt::format("{}: {} line(s) read as {}; {} point(s) would be stored\n", TerminalSafe(c.path),
                                s.lines, c.format, s.points);
  if (s.first_step) {
    out += fmt::format("steps: {} to {}\n", *s.first_step, *s.last_step);
  } else {
    out += "steps: none (no line gave a step)\n";
  }
  if (!s.time_key.empty()) {
    out +=
        fmt::format("time axis: from '{}' ({:.6g} s of training at the last timed step)\n", s.time_key, s.last_time_s);
  } else {
    auto hint = [](std::string_view f) -> std::string_view {
      if (f.starts_with("auto (")) f.remove_prefix(6);  // what auto chose
      if (f.starts_with("jsonl"))
        return "a key time, elapsed or time_s (seconds since the start), or iter_time_ms or iteration_time (s) per "
               "step";
      if (f.starts_with("hf")) return "the Trainer's tqdm bar, '500/1689 [01:30<03:29, ...]' (disable_tqdm=False)";
      if (f.starts_with("lightning") || f.starts_with("nemo"))
        return "the progress bar's elapsed time, or NeMo's 'train_step_timing in s'";
      if (f.starts_with("torchtitan") || f.starts_with("deepspeed")) return "a timestamp at the start of each line";
      if (f.starts_with("regex")) return "a [study.metric_regex] time_s expression (seconds since the start)";
      return "Megatron's 'elapsed time per iteration (ms)'";
    };
    out += fmt::format("time axis: none; early stopping and time-to-target need one ({})\n", hint(c.format));
  }
  size_t w = 6;
  for (const auto& m : s.metrics) w = std::max(w, std::min<size_t>(m.name.size(), 40));
  if (!s.metrics.empty())
    out += fmt::format("{:<{}} {:>8} {:>10} {:>10}\n", "metric", w, "points", "from step", "to step");
  for (const auto& m : s.metrics) {
    out += fmt::format("{:<{}} {:>8} {:>10} {:>10}\n", TerminalSafe(m.name), w, m.count, m.first_step, m.last_step);
  }
  if (!s.malformed_lines.empty()) {
    std::string lines;
    size_t shown = std::min<size_t>(s.malformed_lines.size(), 20);
    for (size_t i = 0; i < shown; ++i) lines += fmt::format("{}{}", i ? ", " : "", s.malformed_lines[i]);
    if (shown < s.malformed_lines.size()) lines += fmt::format(", ... ({} more)", s.malformed_lines.size() - shown);
    out += fmt::format("malformed: {} line(s) look like metric lines but do not parse (skipped): line {}\n",
                       s.malformed_lines.size(), lines);
  }
  if (s.partial_last_line) out += "the last line has no line break yet: it is read once it ends\n";
  if (c.suggestion) {
    std::string_view name = MetricFormatName(c.suggestion->format);
    out += fmt::format(
        "format: the lines parse as \"{}\" ({} point(s)): pass --format {}, and in the study set [study] "
        "metric_format = \"{}\" (or \"auto\", the default)\n",
        name, c.suggestion->points, name, name);
  } else if (s.points == 0 && s.lines > 0) {
    out +=
        "format: no known format recognizes these lines; a format of its own is read with [study.metric_regex] "
        "and metric_format = \"regex\"\n";
  }
  if (c.objective_present()) {
    out += fmt::format("objective '{}': present\n", TerminalSafe(c.objective));
  } else {
    out += fmt::format("objective '{}': MISSING{}\n", TerminalSafe(c.objective), c.did_you_mean());
  }
  return out;
}

std::string RenderMetricsCheckJson(const MetricsCheck& c) {
  const logs::LogSummary& s = c.summary;
  nlohmann::json j;
  j["version"] = 1;
  j["file"] = c.path;
  j["format"] = c.format;
  j["lines"] = s.lines;
  j["points"] = s.points;
  j["steps"] = s.first_step ? nlohmann::json{{"first", *s.first_step}, {"last", *s.last_step}} : nlohmann::json();
  j["time_axis"] =
      s.time_key.empty() ? nlohmann::json() : nlohmann::json{{"key", s.time_key}, {"last_time_s", s.last_time_s}};
  j["metrics"] = nlohmann::json::array();
  for (const auto& m : s.metrics) {
    j["metrics"].push_back(
        {{"name", m.name}, {"points", m.count}, {"first_step", m.first_step}, {"last_step", m.last_step}});
  }
  j["malformed_lines"] = s.malformed_lines;
  j["partial_last_line"] = s.partial_last_line;
  j["suggested_format"] =
      c.suggestion ? nlohmann::json(std::string(MetricFormatName(c.suggestion->format))) : nlohmann::json();
  std::string suggestion(ClosestWord(c.objective, Names(s)));
  j["objective"] = {
      {"name", c.objective},
      {"present", c.objective_present()},
      {"did_you_mean", c.objective_present() || suggestion.empty() ? nlohmann::json() : nlohmann::json(suggestion)}};
  // Invalid UTF-8 in a metric name is replaced rather than thrown on.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace sweep::cli
