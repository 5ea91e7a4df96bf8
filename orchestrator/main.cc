// slurmsweep: the command line. Subcommands are one table; this is the only place that
// prints errors and maps them to exit codes (documented in the README):
//   0 success, 1 failure while running, 2 bad input (study file, template, flags),
//   3 cluster unreachable (SSH or slurmctld), 4 refused for safety (unknown host key, newer db),
//   5 no result (`run`: no completed trial or no objective value; `metrics`: the objective is not
//   in the log), 130/143 `run` stopped by SIGINT/SIGTERM (the jobs go on).
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <optional>
#include <set>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/terminal.h"
#include "base/text.h"
#include "orchestrator/compare.h"
#include "orchestrator/cockpit.h"
#include "orchestrator/config_groups.h"
#include "orchestrator/connect.h"
#include "orchestrator/metrics_check.h"
#include "orchestrator/notify.h"
#include "orchestrator/phases.h"
#include "planner/planner.h"
#include "orchestrator/report_data.h"
#include "orchestrator/run_lock.h"
#include "orchestrator/run_outcome.h"
#include "orchestrator/runner.h"
#include "orchestrator/tpe_trials.h"
#include "orchestrator/trial_script.h"
#include "study/study.h"
#include "reports/csv.h"
#include "store/store.h"

namespace sweep {
namespace {

// Codes a command ends with when it did its work but the answer is "no" (README, --help footer).
constexpr int kExitNoResult = 5;

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

// Owns everything a subcommand needs; built lazily so `status` never opens a connection.
struct App {
  std::string study_path;
  std::string csv_path;
  std::string html_path;
  std::vector<std::string> compare_paths;
  std::optional<double> compare_target;
  int max_ticks = 0;
  bool detach = false;
  double cancel_wait_s = 30;
  std::string resubmit;  // run --resubmit: end states whose trials start over
  int repeat_top = 0;    // run --repeat-top K: more seeds for the K best configurations (config_groups.h)
  int repeat_count = 0;  // run --repeats N: to N seeds in all (0: twice the study's repeats)
  bool submit_predicted_oom = false;
  std::string accept_host_key;
  std::string log_path;     // metrics LOGFILE
  std::string trial_name;   // logs TRIAL
  bool follow = false;      // logs --follow
  std::string format_name;  // metrics --format
  bool json = false;
  int watch_s = 0;  // status --watch: seconds between refreshes (0: no watch)
  // stdout's guard (main): its unfiltered buffer carries a live display's cursor movements.
  TerminalGuard* stdout_guard = nullptr;
  // Where a command's text goes: stdout, or stderr for `run --json` (stdout is the JSON).
  std::ostream* text = &std::cout;
  std::ostream& out() { return *text; }
  // Set by a command that succeeded but whose answer scripts must see (kExitNoResult, ...).
  int exit_code = 0;

  SystemClock clock;
  Study study;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<slurm::Transport> transport;

  Status LoadStudyFile() {
    auto s = LoadStudy(study_path);
    if (!s.ok()) return s.status();
    study = std::move(*s);
    SWEEP_RETURN_IF_ERROR(CheckStudyTemplate(study));
    for (const auto& w : study.warnings) std::cerr << "warning: " << w << "\n";
    // Phase 2: phase 1's ranking is read once, here; every later expansion takes it as data.
    SWEEP_RETURN_IF_ERROR(ResolveSeeds(study));
    return Status::OK();
  }
  Status OpenStore(bool read_only) {
    auto st = read_only ? store::Store::OpenReadOnly(study.database) : store::Store::Open(study.database);
    if (!st.ok()) return st.status();
    store = std::move(*st);
    return Status::OK();
  }
  Status Connect() {
    auto t = OpenTransport(study.cluster, accept_host_key);
    if (!t.ok() && t.status().code() == Status::Code::kInvalidArgument) {
      return t.status().WithContext(study.path);  // a setting of the study file's [cluster]
    }
    if (!t.ok()) return t.status();
    transport = std::move(*t);
    return Status::OK();
  }

  Result<std::set<std::string>> ResubmitStates() const {
    std::set<std::string> states;
    std::string_view rest = resubmit;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      std::string_view word = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
      if (word.empty()) continue;
      std::vector<std::string_view> known = ResubmittableTrialStates();  // base/trial_state.h
      if (std::find(known.begin(), known.end(), word) == known.end()) {
        return Status::InvalidArgument(
            fmt::format("--resubmit: '{}' is not an end state a trial can start over from{}; "
                        "use some of: {}",
                        word, DidYouMean(word, known), fmt::join(known, ",")));
      }
      states.emplace(word);
    }
    return states;
  }

