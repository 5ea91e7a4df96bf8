// `slurmsweep run`: submit, track and ingest until every trial has ended (README: how it works),
// in the foreground or detached, with the live progress, notifications and the final summary.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <set>

#include "base/private_file.h"
#include "base/text.h"
#include "base/trial_state.h"
#include "cli/status_view.h"
#include "cli/commands.h"
#include "run/cancel_request.h"
#include "run/controller_job.h"
#include "run/repeat_top.h"
#include "run/notify.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "results/study_trials.h"
#include "run/run_lock.h"
#include "run/run_outcome.h"
#include "run/runner.h"
#include "run/lease.h"

namespace sweep::cli {
namespace {

Result<std::set<std::string>> ResubmitStates(const RunFlags& flags) {
  std::set<std::string> states;
  std::string_view rest = flags.resubmit;
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

// After SIGINT/SIGTERM: what goes on without this run, and how to resume or cancel it. The
// database is as a crash would leave it, which the next `run` picks up (README: resuming).
Status Interrupted(App& app, int64_t study_id, int sig) {
  app.exit_code = 128 + sig;
  app.out() << fmt::format("\nslurmsweep run: stopped by {}; this run ends and releases its lock\n",
                           sig == SIGINT    ? "SIGINT"
                           : sig == SIGTERM ? "SIGTERM"
                                            : "a signal");
  if (study_id == 0) {
    app.out() << "nothing was submitted yet\n";
    return Status::OK();
  }
  auto trials = app.store->ListTrials(study_id);
  if (!trials.ok()) return trials.status();
  app.out() << UntrackedTrials(app, *trials);
  return Status::OK();
}

// Goes on in the background: the parent prints where to look and exits; the child owns the
// lock, writes DATABASE.pid and logs to DATABASE.log.
Status Detach(App& app, run::RunLock& lock) {
  std::string log_path = app.study.database + ".log";
  std::string pid_path = app.study.database + ".pid";
  // Both private (the log carries the study's values) and never through a planted link.
  auto log = OpenPrivateFile(log_path, PrivateOpen::kAppend, 0600);
  if (!log.ok()) return log.status();
  auto pid_file = OpenPrivateFile(pid_path, PrivateOpen::kReadWrite, 0600);
  if (!pid_file.ok()) return pid_file.status();
  int log_fd = log->release();
  std::cout.flush();
  pid_t pid = ::fork();
  if (pid < 0) return Status::Internal(std::string("fork: ") + std::strerror(errno));
  if (pid > 0) {
    std::cout << fmt::format(
        "slurmsweep: running in the background as pid {}\n  log: {}\n  pid file: {}\n"
        "  watch it with: slurmsweep status {}\n",
        pid, log_path, pid_path, app.study_path);
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
  std::string pid_text = std::to_string(::getpid()) + "\n";
  if (::ftruncate(pid_file->get(), 0) != 0) return Status::IOError(pid_path + ": " + std::strerror(errno));
  return WriteAll(pid_file->get(), pid_text, pid_path);
}

}  // namespace

void AddRunFlags(CLI::App* sub, App& app, RunFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_option("--max-ticks", flags.max_ticks, "Stop after N polling rounds (0: until every trial ends)")
      ->check(CLI::NonNegativeNumber);
  sub->add_option("--accept-host-key", app.accept_host_key,
                  "Record the cluster's host key if it is unknown and has exactly this fingerprint "
                  "(SHA256:..., verified out of band); a changed key is always refused");
  sub->add_flag("--submit-predicted-oom", flags.submit_predicted_oom,
                "Also submit configurations the memory planner predicts will not fit (studies with a model)");
  sub->add_option("--resubmit", flags.resubmit,
                  fmt::format("Before running, start over the trials that ended in these states (comma-separated: "
                              "{}): a fresh attempt, metrics dropped, earlier run time kept in the cost",
                              fmt::join(ResubmittableTrialStates(), ", ")))
      ->type_name("STATES");
  sub->add_option("--repeat-top", flags.repeat_top,
                  "Before running, add seeds to the K best configurations so far (by their mean over seeds), "
                  "up to --repeats in all; the trials that ran stay")
      ->check(CLI::PositiveNumber)
      ->type_name("K");
  sub->add_option("--repeats", flags.repeat_count,
                  "With --repeat-top: seeds per configuration in all (default: twice [search] repeats)")
      ->check(CLI::PositiveNumber)
      ->type_name("N");
  sub->add_flag("--detach", flags.detach,
                "Run in the background: log to DATABASE.log, pid in DATABASE.pid; `status` works meanwhile");
  sub->add_flag("--as-job", flags.as_job,
                "Run the controller as a Slurm job of its own (partition and account from [cluster]; Slurm's "
                "commands run locally inside): before its time limit it submits its successor and ends; "
                "see docs/sites.md");
  sub->add_option("--job-time", flags.job_time, "With --as-job: each controller job's time limit (Slurm syntax)");
  sub->add_option("--job-signal", flags.job_signal_s,
                  "With --as-job: seconds before the limit when the job hands over to its successor")
      ->check(CLI::PositiveNumber);
  sub->add_flag("--json", flags.json,
                "At the end, print the run's summary as JSON on stdout (schema version 1, see README); "
                "the log and progress go to stderr");
}

Status CmdRun(App& app, RunFlags& flags) {
  SWEEP_RETURN_IF_ERROR(app.LoadStudyFile());
  run::ControllerJobOptions job_options{flags.job_time, flags.job_signal_s};
  bool controller_job = flags.as_job && run::InsideControllerJob();
  if (flags.as_job && !controller_job) {
    auto id = run::SubmitControllerJob(app.study, app.study_path, job_options);
    if (!id.ok()) return id.status();
    app.out() << fmt::format(
        "controller: Slurm job {} (time {}, hands over to a successor {} s before its limit); its log: "
        "{}.controller-{}.log; `slurmsweep status {}` shows the trials\n",
        *id, flags.job_time, flags.job_signal_s, app.study.database, *id, app.study_path);
    return Status::OK();
  }
  // Inside the controller job Slurm's commands are at hand, whatever the study uses from elsewhere.
  if (controller_job) app.study.cluster.transport = "local";
  auto resubmit_states = ResubmitStates(flags);
  if (!resubmit_states.ok()) return resubmit_states.status();
  auto lock = run::RunLock::Acquire(app.study.database + ".lock");
  if (!lock.ok()) return lock.status();
  // The last `cancel` before this run: one after it (even before a detached run's child has
  // connected) cancels the study and ends the run (run/cancel_request.h).
  SWEEP_RETURN_IF_ERROR(app.OpenStore(false));
  auto cancel_seen = run::LastCancelRequest(*app.store, app.study.name);
  if (!cancel_seen.ok()) return cancel_seen.status();
  if (flags.detach) {
    // Refused in the foreground, where the user reads it, if a run on another host holds the study.
    SWEEP_RETURN_IF_ERROR(run::Lease::Check(*app.store, run::ControllerIdentity::OfThisProcess(), app.clock.Now(),
                                            app.study.lease_timeout_s));
    app.store.reset();
    SWEEP_RETURN_IF_ERROR(Detach(app, *lock));
  }
  app.store.reset();
  // Opened after the fork: neither a libssh session nor an SQLite handle survives one.
  // Ctrl-C or a SIGTERM (a detached run's kill) ends the tick in progress, then `run` says what
  // goes on without it: nothing is cancelled.
  run::InterruptSignal interrupt;
  run::InterruptibleClock interruptible(app.clock, interrupt);
  SWEEP_RETURN_IF_ERROR(app.OpenStore(false));
  if (!app.store->JournalNote().empty()) std::cerr << "note: " << app.store->JournalNote() << "\n";
  // One controller per study on every host (lease.h); the flock above is only this host's.
  std::string took_over;
  auto lease = run::Lease::Take(*app.store, run::ControllerIdentity::OfThisProcess(), app.clock.Now(),
                                app.study.lease_timeout_s, &took_over);
  if (!lease.ok()) return lease.status();
  if (!took_over.empty()) {
    std::string message = fmt::format(
        "took the study over from a run that stopped renewing its lease ({}; [study] lease_timeout_s {:.0f} s)",
        took_over, app.study.lease_timeout_s);
    std::cerr << "slurmsweep run: " << message << "\n";
    if (auto rec = app.store->GetStudy(app.study.name); rec.ok())
      (void)app.store->AddEvent(rec->id, std::nullopt, app.clock.Now(), "takeover", message);
  }
  SWEEP_RETURN_IF_ERROR(app.Connect());
  if (flags.json) app.text = &std::cerr;
  // On a terminal one progress block is redrawn in place under the log lines; on a pipe (or
  // --detach's log) a plain line each time the counts or the best trial change.
  bool tty = !flags.json && ::isatty(STDOUT_FILENO) && app.stdout_guard;
  LiveDisplay display(app.out(), tty ? app.stdout_guard->raw() : nullptr, TerminalWidth());
  ProgressOptions progress_options = ProgressOptionsFor(app.study);
  run::Runner runner(app.study, *app.store, *app.transport, interruptible, display.log());
  runner.set_submit_predicted_oom(flags.submit_predicted_oom);
  runner.set_cancel_seen(*cancel_seen);
  runner.set_interrupted([&interrupt] { return interrupt.received() != 0; });
  runner.set_heartbeat([&] { return lease->Renew(app.clock.Now()); });
  runner.set_tick_lines(!tty);
  // [notify]: failures are logged into the run's log and events, never returned.
  run::Notifier notifier(app.study, app.clock, [&](const std::string& kind, const std::string& message) {
    display.log() << fmt::format("[{}] {}\n", FormatUtc(app.clock.Now()), message);
    if (runner.study_id() != 0)
      (void)app.store->AddEvent(runner.study_id(), std::nullopt, app.clock.Now(), kind, message);
  });
  if (auto rec = app.store->GetStudy(app.study.name); rec.ok()) {
    auto before = app.store->ListTrials(rec->id);
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
  const std::vector<std::string> param_names = results::ParamNames(app.study);  // read once, not every tick
  runner.set_on_tick([&](const run::TickReport& report) {
    double now = app.clock.Now();
    if (!report.done && report.ended == 0 && now - last_view_at < 10 * last_view_cost) return;
    // The tick's own trials: the store is not listed and the space not expanded again.
    auto view = report.trials ? ReadStudyView(*app.store, app.study, runner.study_id(), now, *report.trials,
                                              param_names, report.left_out)
                              : ReadStudyView(*app.store, app.study, runner.study_id(), now);
    last_view_at = now, last_view_cost = app.clock.Now() - now;
    if (!view.ok()) return;  // the next tick shows it; the run goes on
    display.Show(ComputeProgress(view->progress, progress_options, now), progress_options,
                 fmt::format("[{}] ", FormatUtc(now)));
    std::vector<run::Notifier::TrialFacts> facts;
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
  } pid_file{flags.detach ? app.study.database + ".pid" : ""};
  if (!resubmit_states->empty()) {
    auto n = runner.Resubmit(*resubmit_states);
    if (!n.ok()) return n.status();
    app.out() << fmt::format("{} trial(s) that ended {} start over\n", *n, flags.resubmit);
  }
  if (flags.repeat_top > 0 || flags.repeat_count > 0) {
    auto added = run::RepeatTop(*app.store, app.study, flags.repeat_top, flags.repeat_count, app.clock.Now());
    if (!added.ok()) return added.status();
    app.out() << *added;
  }
  Status run_status = runner.Run(flags.max_ticks);
  display.Finish();
  // Notifications still running get their timeout to finish, whatever happens next.
  struct DrainAtExit {
    run::Notifier& n;
    ~DrainAtExit() { n.Drain(); }
  } drain{notifier};
  if (int sig = interrupt.received(); sig == SIGUSR1 && controller_job) {
    // Slurm's early warning: the successor waits for this job to end (afterany), then resumes the run.
    const char* self = std::getenv("SLURM_JOB_ID");
    auto next = run::SubmitControllerJob(app.study, app.study_path, job_options, self ? self : "");
    if (!next.ok()) return next.status().WithContext("submitting the next controller job");
    app.out() << fmt::format("\ncontroller job {} hands over to job {}\n", self ? self : "?", *next);
    return Status::OK();
  }
  if (int sig = interrupt.received()) return Interrupted(app, runner.study_id(), sig);
  SWEEP_RETURN_IF_ERROR(run_status);
  const auto& s = runner.slurm_stats();
  const auto& c = runner.cluster_calls();
  app.out() << fmt::format(
      "slurm commands: {} sbatch, {} squeue, {} sacct, {} scancel; cluster calls: {} commands, {} file writes, {} "
      "log reads\n",
      s.sbatch, s.squeue, s.sacct, s.scancel, c.commands, c.writes, c.reads);
  SWEEP_RETURN_IF_ERROR(PrintStatus(app, runner.study_id()));
  auto trials = app.store->ListTrials(runner.study_id());
  if (!trials.ok()) return trials.status();
  std::vector<std::string> states;
  for (const auto& t : *trials) states.push_back(t.state);
  app.out() << run::ResubmitHint(states, app.study_path);
  auto open = std::count_if(trials->begin(), trials->end(),
                            [](const store::TrialRecord& t) { return !IsFinalTrialState(t.state); });
  if (flags.max_ticks > 0 && open > 0) {
    app.out() << fmt::format(
        "stopped after --max-ticks {} with {} trial(s) not ended; `slurmsweep run {}` goes "
        "on tracking them\n",
        flags.max_ticks, open, app.study_path);
  }
  if (open == 0) {
    auto rows = results::CollectTrialRows(*app.store, app.study, runner.study_id(), app.clock.Now(),
                                          app.study.objective.metric);
    if (!rows.ok()) return rows.status();
    std::string why = run::NoResultReason(*rows, app.study.objective.metric);
    if (!why.empty()) {
      std::cerr << fmt::format("slurmsweep run: every trial has ended, but {}: there is no result (exit {})\n", why,
                               kExitNoResult);
      app.exit_code = kExitNoResult;
    }
  }
  if (flags.json || (open == 0 && app.study.notify)) {
    double now = app.clock.Now();
    auto view = ReadStudyView(*app.store, app.study, runner.study_id(), now);
    if (!view.ok()) return view.status();
    Progress progress = ComputeProgress(view->progress, progress_options, now);
    if (open == 0) {
      std::string line = RenderProgressLine(progress, progress_options);  // "progress: ...\n"
      line = line.substr(line.find(' ') + 1);
      line.pop_back();
      notifier.Finished(fmt::format("study {} finished: {}", app.study.name, line),
                        {{"progress", ProgressJson(progress)},
                         {"best", BestJson(progress, progress_options)},
                         {"exit_code", app.exit_code}});
    }
    nlohmann::json commands = {{"sbatch", s.sbatch}, {"squeue", s.squeue}, {"sacct", s.sacct}, {"scancel", s.scancel}};
    if (flags.json) std::cout << DumpJson(RunSummaryJson(app.study, *view, progress, app.exit_code, commands));
  }
  return Status::OK();
}

}  // namespace sweep::cli
