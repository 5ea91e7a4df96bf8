// `slurmsweep metrics`: check a training log before a sweep. Offline: the log is read locally; a
// study file only supplies metric_format and the objective.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "base/text.h"
#include "logs/log_summary.h"
#include "cli/commands.h"
#include "cli/metrics_check.h"

namespace sweep::cli {

void AddMetricsFlags(CLI::App* sub, App& app, MetricsFlags& flags) {
  sub->add_option("logfile", flags.log_path, "Training log")->required()->check(CLI::ExistingFile);
  sub->add_option("--study", app.study_path, "Take metric_format and the objective from this study file")
      ->type_name("STUDY.toml")
      ->check(CLI::ExistingFile);
  sub->add_option("--format", flags.format_name,
                  "Log format: megatron (default), jsonl, hf, lightning (nemo), torchtitan, deepspeed, auto; "
                  "overrides --study's")
      ->type_name("FORMAT");
  sub->add_flag("--json", flags.json, "Print JSON (schema version 1, see README)");
}

namespace {

// The log read in pieces (logs::LogSummarizer): a 1 GB single-line log costs what `run` spends on
// it, a line's worth at most, not the file's size.
Result<logs::LogSummary> SummarizeLogFile(const std::string& path, const LogFormat& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(path + ": " + std::strerror(errno));
  logs::LogSummarizer summarizer(format);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    summarizer.Feed(std::string_view(buf.data(), static_cast<size_t>(in.gcount())));
  }
  if (in.bad()) return Status::IOError(path + ": cannot read");
  return summarizer.Finish();
}

}  // namespace

Status CmdMetrics(App& app, MetricsFlags& flags) {
  MetricsCheck check;
  check.path = flags.log_path;
  check.objective = "lm_loss";
  LogFormat format(MetricFormat::kAuto);
  if (!app.study_path.empty()) {
    SWEEP_RETURN_IF_ERROR(app.LoadStudyFile(App::Space::kNotNeeded));
    format = app.study.metric_format;
    check.objective = app.study.objective.metric;
  }
  if (!flags.format_name.empty() && !ParseMetricFormat(flags.format_name, &format.format)) {
    return Status::InvalidArgument(fmt::format(
        "--format: '{}' is not a log format{}; use {}", flags.format_name,
        DidYouMean(flags.format_name,
                   {"megatron", "jsonl", "hf", "lightning", "nemo", "torchtitan", "deepspeed", "regex", "auto"}),
        kMetricFormatNames));
  }
  if (format.format == MetricFormat::kRegex && std::none_of(format.regexes.begin(), format.regexes.end(),
                                                            [](const MetricRegex& r) { return r.name == "step"; })) {
    return Status::InvalidArgument(
        "--format regex: the expressions come from a study's [study.metric_regex] (--study)");
  }
  check.format = std::string(MetricFormatName(format.format));
  auto summary = SummarizeLogFile(flags.log_path, format);
  if (!summary.ok()) return summary.status();
  check.summary = std::move(*summary);
  // Nothing read in the format asked for: the format that reads these lines, if one does (a
  // second pass, so memory stays bounded whatever the log's size).
  if (check.summary.points == 0 && check.summary.lines > 0) {
    auto guess = SummarizeLogFile(flags.log_path, LogFormat(MetricFormat::kAuto));
    if (!guess.ok()) return guess.status();
    if (guess->detected != MetricFormat::kAuto && guess->points > 0 && guess->detected != format.format) {
      logs::FormatGuess g;
      g.format = guess->detected;
      g.points = guess->points;
      for (const auto& m : guess->metrics) g.names.push_back(m.name);
      check.suggestion = std::move(g);
    }
  }
  if (format.format == MetricFormat::kAuto) {
    check.format += check.summary.detected == MetricFormat::kAuto
                        ? " (no line matched a known format)"
                        : fmt::format(" ({})", MetricFormatName(check.summary.detected));
  }
  std::cout << (flags.json ? RenderMetricsCheckJson(check) : RenderMetricsCheckText(check));
  if (!check.objective_present()) {
    std::cerr << fmt::format(
        "slurmsweep metrics: the objective '{}' is not in {}{}: a sweep would rank nothing "
        "(set [objective] metric, or pass --study)\n",
        TerminalSafe(check.objective), TerminalSafe(flags.log_path), check.did_you_mean());
    app.exit_code = kExitNoResult;
  }
  return Status::OK();
}

}  // namespace sweep::cli