  Status CmdRun() {
    SWEEP_RETURN_IF_ERROR(LoadStudyFile());
    auto resubmit_states = ResubmitStates();
    if (!resubmit_states.ok()) return resubmit_states.status();
    auto lock = RunLock::Acquire(study.database + ".lock");
    if (!lock.ok()) return lock.status();
    if (detach) SWEEP_RETURN_IF_ERROR(Detach(*lock));
    // Opened after the fork: neither a libssh session nor an SQLite handle survives one.
    // Ctrl-C or a SIGTERM (a detached run's kill) ends the tick in progress, then `run` says what
    // goes on without it: nothing is cancelled.
    InterruptSignal interrupt;
    InterruptibleClock interruptible(clock, interrupt);
    SWEEP_RETURN_IF_ERROR(OpenStore(false));
    SWEEP_RETURN_IF_ERROR(Connect());
    if (json) text = &std::cerr;
    // On a terminal one progress block is redrawn in place under the log lines; on a pipe (or
    // --detach's log) a plain line each time the counts or the best trial change.
    bool tty = !json && ::isatty(STDOUT_FILENO) && stdout_guard;
    LiveDisplay display(out(), tty ? stdout_guard->raw() : nullptr, TerminalWidth());
    ProgressOptions progress_options = ProgressOptionsFor(study);
    Runner runner(study, *store, *transport, interruptible, display.log());
    runner.set_submit_predicted_oom(submit_predicted_oom);
    runner.set_interrupted([&interrupt] { return interrupt.received() != 0; });
    runner.set_tick_lines(!tty);
    // [notify]: failures are logged into the run's log and events, never returned.
    Notifier notifier(study, clock, [&](const std::string& kind, const std::string& message) {
      display.log() << fmt::format("[{}] {}\n", FormatUtc(clock.Now()), message);
      if (runner.study_id() != 0) (void)store->AddEvent(runner.study_id(), std::nullopt, clock.Now(), kind, message);
    });
    if (auto rec = store->GetStudy(study.name); rec.ok()) {
      auto before = store->ListTrials(rec->id);
      if (!before.ok()) return before.status();
      std::set<std::string> failed;
      for (const auto& t : *before) {
        const TrialStateInfo* info = FindTrialState(t.state);
        if (info && info->final && info->outcome == TrialOutcome::kFailed) failed.insert(t.trial_key);
      }
      notifier.SetKnownFailures(std::move(failed));
    }
    runner.set_on_event([&](std::optional<int64_t>, const std::string& kind, const std::string& message) {
      notifier.OnRunEvent(kind, message);
    });
    // Reading every trial's metrics costs time on a large study (~1 s for 200 trials of 6k points):
    // the view is refreshed when trials ended and otherwise at most so often that it takes no
    // more than a tenth of the run's time.
    double last_view_at = 0, last_view_cost = 0;
    runner.set_on_tick([&](const TickReport& report) {
      double now = clock.Now();
      if (!report.done && report.ended == 0 && now - last_view_at < 10 * last_view_cost) return;
      auto view = ReadStudyView(*store, study, runner.study_id(), now);
      last_view_at = now, last_view_cost = clock.Now() - now;
      if (!view.ok()) return;  // the next tick shows it; the run goes on
      display.Show(ComputeProgress(view->progress, progress_options, now), progress_options,
                   fmt::format("[{}] ", FormatUtc(now)));
      std::vector<Notifier::TrialFacts> facts;
      for (size_t i = 0; i < view->rows.size(); ++i) {
        const auto& r = view->rows[i];
        facts.push_back({r.trial_key, r.state, r.reason, r.job_id, view->log_paths[i]});
      }
      notifier.OnTick(report.unavailable, facts);
    });
    // A detached run's pid file goes with it, however it ends.
    struct RemovePidFile {
      std::string path;
      ~RemovePidFile() {
        if (!path.empty()) std::remove(path.c_str());
      }
    } pid_file{detach ? study.database + ".pid" : ""};
    if (!resubmit_states->empty()) {
      auto n = runner.Resubmit(*resubmit_states);
      if (!n.ok()) return n.status();
      out() << fmt::format("{} trial(s) that ended {} start over\n", *n, resubmit);
    }
    if (repeat_top > 0 || repeat_count > 0) {
      auto added = RepeatTop(*store, study, repeat_top, repeat_count, clock.Now());
      if (!added.ok()) return added.status();
      out() << *added;
    }
    Status run_status = runner.Run(max_ticks);
    display.Finish();
    // Notifications still running get their timeout to finish, whatever happens next.
    struct DrainAtExit {
      Notifier& n;
      ~DrainAtExit() { n.Drain(); }
    } drain{notifier};
    if (int sig = interrupt.received()) return Interrupted(runner.study_id(), sig);
    SWEEP_RETURN_IF_ERROR(run_status);
    const auto& s = runner.slurm_stats();
    const auto& c = runner.cluster_calls();
    out() << fmt::format(
        "slurm commands: {} sbatch, {} squeue, {} sacct, {} scancel; cluster calls: {} commands, {} file writes, {} "
        "log reads\n",
        s.sbatch, s.squeue, s.sacct, s.scancel, c.commands, c.writes, c.reads);
    SWEEP_RETURN_IF_ERROR(PrintStatus(runner.study_id()));
    auto trials = store->ListTrials(runner.study_id());
    if (!trials.ok()) return trials.status();
    std::vector<std::string> states;
    for (const auto& t : *trials) states.push_back(t.state);
    out() << ResubmitHint(states, study_path);
    auto open = std::count_if(trials->begin(), trials->end(),
                              [](const store::TrialRecord& t) { return !IsFinalTrialState(t.state); });
    if (max_ticks > 0 && open > 0) {
      out() << fmt::format(
          "stopped after --max-ticks {} with {} trial(s) not ended; `slurmsweep run {}` goes "
          "on tracking them\n",
          max_ticks, open, study_path);
    }
    if (open == 0) {
      auto rows = CollectTrialRows(*store, study, runner.study_id(), clock.Now(), study.objective.metric);
      if (!rows.ok()) return rows.status();
      std::string why = NoResultReason(*rows, study.objective.metric);
      if (!why.empty()) {
        std::cerr << fmt::format("slurmsweep run: every trial has ended, but {}: there is no result (exit {})\n", why,
                                 kExitNoResult);
        exit_code = kExitNoResult;
      }
    }
    if (json || (open == 0 && study.notify)) {
      double now = clock.Now();
      auto view = ReadStudyView(*store, study, runner.study_id(), now);
      if (!view.ok()) return view.status();
      Progress progress = ComputeProgress(view->progress, progress_options, now);
      if (open == 0) {
        std::string line = RenderProgressLine(progress, progress_options);  // "progress: ...\n"
        line = line.substr(line.find(' ') + 1);
        line.pop_back();
        notifier.Finished(fmt::format("study {} finished: {}", study.name, line),
                          {{"progress", ProgressJson(progress)},
                           {"best", BestJson(progress, progress_options)},
                           {"exit_code", exit_code}});
      }
      nlohmann::json commands = {
          {"sbatch", s.sbatch}, {"squeue", s.squeue}, {"sacct", s.sacct}, {"scancel", s.scancel}};
      if (json) std::cout << DumpJson(RunSummaryJson(study, *view, progress, exit_code, commands));
    }
    return Status::OK();
  }

  static int TerminalWidth() {
    winsize ws{};
    return ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 ? ws.ws_col : 80;
  }

