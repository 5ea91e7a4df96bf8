// slurmsweep: the command line. Subcommands are one table (each in its cmd_*.cc, with its flags;
// commands.h); this is the only place that prints errors and maps them to exit codes (documented in the README):
//   0 success, 1 failure while running, 2 bad input (study file, template, flags),
//   3 cluster unreachable (SSH or slurmctld), 4 refused for safety (unknown host key, newer db),
//   5 no result (`run`: no completed trial or no objective value; `metrics`: the objective is not
//   in the log), 130/143 `run` stopped by SIGINT/SIGTERM (the jobs go on).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <string_view>
#include <vector>

#include "base/terminal.h"
#include "base/text.h"
#include "cli/commands.h"

namespace sweep::cli {
namespace {

int ExitCode(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk:
      return 0;
    case Status::Code::kInvalidArgument:
    case Status::Code::kNotFound:
      return 2;
    case Status::Code::kUnavailable:
    case Status::Code::kResourceExhausted:
      return 3;
    case Status::Code::kFailedPrecondition:
      return 4;
    default:
      return 1;
  }
}

constexpr Command kCommands[] = {
    CommandOf<RunFlags, AddRunFlags, CmdRun>(
        "run",
        "Submit the study's trials, track them and ingest their metrics until all have ended. "
        "Run it again to resume: trials that already have a job are never submitted twice."),
    CommandOf<StatusFlags, AddStatusFlags, CmdStatus>(
        "status", "Show every trial's state, job and latest metrics from the study database."),
    CommandOf<CancelFlags, AddCancelFlags, CmdCancel>(
        "cancel", "Cancel every queued or running job of the study (one scancel) and the trials not yet submitted."),
    CommandOf<PlanFlags, AddPlanFlags, CmdPlan>(
        "plan",
        "Dry run, nothing is submitted: list the trials and which constraints drop; with [job.vars] model, "
        "predict memory per GPU for every configuration (Megatron-LM presets) and show which are dropped by a "
        "parallelism rule or a predicted OOM."),
    CommandOf<ReportFlags, AddReportFlags, CmdReport>(
        "report",
        "Write the HTML report (recommendation, speedup over the baseline, ranking, charts, cost) and/or "
        "trials.csv, metrics.csv and importance.csv; with neither option, both, to the study's [report] html and "
        "csv_dir."),
    CommandOf<CompareFlags, AddCompareFlags, CmdCompare>(
        "compare",
        "Studies side by side (the same model on other GPUs, or after a framework upgrade): the best "
        "configuration of each, its throughput, time to a common target and cost, and the gain over the first "
        "study split into throughput x convergence = time to target."),
    CommandOf<LogsFlags, AddLogsFlags, CmdLogs>(
        "logs",
        "Show a trial's log (TRIAL: its key, a unique beginning of it, or its id), read over the study's transport "
        "(SSH or local); --follow prints what is appended until the trial ends."),
    CommandOf<MetricsFlags, AddMetricsFlags, CmdMetrics>(
        "metrics",
        "Check a training log before a sweep: the metrics slurmsweep would store (points, steps), the time "
        "axis and the key that gives it, malformed lines, and whether the objective is there (exit 5 if not)."),
};

}  // namespace
}  // namespace sweep::cli

int main(int argc, char** argv) {
  using namespace sweep;
  using namespace sweep::cli;
  // No escape sequence in a study value or a log line reaches the terminal.
  TerminalGuard guard_out(std::cout), guard_err(std::cerr);
  App app;
  app.stdout_guard = &guard_out;
  CLI::App cli{"slurmsweep: performance and hyperparameter sweeps of training jobs on Slurm clusters"};
  cli.set_version_flag("--version", std::string("slurmsweep ") + SLURMSWEEP_VERSION);
  cli.require_subcommand(1);
  cli.footer(
      "Exit codes: 0 success; 1 failure while running; 2 bad input (study file, template, flags, a setting the cluster "
      "refuses); 3 cluster unreachable (SSH or slurmctld); 4 refused for safety or not now (unknown or changed host "
      "key, newer database, another run of the study going on, phase 1 not ended; logs: no log yet); 5 no result (run: "
      "every trial ended "
      "and "
      "none completed with a value of the objective; metrics: the objective is not in the log); 130/143 run stopped "
      "by SIGINT/SIGTERM (the jobs go on: run again to resume, or cancel).");
  if (argc > 1 && argv[1][0] != '-') {
    std::string_view word = argv[1];
    std::vector<std::string_view> names;
    for (const Command& c : kCommands) names.push_back(c.name);
    if (std::find(names.begin(), names.end(), word) == names.end()) {
      std::cerr << fmt::format("slurmsweep: unknown command '{}'{}; commands: {} (see --help)\n", word,
                               DidYouMean(word, names), fmt::join(names, ", "));
      return 2;
    }
  }
  const Command* chosen = nullptr;
  std::vector<std::shared_ptr<void>> flags;  // each command's, bound to its subcommand's options
  for (const Command& c : kCommands) {
    CLI::App* sub = cli.add_subcommand(c.name, c.help);
    flags.push_back(c.add_flags(sub, app));
    sub->callback([&chosen, &c] { chosen = &c; });
  }
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e) == 0 ? 0 : 2;
  }
  Status st = chosen->run(app, flags[chosen - kCommands].get());
  if (!st.ok()) {
    std::cerr << "slurmsweep " << chosen->name << ": " << st.ToString() << "\n";
    return ExitCode(st);
  }
  return app.exit_code;
}
