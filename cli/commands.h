// The command line's shared context and its commands (main.cc holds their table). Each command
// lives in its own file (cmd_*.cc) with the struct of its positionals and flags, a function that
// registers them on its CLI11 subcommand, and the function that runs it. Built into the
// slurmsweep executable only: the library never sees CLI11.
#pragma once

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "base/terminal.h"
#include "cli/status_view.h"
#include "slurm/transport.h"
#include "store/store.h"
#include "study/study.h"

namespace CLI {
class App;
}

namespace sweep::cli {

// Codes a command ends with when it did its work but the answer is "no" (README, --help footer).
constexpr int kExitNoResult = 5;

// What every command shares: the study file it names, the study, store and transport (opened
// lazily, so `status` never opens a connection), where its text goes and the exit code it sets.
struct App {
  std::string study_path;
  std::string accept_host_key;  // run --accept-host-key; Connect() uses it
  // stdout's guard (main): its unfiltered buffer carries a live display's cursor movements.
  TerminalGuard* stdout_guard = nullptr;
  // Where a command's text goes: stdout, or stderr for `run --json` (stdout is the JSON).
  std::ostream* text = &std::cout;
  std::ostream& out() { return *text; }
  // Set by a command that succeeded but whose answer scripts must see (kExitNoResult, ...).
  int exit_code = 0;

  SystemClock clock;
  study::Study study;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<slurm::Transport> transport;

  // Loads and checks the study file; with kExpanded also resolves phase 2's seeds and expands the
  // space once (Study::expanded), which status, plan, report and run use. Commands that only name
  // stored trials (cancel, logs, metrics) skip it: on a 10^6-point grid it is seconds and a GB.
  enum class Space { kExpanded, kNotNeeded };
  Status LoadStudyFile(Space space = Space::kExpanded);
  Status OpenStore(bool read_only);
  Status Connect();
};

// One row of the command table: its name and help, a function that registers its positionals and
// flags on the subcommand into a fresh flags object (returned, so it lives until the command has
// run), and the function that runs it with them. Made by CommandOf, which keeps the two typed.
struct Command {
  const char* name;
  const char* help;
  std::shared_ptr<void> (*add_flags)(CLI::App* sub, App& app);
  Status (*run)(App& app, void* flags);
};

template <class Flags, void (*Add)(CLI::App*, App&, Flags&), Status (*Run)(App&, Flags&)>
constexpr Command CommandOf(const char* name, const char* help) {
  return {name, help,
          [](CLI::App* sub, App& app) -> std::shared_ptr<void> {
            auto flags = std::make_shared<Flags>();
            Add(sub, app, *flags);
            return flags;
          },
          [](App& app, void* flags) { return Run(app, *static_cast<Flags*>(flags)); }};
}

// cmd_run.cc
struct RunFlags {
  int max_ticks = 0;
  bool detach = false;
  std::string resubmit;  // end states whose trials start over
  int repeat_top = 0;    // --repeat-top K: more seeds for the K best configurations (repeat_top.h)
  int repeat_count = 0;  // --repeats N: to N seeds in all (0: twice the study's repeats)
  bool submit_predicted_oom = false;
  bool json = false;
  bool as_job = false;  // --as-job: the controller as a Slurm job (controller_job.h)
  std::string job_time = "01:00:00";
  int job_signal_s = 120;
};
void AddRunFlags(CLI::App* sub, App& app, RunFlags& flags);
Status CmdRun(App& app, RunFlags& flags);

// cmd_status.cc
struct StatusFlags {
  bool json = false;
  bool all = false;  // --all: every trial's row, at any size (issue 42)
  int watch_s = 0;   // --watch: seconds between refreshes (0: no watch)
};
void AddStatusFlags(CLI::App* sub, App& app, StatusFlags& flags);
Status CmdStatus(App& app, StatusFlags& flags);
// The status table, progress and failed trials' logs; `view`: already read, else read here.
// `all`: every trial's row and failed log (else a large study's best rows and counts: RenderStatusTable).
Status PrintStatus(App& app, int64_t study_id, const StudyView* view = nullptr, bool all = false);
// The trials whose jobs go on with no run tracking them, and the two ways on; "" if none.
std::string UntrackedTrials(const App& app, const std::vector<store::TrialRecord>& trials);
// Columns of stdout's terminal (80 when it is not one).
int TerminalWidth();

// cmd_cancel.cc
struct CancelFlags {
  double wait_s = 30;
  bool outside_space = false;  // --outside-space: only the trials outside the file's [space]
};
void AddCancelFlags(CLI::App* sub, App& app, CancelFlags& flags);
Status CmdCancel(App& app, CancelFlags& flags);

// cmd_plan.cc
struct PlanFlags {
  bool json = false;
  bool all = false;          // --all: every row, however many
  std::string script_trial;  // --script TRIAL
};
void AddPlanFlags(CLI::App* sub, App& app, PlanFlags& flags);
Status CmdPlan(App& app, PlanFlags& flags);

// cmd_report.cc: report and compare
struct ReportFlags {
  std::string html_path;
  std::string csv_path;
};
void AddReportFlags(CLI::App* sub, App& app, ReportFlags& flags);
Status CmdReport(App& app, ReportFlags& flags);

struct CompareFlags {
  std::vector<std::string> study_paths;
  std::string html_path;
  std::string csv_path;
  std::optional<double> target;
};
void AddCompareFlags(CLI::App* sub, App& app, CompareFlags& flags);
Status CmdCompare(App& app, CompareFlags& flags);

// cmd_logs.cc
struct LogsFlags {
  std::string trial_name;
  bool follow = false;
};
void AddLogsFlags(CLI::App* sub, App& app, LogsFlags& flags);
Status CmdLogs(App& app, LogsFlags& flags);

// cmd_metrics.cc
struct MetricsFlags {
  std::string log_path;
  std::string format_name;
  bool json = false;
};
void AddMetricsFlags(CLI::App* sub, App& app, MetricsFlags& flags);
Status CmdMetrics(App& app, MetricsFlags& flags);

// " (did you mean 'KEY'?)" for a trial named by its key or a beginning of it ("t-e23a"), or "".
std::string DidYouMeanTrial(std::string_view name, const std::vector<std::string_view>& keys);

// The positional every command but metrics and compare takes.
void AddStudyArgument(CLI::App* sub, App& app);

}  // namespace sweep::cli