  // After SIGINT/SIGTERM: what goes on without this run, and how to resume or cancel it. The
  // database is as a crash would leave it, which the next `run` picks up (README: resuming).
  Status Interrupted(int64_t study_id, int sig) {
    exit_code = 128 + sig;
    out() << fmt::format("\nslurmsweep run: stopped by {}; this run ends and releases its lock\n",
                         sig == SIGINT    ? "SIGINT"
                         : sig == SIGTERM ? "SIGTERM"
                                          : "a signal");
    if (study_id == 0) {
      out() << "nothing was submitted yet\n";
      return Status::OK();
    }
    auto trials = store->ListTrials(study_id);
    if (!trials.ok()) return trials.status();
    out() << UntrackedTrials(*trials);
    return Status::OK();
  }

  // The trials whose jobs go on with no run tracking them, and the two ways on; "" if none.
  std::string UntrackedTrials(const std::vector<store::TrialRecord>& trials) const {
    int live = 0, submitting = 0, unsubmitted = 0;
    for (const auto& t : trials) {
      if (IsFinalTrialState(t.state)) continue;
      if (t.state == kTrialNew) ++unsubmitted;
      else if (t.state == kTrialSubmitting) ++submitting;
      else ++live;
    }
    if (live + submitting + unsubmitted == 0) return "";
    return fmt::format(
        "{} trial(s) queued or running on Slurm, {} being submitted, {} not submitted yet; no run is "
        "tracking them:\n"
        "  slurmsweep run {}      resumes: tracks the jobs (finds those being submitted) and submits "
        "the rest\n"
        "  slurmsweep cancel {}   cancels them\n",
        live, submitting, unsubmitted, study_path, study_path);
  }

  // Goes on in the background: the parent prints where to look and exits; the child owns the
  // lock, writes DATABASE.pid and logs to DATABASE.log.
  Status Detach(RunLock& lock) {
    std::string log_path = study.database + ".log";
    std::string pid_path = study.database + ".pid";
    int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) return Status::IOError(log_path + ": " + std::strerror(errno));
    std::cout.flush();
    pid_t pid = ::fork();
    if (pid < 0) return Status::Internal(std::string("fork: ") + std::strerror(errno));
    if (pid > 0) {
      std::cout << fmt::format(
          "slurmsweep: running in the background as pid {}\n  log: {}\n  pid file: {}\n"
          "  watch it with: slurmsweep status {}\n",
          pid, log_path, pid_path, study_path);
      std::exit(0);
    }
    ::setsid();
    int devnull = ::open("/dev/null", O_RDONLY);
    ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::close(devnull);
    ::close(log_fd);
    SWEEP_RETURN_IF_ERROR(lock.RewritePid());
    std::ofstream(pid_path, std::ios::trunc) << ::getpid() << "\n";
    return Status::OK();
  }

  Status CmdStatus() {
    SWEEP_RETURN_IF_ERROR(LoadStudyFile());
    SWEEP_RETURN_IF_ERROR(OpenStore(true));
    auto rec = store->GetStudy(study.name);
    if (!rec.ok()) return rec.status().WithContext("nothing recorded yet for this study; run it first");
    if (watch_s > 0) return WatchStatus(rec->id);
    if (json) {
      auto view = ReadStudyView(*store, study, rec->id, clock.Now());
      if (!view.ok()) return view.status();
      auto holder = RunLock::Holder(study.database + ".lock");
      std::cout << DumpJson(
          StatusJson(study, *view, ComputeProgress(view->progress, ProgressOptionsFor(study), clock.Now()), holder));
      return Status::OK();
    }
    SWEEP_RETURN_IF_ERROR(PrintStatus(rec->id));
    return PrintRunGoingOn(rec->id);
  }

  // Whether a run is tracking the study now; a detached run killed with -9 leaves its pid file.
  Status PrintRunGoingOn(int64_t study_id) {
    std::string pid_file = study.database + ".pid";
    if (auto holder = RunLock::Holder(study.database + ".lock")) {
      std::cout << fmt::format("a run of this study is going on (pid {})\n", *holder);
    } else {
      std::cout << "no run of this study is going on";
      if (std::filesystem::exists(pid_file)) {
        std::cout << fmt::format("; removed {}, left by a detached run that was killed", pid_file);
        std::error_code ec;
        std::filesystem::remove(pid_file, ec);
      }
      std::cout << "\n";
      auto trials = store->ListTrials(study_id);
      if (!trials.ok()) return trials.status();
      std::cout << UntrackedTrials(*trials);
    }
    return Status::OK();
  }

  // `status --watch`: on a terminal the whole status, redrawn every watch_s seconds; elsewhere one
  // progress line (with --json, one JSON document per line) whenever the counts or the best trial
  // change. Ends once every trial has ended; Ctrl-C ends it before.
  Status WatchStatus(int64_t study_id) {
    bool tty = !json && ::isatty(STDOUT_FILENO) && stdout_guard;
    ProgressOptions options = ProgressOptionsFor(study);
    LiveDisplay display(std::cout, nullptr, TerminalWidth());
    std::string last_key;
    for (;;) {
      double now = clock.Now();
      auto view = ReadStudyView(*store, study, study_id, now);
      if (!view.ok()) return view.status();
      Progress progress = ComputeProgress(view->progress, options, now);
      if (tty) {
        // Home and clear: the cursor movement goes around the guard, the text through it.
        std::string home = "\x1b[H\x1b[2J";
        std::cout.flush();
        stdout_guard->raw()->sputn(home.data(), static_cast<std::streamsize>(home.size()));
        std::cout << fmt::format("every {}s, {}  (Ctrl-C ends)\n", watch_s, FormatUtc(now));
        SWEEP_RETURN_IF_ERROR(PrintStatus(study_id, &*view));
        SWEEP_RETURN_IF_ERROR(PrintRunGoingOn(study_id));
        std::cout.flush();
      } else if (json) {
        std::string key = ProgressChangeKey(progress);
        if (key != std::exchange(last_key, key)) {
          auto holder = RunLock::Holder(study.database + ".lock");
          std::cout << StatusJson(study, *view, progress, holder)
                           .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                    << "\n";
          std::cout.flush();
        }
      } else {
        display.Show(progress, options, fmt::format("[{}] ", FormatUtc(now)));
      }
      if (progress.running + progress.queued == 0) return Status::OK();
      clock.SleepFor(watch_s);
    }
  }

  // `view`: already read (status --watch), else read here.
  Status PrintStatus(int64_t study_id, const StudyView* view = nullptr) {
    // The objective's final value (base/final_objective.h, as the report ranks), so a misspelt
    // metric shows as '-' everywhere, not as the loss.
    const std::string& objective = study.objective.metric;
    std::optional<StudyView> read;
    if (!view) {
      auto v = ReadStudyView(*store, study, study_id, clock.Now());
      if (!v.ok()) return v.status();
      read = std::move(*v);
      view = &*read;
    }
    const std::vector<reports::TrialRow>* rows = &view->rows;
    int left_out = view->left_out;
    std::map<std::string, int> by_state;
    // The objective's column is as wide as its name (up to 24), so the header names it whole.
    size_t ow = std::clamp<size_t>(objective.size(), 11, 24);
    std::string header = objective.size() <= ow ? objective : objective.substr(0, ow - 1) + "~";
    out() << fmt::format("{:<16} {:<13} {:>8} {:>7} {:>{}} {:>8}  {}\n", "trial", "state", "job", "steps",
                         TerminalSafe(header), ow, "iter/s", "parameters / reason");
    auto names = ParamNames(study);
    const reports::TrialRow* logging = nullptr;  // a trial that logged metrics
    bool any_objective = false;
    for (const auto& r : *rows) {
      ++by_state[r.state];
      std::optional<double> value = TrialObjective(r);
      any_objective = any_objective || value.has_value();
      if (r.steps > 0 && !logging) logging = &r;
      std::string params;
      for (size_t i = 0; i < names.size(); ++i) {
        params += fmt::format("{}{}={}", i ? " " : "", names[i], TerminalSafe(r.param_values[i]));
      }
      out() << fmt::format("{:<16} {:<13} {:>8} {:>7} {:>{}} {:>8}  {}{}\n", r.trial_key, r.state,
                           r.job_id.empty() ? "-" : r.job_id, r.steps, value ? fmt::format("{:.5g}", *value) : "-", ow,
                           r.iters_per_s ? fmt::format("{:.3g}", *r.iters_per_s) : "-", params,
                           r.reason.empty() ? "" : "  [" + TerminalSafe(r.reason) + "]");
    }
    std::string summary;
    for (const auto& [state, n] : by_state) summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", n, state);
    out() << fmt::format("{} trials: {}\n", rows->size(), summary);
    if (auto configs = RankStudyConfigurations(study, *rows)) out() << RenderConfigurationsText(*configs);
    ProgressOptions options = ProgressOptionsFor(study);
    out() << RenderProgressBlock(ComputeProgress(view->progress, options, clock.Now()), options);
    if (left_out > 0) {
      out() << fmt::format(
          "({} trial(s) of an earlier version of {}, whose values are no longer in [space], are "
          "left out here and in the reports)\n",
          left_out, study.path);
    }
    if (logging && !any_objective) {
      auto summary = store->Summary(logging->trial_id);
      if (!summary.ok()) return summary.status();
      std::set<std::string> logged;
      for (const auto& m : summary->metrics) logged.insert(m.name);
      std::vector<std::string_view> known(logged.begin(), logged.end());
      out() << fmt::format("warning: no trial has logged the objective metric '{}'{}; the logs have: {}\n", objective,
                           DidYouMean(objective, known), fmt::join(logged, ", "));
    }
    return PrintFailedLogs(study_id);
  }

  // Where to look when a trial failed: its last attempt's log on the cluster.
  Status PrintFailedLogs(int64_t study_id) {
    auto trials = store->ListTrials(study_id);
    if (!trials.ok()) return trials.status();
    bool first = true;
    for (const auto& t : *trials) {
      const TrialStateInfo* info = FindTrialState(t.state);
      if (!info || !info->final || info->outcome != TrialOutcome::kFailed || t.log_path.empty()) continue;
      if (std::exchange(first, false)) {
        out() << fmt::format("logs of failed trials (on {}):\n",
                             study.cluster.transport == "ssh" ? study.cluster.host : "this machine");
      }
      out() << fmt::format("  {:<16} {:<13} {}\n", t.trial_key, t.state, TerminalSafe(t.log_path));
    }
    return Status::OK();
  }

  // Offline: needs neither the cluster nor the database, so a study can be planned anywhere.
  Status CmdPlan() {
    SWEEP_RETURN_IF_ERROR(LoadStudyFile());
    if (study.sampler == "tpe") return PlanTpe();
    // What `run` would refuse before submitting anything: trials whose values their template
    // cannot carry.
    auto specs = ExpandStudy(study);
    if (!specs.ok()) return specs.status();
    auto refused = RenderRefusals(study, *specs);
    if (json) {
      auto doc = PlanJson(*specs, refused);
      if (!doc.ok()) return doc.status();
      std::cout << DumpJson(*doc);
    } else {
      SWEEP_RETURN_IF_ERROR(PrintTrialPlan());
      for (const auto& [key, why] : refused) std::cout << fmt::format("refused  {}: {}\n", key, TerminalSafe(why));
    }
    if (!refused.empty()) {
      return Status::InvalidArgument(
          fmt::format("{} trial(s) cannot be rendered; `run` would submit nothing", refused.size()));
    }
    return Status::OK();
  }

  // A tpe study has no trials before it runs: the region its proposals come from (tpe_trials.h),
  // and the trials it proposed so far.
  Status PlanTpe() {
    auto region = PlanTpeRegion(study);
    if (!region.ok()) return region.status();
    // Values of its lists that the template cannot carry: `run` would refuse the study (Prepare).
    auto refused = ValueRefusals(study);
    auto refusal = [&]() -> Status {
      if (refused.empty()) return Status::OK();
      return Status::InvalidArgument(
          fmt::format("{} value(s) cannot be rendered; `run` would submit nothing", refused.size()));
    };
    // The trials proposed so far (a study that ran), as `plan --json` lists a grid's.
    nlohmann::json trials = nlohmann::json::array();
    std::map<std::string, int> counts;
    if (std::filesystem::exists(study.database) && OpenStore(true).ok()) {
      if (auto rec = store->GetStudy(study.name); rec.ok()) {
        auto stored = store->ListTrials(rec->id);
        if (!stored.ok()) return stored.status();
        for (const auto& t : *stored) {
          ++counts[t.state];
          trials.push_back({{"key", t.trial_key},
                            {"verdict", t.state},
                            {"reason", t.reason},
                            {"params", nlohmann::json::parse(t.params_json, nullptr, false)},
                            {"predicted_gib", nullptr}});
        }
      }
    }
    if (json) {
      auto doc = PlanJson({}, refused);
      if (!doc.ok()) return doc.status();
      (*doc)["sampler"] = "tpe";
      (*doc)["region"] = TpeRegionJson(*region);
      (*doc)["trials"] = trials;
      (*doc)["counts"] = counts;
      std::cout << DumpJson(*doc);
      return refusal();
    }
    std::cout << RenderTpeRegion(study, *region);
    for (const auto& [value, why] : refused) std::cout << fmt::format("refused  {}: {}\n", value, TerminalSafe(why));
    std::string so_far;
    for (const auto& [state, n] : counts) so_far += fmt::format("{}{} {}", so_far.empty() ? "" : ", ", n, state);
    if (!so_far.empty()) std::cout << fmt::format("already proposed ({} in the database): {}\n", trials.size(), so_far);
    return refusal();
  }

  // What each trial is in the study's database already (a study that ran), by trial key.
  std::map<std::string, std::string> StoredStates() {
    std::map<std::string, std::string> stored;
    if (std::filesystem::exists(study.database) && OpenStore(true).ok()) {
      if (auto rec = store->GetStudy(study.name); rec.ok()) {
        if (auto trials = store->ListTrials(rec->id); trials.ok()) {
          for (const auto& t : *trials) stored[t.trial_key] = t.state;
        }
      }
    }
    return stored;
  }

  // `plan --json` (README: JSON output): every trial with its verdict ("run", "dropped" by a
  // constraint, "rule" or "oom" from the memory plan, or the state a trial that already ran is
  // in), its values and predicted memory, and the trials run would refuse to render.
  Result<nlohmann::json> PlanJson(const std::vector<TrialSpec>& specs,
                                  const std::map<std::string, std::string>& refused) {
    std::map<std::string, std::string> stored = StoredStates();
    nlohmann::json trials = nlohmann::json::array();
    std::map<std::string, int> counts;
    auto add = [&](const TrialSpec& t, std::string verdict, std::string reason, std::optional<double> gib) {
      auto it = stored.find(t.key);
      if (verdict == "run" && it != stored.end() && it->second != kTrialNew) verdict = it->second;
      // A trial its template cannot carry would not run: `run` refuses the study before submitting.
      if (auto why = refused.find(t.key); verdict == "run" && why != refused.end()) {
        verdict = "refused";
        reason = why->second;
      }
      ++counts[verdict];
      nlohmann::json params = nlohmann::json::object();
      for (const auto& [name, value] : t.params) {
        std::visit([&, &key = name](const auto& v) { params[key] = v; }, value);
      }
      trials.push_back({{"key", t.key},
                        {"verdict", verdict},
                        {"reason", reason},
                        {"params", params},
                        {"predicted_gib", gib ? nlohmann::json(*gib) : nlohmann::json()}});
    };
    nlohmann::json memory_plan;
    std::optional<Plan> plan;
    if (study.job.vars.count("model")) {
      auto planned = PlanStudy(study);
      if (!planned.ok()) return planned.status();
      plan = std::move(*planned);
      memory_plan = {{"model", plan->model.name},
                     {"world", plan->world},
                     {"gpu_mem_gib", plan->gpu_mem_gib},
                     {"headroom_gib", plan->headroom_gib}};
    }
    for (const PlanVerdict& v : PlanVerdicts(specs, plan ? &*plan : nullptr)) {
      add(*v.trial, v.verdict, v.reason, v.predicted_gib);
    }
    nlohmann::json refusals = nlohmann::json::array();
    for (const auto& [key, why] : refused) refusals.push_back({{"key", key}, {"reason", why}});
    return nlohmann::json{{"version", kCockpitJsonVersion},
                          {"kind", "plan"},
                          {"study", {{"name", study.name}, {"file", study.path}}},
                          {"memory_plan", memory_plan},
                          {"counts", counts},
                          {"trials", trials},
                          {"refused", refusals}};
  }

  Status PrintTrialPlan() {
    // Without a model there is no memory to predict: the dry run is the trials, and which the
    // constraints drop (a constraint that cannot be evaluated fails here, not at `run`).
    if (!study.job.vars.count("model")) {
      auto specs = ExpandStudy(study);
      if (!specs.ok()) return specs.status();
      // A study that already ran: what each trial is now, so "to run" means what a run would submit.
      std::map<std::string, std::string> stored = StoredStates();
      int dropped = 0, to_run = 0;
      std::map<std::string, int> already;
      for (const TrialSpec& t : *specs) {
        std::string params;
        for (const auto& [name, value] : t.params) {
          params += fmt::format("{}{}={}", params.empty() ? "" : " ", name, TerminalSafe(ParamToString(value)));
        }
        auto it = stored.find(t.key);
        std::string label = !t.dropped_reason.empty()                       ? "dropped"
                            : it == stored.end() || it->second == kTrialNew ? "run"
                                                                            : it->second;
        if (!t.dropped_reason.empty()) ++dropped;
        else if (label == "run") ++to_run;
        else ++already[label];
        std::cout << fmt::format("{:<16} {:<9} {}{}\n", t.key, label, params,
                                 t.dropped_reason.empty() ? "" : "  [" + TerminalSafe(t.dropped_reason) + "]");
      }
      std::string done;
      for (const auto& [state, n] : already) done += fmt::format("{}{} {}", done.empty() ? "" : ", ", n, state);
      std::cout << fmt::format(
          "{} trials: {} to run, {}{} dropped by constraints; nothing was submitted (no [job.vars] "
          "model, so no memory plan)\n",
          specs->size(), to_run, done.empty() ? "" : "already in the database: " + done + "; ", dropped);
      return Status::OK();
    }
    auto plan = PlanStudy(study);
    if (!plan.ok()) return plan.status();
    std::cout << RenderPlan(*plan, ParamNames(study));
    return Status::OK();
  }

  Status CmdCancel() {
    SWEEP_RETURN_IF_ERROR(LoadStudyFile());
    // Nothing was ever run: say so rather than create an empty database that `status` then shows.
    {
      SWEEP_RETURN_IF_ERROR(OpenStore(true));
      auto rec = store->GetStudy(study.name);
      if (!rec.ok()) return rec.status().WithContext("nothing to cancel: this study was never run");
      store.reset();
    }
    SWEEP_RETURN_IF_ERROR(OpenStore(false));
    SWEEP_RETURN_IF_ERROR(Connect());
    Runner runner(study, *store, *transport, clock, std::cout);
    auto n = runner.CancelAll();
    if (!n.ok()) return n.status();
    std::cout << fmt::format("cancelled {} trial(s)\n", *n);
    if (cancel_wait_s <= 0) return Status::OK();
    // Record the ends now, so that `status` and the report say cancelled, unless a `run` of the
    // study is going: it records them itself at its next tick.
    auto lock = RunLock::Acquire(study.database + ".lock");
    if (!lock.ok()) {
      std::cout << "a run of this study is going on: it records the jobs' ends at its next tick\n";
      return Status::OK();
    }
    auto open = runner.AwaitEnds(cancel_wait_s);
    if (!open.ok()) return open.status().WithContext("recording the cancelled jobs' ends");
    if (*open > 0) {
      std::cout << fmt::format("{} job(s) not ended after {}s; the next `slurmsweep run {}` records their end\n", *open,
                               cancel_wait_s, study_path);
    }
    return Status::OK();
  }

  // Offline: the log is read locally; a study file only supplies metric_format and the objective.
  Status CmdMetrics() {
    MetricsCheck check;
    check.path = log_path;
    check.objective = "lm_loss";
    LogFormat format(MetricFormat::kAuto);
    if (!study_path.empty()) {
      SWEEP_RETURN_IF_ERROR(LoadStudyFile());
      format = study.metric_format;
      check.objective = study.objective.metric;
    }
    if (!format_name.empty() && !ParseMetricFormat(format_name, &format.format)) {
      return Status::InvalidArgument(fmt::format(
          "--format: '{}' is not a log format{}; use {}", format_name,
          DidYouMean(format_name,
                     {"megatron", "jsonl", "hf", "lightning", "nemo", "torchtitan", "deepspeed", "regex", "auto"}),
          kMetricFormatNames));
    }
    if (format.format == MetricFormat::kRegex && std::none_of(format.regexes.begin(), format.regexes.end(),
                                                              [](const MetricRegex& r) { return r.name == "step"; })) {
      return Status::InvalidArgument(
          "--format regex: the expressions come from a study's [study.metric_regex] (--study)");
    }
    check.format = std::string(MetricFormatName(format.format));
    std::ifstream in(log_path, std::ios::binary);
    if (!in) return Status::NotFound(log_path + ": " + std::strerror(errno));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    check.summary = SummarizeLog(text, format);
    // Nothing read in the format asked for: the format that reads these lines, if one does.
    if (check.summary.points == 0 && check.summary.lines > 0) {
      check.suggestion = GuessLogFormat(text);
      if (check.suggestion && check.suggestion->format == format.format) check.suggestion.reset();
    }
    if (format.format == MetricFormat::kAuto) {
      check.format += check.summary.detected == MetricFormat::kAuto
                          ? " (no line matched a known format)"
                          : fmt::format(" ({})", MetricFormatName(check.summary.detected));
    }
    std::cout << (json ? RenderMetricsCheckJson(check) : RenderMetricsCheckText(check));
    if (!check.objective_present()) {
      std::cerr << fmt::format(
          "slurmsweep metrics: the objective '{}' is not in {}{}: a sweep would rank nothing "
          "(set [objective] metric, or pass --study)\n",
          TerminalSafe(check.objective), TerminalSafe(log_path), check.did_you_mean());
      exit_code = kExitNoResult;
    }
    return Status::OK();
  }

  Status CmdCompare() {
    // Neither given: compare-report.html in the current directory.
    if (html_path.empty() && csv_path.empty()) html_path = "compare-report.html";
    CompareOptions o;
    o.target = compare_target;
    o.version = SLURMSWEEP_VERSION;
    auto c = CollectComparison(compare_paths, o, clock.Now());
    if (!c.ok()) return c.status();
    SWEEP_RETURN_IF_ERROR(WriteComparison(*c, html_path, csv_path));
    if (!html_path.empty()) std::cout << fmt::format("wrote {}\n", html_path);
    if (!csv_path.empty()) std::cout << fmt::format("wrote {}/compare.csv\n", csv_path);
    return Status::OK();
  }

  // A trial is named by its key or a beginning of it ("t-e23a"), so a mistyped name is compared with
  // the keys' beginnings of its length too: 't-e23x' is one edit from 't-e23a4b5c6d7e', not eight.
  static std::string DidYouMeanTrial(std::string_view name, const std::vector<std::string_view>& keys) {
    if (std::string whole = DidYouMean(name, keys); !whole.empty()) return whole;
    std::vector<std::string_view> heads;
    for (std::string_view k : keys) heads.push_back(k.substr(0, name.size()));
    std::string_view best = ClosestWord(name, heads);
    if (best.empty()) return "";
    size_t i = std::find(heads.begin(), heads.end(), best) - heads.begin();
    return fmt::format(" (did you mean '{}'?)", keys[i]);
  }

  // `logs STUDY TRIAL [--follow]`: the trial's current log, read over the study's transport (SSH or
  // local) from the path the store recorded; --follow goes on printing what is appended, moves to
  // the next attempt's log when the trial is retried, and ends once the trial has ended.
  Status CmdLogs() {
    SWEEP_RETURN_IF_ERROR(LoadStudyFile());
    SWEEP_RETURN_IF_ERROR(OpenStore(true));
    auto rec = store->GetStudy(study.name);
    if (!rec.ok()) return rec.status().WithContext("nothing recorded yet for this study; run it first");
    auto trials = store->ListTrials(rec->id);
    if (!trials.ok()) return trials.status();
    // A trial key, a unique beginning of one, or the trial's number (status --json's id).
    std::vector<const store::TrialRecord*> matches;
    std::vector<std::string_view> keys;
    for (const auto& t : *trials) {
      keys.push_back(t.trial_key);
      if (t.trial_key == trial_name || std::to_string(t.id) == trial_name) {
        matches = {&t};
        break;
      }
      if (t.trial_key.starts_with(trial_name)) matches.push_back(&t);
    }
    if (matches.empty()) {
      return Status::NotFound(fmt::format("{}: no trial '{}'{} (see `slurmsweep status {}`)", study.path,
                                          TerminalSafe(trial_name), DidYouMeanTrial(trial_name, keys), study_path));
    }
    if (matches.size() > 1) {
      return Status::InvalidArgument(
          fmt::format("'{}' is the beginning of {} trial keys ({}, {}, ...): give more of it", TerminalSafe(trial_name),
                      matches.size(), matches[0]->trial_key, matches[1]->trial_key));
    }
    store::TrialRecord trial = *matches[0];
    auto where = [&] { return study.cluster.transport == "ssh" ? "on " + study.cluster.host : "on this machine"; };
    // A trial that ended unsubmitted (dropped, skipped, cancelled before its sbatch) never gets a log: --follow
    // would wait on nothing and end silently.
    const bool ended_unsubmitted = trial.log_path.empty() && IsFinalTrialState(trial.state);
    if (trial.log_path.empty() && (!follow || ended_unsubmitted)) {
      return Status::FailedPrecondition(fmt::format("trial {} has no log{}: it is {} (never submitted){}",
                                                    trial.trial_key, ended_unsubmitted ? "" : " yet", trial.state,
                                                    ended_unsubmitted ? "" : "; --follow waits for it"));
    }
    SWEEP_RETURN_IF_ERROR(Connect());
    std::string path;
    uint64_t offset = 0;
    bool ended_seen = false;
    constexpr size_t kChunk = 1 << 20;
    for (;;) {
      if (trial.log_path != path && !trial.log_path.empty()) {
        if (!path.empty()) std::cerr << fmt::format("--- attempt {}: {} ---\n", trial.attempt, trial.log_path);
        path = trial.log_path, offset = 0;
      }
      bool got = false;
      if (!path.empty()) {
        auto chunk = transport->ReadFrom(path, offset, kChunk);
        if (chunk.ok()) {
          got = !chunk->empty();
          offset += chunk->size();
          std::cout << *chunk;
          std::cout.flush();
        } else if (chunk.status().IsNotFound()) {
          if (!follow) {
            return Status::FailedPrecondition(fmt::format(
                "trial {} ({}): its log {} is not there {} yet{}", trial.trial_key, trial.state, TerminalSafe(path),
                where(), IsFinalTrialState(trial.state) ? "" : "; --follow waits for it"));
          }
        } else if (!(follow && chunk.status().IsUnavailable())) {
          return chunk.status().WithContext("reading " + path);
        }
      }
      if (got) continue;  // more may be there already
      if (!follow) return Status::OK();
      // Nothing new: once the trial has ended and its log was read after that, it is complete.
      if (ended_seen) return Status::OK();
      clock.SleepFor(1);
      auto now = store->GetTrial(trial.id);
      if (!now.ok()) return now.status();
      trial = *now;
      ended_seen = IsFinalTrialState(trial.state) && trial.log_path == path;
    }
  }

  Status CmdReport() {
    SWEEP_RETURN_IF_ERROR(LoadStudyFile());
    // Neither given: both, where the run loop writes them ([report] html and csv_dir).
    if (html_path.empty() && csv_path.empty()) html_path = study.report.html, csv_path = study.report.csv_dir;
    SWEEP_RETURN_IF_ERROR(OpenStore(true));
    auto rec = store->GetStudy(study.name);
    if (!rec.ok()) return rec.status().WithContext("nothing recorded yet for this study; run it first");
    // `--csv FILE.csv`, as this command took before metrics.csv existed: trials.csv alone, to that file.
    bool csv_file = csv_path.ends_with(".csv") && !std::filesystem::is_directory(csv_path);
    if (csv_file) {
      auto rows = CollectTrialRows(*store, study, rec->id, clock.Now());
      if (!rows.ok()) return rows.status();
      std::string csv = reports::RenderTrialsCsv(ParamNames(study), *rows);
      // Written beside, then renamed, so a reader never sees half a report.
      SWEEP_RETURN_IF_ERROR(WriteFileAtomically(csv_path, csv));
      std::cout << fmt::format("wrote {} ({} trials)\n", csv_path, rows->size());
    }
    std::string csv_dir = csv_file ? "" : csv_path;
    if (html_path.empty() && csv_dir.empty()) return Status::OK();
    SWEEP_RETURN_IF_ERROR(
        WriteReports(*store, study, rec->id, html_path, csv_dir, clock.Now(), ReportOptionsFor(study)));
    if (!html_path.empty()) std::cout << fmt::format("wrote {}\n", html_path);
    if (!csv_dir.empty()) {
      std::cout << fmt::format("wrote {0}/trials.csv, {0}/metrics.csv and {0}/importance.csv\n", csv_dir);
    }
    return Status::OK();
  }
};

struct Command {
  const char* name;
  const char* help;
  Status (App::*run)();
};

constexpr Command kCommands[] = {
    {"run",
     "Submit the study's trials, track them and ingest their metrics until all have ended. "
     "Run it again to resume: trials that already have a job are never submitted twice.",
     &App::CmdRun},
    {"status", "Show every trial's state, job and latest metrics from the study database.", &App::CmdStatus},
    {"cancel", "Cancel every queued or running job of the study (one scancel) and the trials not yet submitted.",
     &App::CmdCancel},
    {"plan",
     "Dry run, nothing is submitted: list the trials and which constraints drop; with [job.vars] model, "
     "predict memory per GPU for every configuration (Megatron-LM presets) and show which are dropped by a "
     "parallelism rule or a predicted OOM.",
     &App::CmdPlan},
    {"report",
     "Write the HTML report (recommendation, speedup over the baseline, ranking, charts, cost) and/or "
     "trials.csv, metrics.csv and importance.csv; with neither option, both, to the study's [report] html and csv_dir.",
     &App::CmdReport},
    {"compare",
     "Studies side by side (the same model on other GPUs, or after a framework upgrade): the best "
     "configuration of each, its throughput, time to a common target and cost, and the gain over the first "
     "study split into throughput x convergence = time to target.",
     &App::CmdCompare},
    {"logs",
     "Show a trial's log (TRIAL: its key, a unique beginning of it, or its id), read over the study's transport "
     "(SSH or local); --follow prints what is appended until the trial ends.",
     &App::CmdLogs},
    {"metrics",
     "Check a training log before a sweep: the metrics slurmsweep would store (points, steps), the time "
     "axis and the key that gives it, malformed lines, and whether the objective is there (exit 5 if not).",
     &App::CmdMetrics},
};

}  // namespace
}  // namespace sweep

int main(int argc, char** argv) {
  using namespace sweep;
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
  for (const Command& c : kCommands) {
    CLI::App* sub = cli.add_subcommand(c.name, c.help);
    if (std::string_view(c.name) == "metrics") {
      sub->add_option("logfile", app.log_path, "Training log")->required()->check(CLI::ExistingFile);
      sub->add_option("--study", app.study_path, "Take metric_format and the objective from this study file")
          ->type_name("STUDY.toml")
          ->check(CLI::ExistingFile);
      sub->add_option("--format", app.format_name,
                      "Log format: megatron (default), jsonl, hf, lightning (nemo), torchtitan, deepspeed, auto; "
                      "overrides --study's")
          ->type_name("FORMAT");
      sub->add_flag("--json", app.json, "Print JSON (schema version 1, see README)");
    } else if (std::string_view(c.name) == "compare") {
      sub->add_option("studies", app.compare_paths, "Study files (TOML); the first is the reference")
          ->required()
          ->expected(2, 64)
          ->check(CLI::ExistingFile);
      sub->add_option("--html", app.html_path, "Write the comparison as HTML to FILE (default compare-report.html)")
          ->type_name("FILE");
      sub->add_option("--csv", app.csv_path, "Write compare.csv into DIR")->type_name("DIR");
      sub->add_option("--target", app.compare_target,
                      "Objective value to measure time to (default: the worst of the studies' best final values)")
          ->type_name("VALUE");
    } else {
      sub->add_option("study", app.study_path, "Study file (TOML)")->required()->check(CLI::ExistingFile);
    }
    if (std::string_view(c.name) == "logs") {
      sub->add_option("trial", app.trial_name, "Trial key (t-...), a unique beginning of it, or its id")->required();
      sub->add_flag("--follow,-f", app.follow,
                    "Keep printing what is appended (the next attempt's log after a retry) until the trial ends");
    }
    if (std::string_view(c.name) == "run") {
      sub->add_option("--max-ticks", app.max_ticks, "Stop after N polling rounds (0: until every trial ends)")
          ->check(CLI::NonNegativeNumber);
      sub->add_option("--accept-host-key", app.accept_host_key,
                      "Record the cluster's host key if it is unknown and has exactly this fingerprint "
                      "(SHA256:..., verified out of band); a changed key is always refused");
      sub->add_flag("--submit-predicted-oom", app.submit_predicted_oom,
                    "Also submit configurations the memory planner predicts will not fit (studies with a model)");
      sub->add_option("--resubmit", app.resubmit,
                      fmt::format("Before running, start over the trials that ended in these states (comma-separated: "
                                  "{}): a fresh attempt, metrics dropped, earlier run time kept in the cost",
                                  fmt::join(ResubmittableTrialStates(), ", ")))
          ->type_name("STATES");
      sub->add_option("--repeat-top", app.repeat_top,
                      "Before running, add seeds to the K best configurations so far (by their mean over seeds), "
                      "up to --repeats in all; the trials that ran stay")
          ->check(CLI::PositiveNumber)
          ->type_name("K");
      sub->add_option("--repeats", app.repeat_count,
                      "With --repeat-top: seeds per configuration in all (default: twice [search] repeats)")
          ->check(CLI::PositiveNumber)
          ->type_name("N");
      sub->add_flag("--detach", app.detach,
                    "Run in the background: log to DATABASE.log, pid in DATABASE.pid; `status` works meanwhile");
    }
    if (std::string_view(c.name) == "run" || std::string_view(c.name) == "status" ||
        std::string_view(c.name) == "plan") {
      sub->add_flag("--json", app.json,
                    std::string_view(c.name) == "run"
                        ? "At the end, print the run's summary as JSON on stdout (schema version 1, see README); "
                          "the log and progress go to stderr"
                        : "Print JSON (schema version 1, see README)");
    }
    if (std::string_view(c.name) == "status") {
      sub->add_flag(
             "--watch{5}", app.watch_s,
             "Refresh every 5 s (--watch=SECONDS, whole seconds) until every trial has ended: the whole status on a "
             "terminal, else a progress line (with --json a JSON line) whenever the counts or the best "
             "trial change")
          ->check(CLI::PositiveNumber);
    }
    if (std::string_view(c.name) == "cancel") {
      sub->add_option("--wait", app.cancel_wait_s,
                      "Wait up to SECONDS for the jobs to end and record their end and last log lines (0: do not "
                      "wait; a run of the study going on records them itself)")
          ->type_name("SECONDS")
          ->default_val(30);
    }
    if (std::string_view(c.name) == "report") {
      sub->add_option("--html", app.html_path, "Write the self-contained HTML report to FILE")->type_name("FILE");
      sub->add_option("--csv", app.csv_path,
                      "Write trials.csv, metrics.csv and importance.csv into DIR (a path ending in .csv: trials.csv "
                      "alone, to it)")
          ->type_name("DIR");
    }
    sub->callback([&chosen, &c] { chosen = &c; });
  }
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return cli.exit(e) == 0 ? 0 : 2;
  }
  Status st = (app.*(chosen->run))();
  if (!st.ok()) {
    std::cerr << "slurmsweep " << chosen->name << ": " << st.ToString() << "\n";
    return ExitCode(st);
  }
  return app.exit_code;
}
