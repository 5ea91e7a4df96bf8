// `slurmsweep status`: every trial's state, job and latest metrics from the study database, once,
// as JSON, or watched; and the status table `run` prints at its end.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <utility>

#include "base/final_objective.h"
#include "base/terminal.h"
#include "base/text.h"
#include "base/trial_state.h"
#include "cli/status_view.h"
#include "cli/commands.h"
#include "run/controller_job.h"
#include "results/configurations.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "results/study_trials.h"
#include "run/run_lock.h"
#include "run/lease.h"

namespace sweep::cli {
namespace {

// Where to look when a trial failed: its last attempt's log on the cluster.
// A large study's first kStatusTopRows of them, and how many more (`all`: every one).
Status PrintFailedLogs(App& app, int64_t study_id, bool all) {
  auto trials = app.store->ListTrials(study_id);
  if (!trials.ok()) return trials.status();
  bool first = true;
  size_t listed = 0, more = 0;
  for (const auto& t : *trials) {
    const TrialStateInfo* info = FindTrialState(t.state);
    if (!info || !info->final || info->outcome != TrialOutcome::kFailed || t.log_path.empty()) continue;
    if (!all && trials->size() > kStatusAllRows && listed >= kStatusTopRows) {
      ++more;
      continue;
    }
    ++listed;
    if (std::exchange(first, false)) {
      app.out() << fmt::format("logs of failed trials (on {}):\n",
                               app.study.cluster.remote() ? app.study.cluster.host : "this machine");
    }
    app.out() << fmt::format("  {:<16} {:<13} {}\n", t.trial_key, t.state, TerminalSafe(t.log_path));
  }
  if (more > 0) app.out() << fmt::format("  ... and {} more failed trials (status --all lists them)\n", more);
  return Status::OK();
}

// Whether a run is tracking the study now; a detached run killed with -9 leaves its pid file.
Status PrintRunGoingOn(App& app, int64_t study_id) {
  std::string pid_file = app.study.database + ".pid";
  if (std::string job = run::ControllerJobOf(app.study); !job.empty()) {
    std::cout << fmt::format(
        "controller: Slurm job {} (run --as-job; squeue -j {} shows whether it is queued or "
        "running)\n",
        job, job);
  }
  run::RunHolder holder = run::FindRunHolder(*app.store, run::RunLock::Holder(app.study.database + ".lock"),
                                             app.clock.Now(), app.study.lease_timeout_s);
  if (holder.going_on && holder.heartbeat_age_s) {
    std::cout << fmt::format("a run of this study is going on on host {} (pid {}), heartbeat {:.0f} s ago\n",
                             TerminalSafe(holder.host), holder.pid, *holder.heartbeat_age_s);
  } else if (holder.going_on) {
    std::cout << fmt::format("a run of this study is going on (pid {})\n", holder.pid);
  } else {
    std::cout << "no run of this study is going on";
    if (holder.stale) {
      std::cout << fmt::format(
          " (the last one, on host {} pid {}, stopped its heartbeat {:.0f} s ago; the next run "
          "takes the study over)",
          TerminalSafe(holder.host), holder.pid, *holder.heartbeat_age_s);
    }
    if (std::filesystem::exists(pid_file)) {
      std::cout << fmt::format("; removed {}, left by a detached run that was killed", pid_file);
      std::error_code ec;
      std::filesystem::remove(pid_file, ec);
    }
    std::cout << "\n";
    auto trials = app.store->ListTrials(study_id);
    if (!trials.ok()) return trials.status();
    std::cout << UntrackedTrials(app, *trials);
  }
  return Status::OK();
}

// `status --watch`: on a terminal the whole status, redrawn every watch_s seconds; elsewhere one
// progress line (with --json, one JSON document per line) whenever the counts or the best trial
// change. Ends once every trial has ended; Ctrl-C ends it before.
Status WatchStatus(App& app, const StatusFlags& flags, int64_t study_id) {
  bool tty = !flags.json && ::isatty(STDOUT_FILENO) && app.stdout_guard;
  ProgressOptions options = ProgressOptionsFor(app.study);
  LiveDisplay display(std::cout, nullptr, TerminalWidth());
  std::string last_key;
  for (;;) {
    double now = app.clock.Now();
    auto view = ReadStudyView(*app.store, app.study, study_id, now);
    if (!view.ok()) return view.status();
    Progress progress = ComputeProgress(view->progress, options, now);
    if (tty) {
      // Home and clear: the cursor movement goes around the guard, the text through it.
      std::string home = "\x1b[H\x1b[2J";
      std::cout.flush();
      app.stdout_guard->raw()->sputn(home.data(), static_cast<std::streamsize>(home.size()));
      std::cout << fmt::format("every {}s, {}  (Ctrl-C ends)\n", flags.watch_s, FormatUtc(now));
      SWEEP_RETURN_IF_ERROR(PrintStatus(app, study_id, &*view, flags.all));
      SWEEP_RETURN_IF_ERROR(PrintRunGoingOn(app, study_id));
      std::cout.flush();
    } else if (flags.json) {
      std::string key = ProgressChangeKey(progress);
      if (key != std::exchange(last_key, key)) {
        run::RunHolder holder = run::FindRunHolder(*app.store, run::RunLock::Holder(app.study.database + ".lock"), now,
                                                   app.study.lease_timeout_s);
        std::cout << StatusJson(app.study, *view, progress, holder, run::ControllerJobOf(app.study))
                         .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                  << "\n";
        std::cout.flush();
      }
    } else {
      display.Show(progress, options, fmt::format("[{}] ", FormatUtc(now)));
    }
    if (progress.running + progress.queued == 0) return Status::OK();
    app.clock.SleepFor(flags.watch_s);
  }
}

}  // namespace

Status PrintStatus(App& app, int64_t study_id, const StudyView* view, bool all) {
  // The objective's final value (base/final_objective.h, as the report ranks), so a misspelt
  // metric shows as '-' everywhere, not as the loss.
  const std::string& objective = app.study.objective.metric;
  std::optional<StudyView> read;
  if (!view) {
    auto v = ReadStudyView(*app.store, app.study, study_id, app.clock.Now());
    if (!v.ok()) return v.status();
    read = std::move(*v);
    view = &*read;
  }
  const std::vector<reports::TrialRow>* rows = &view->rows;
  int left_out = view->left_out;
  app.out() << RenderStatusTable(*rows, results::ParamNames(app.study), objective, app.study.objective.minimize, all);
  const reports::TrialRow* logging = nullptr;  // a trial that logged metrics
  bool any_objective = false;
  for (const auto& r : *rows) {
    any_objective = any_objective || TrialObjective(r).has_value();
    if (r.steps > 0 && !logging) logging = &r;
  }
  if (auto configs = results::RankStudyConfigurations(app.study, *rows))
    app.out() << results::RenderConfigurationsText(*configs, all ? configs->groups.size() : kStatusTopRows);
  ProgressOptions options = ProgressOptionsFor(app.study);
  app.out() << RenderProgressBlock(ComputeProgress(view->progress, options, app.clock.Now()), options);
  if (left_out > 0) {
    app.out() << fmt::format(
        "({} trial(s) of an earlier version of {}, whose values are no longer in [space], are "
        "left out here and in the reports)\n",
        left_out, app.study.path);
  }
  if (logging && !any_objective) {
    auto summary = app.store->Summary(logging->trial_id);
    if (!summary.ok()) return summary.status();
    std::set<std::string> logged;
    for (const auto& m : summary->metrics) logged.insert(m.name);
    std::vector<std::string_view> known(logged.begin(), logged.end());
    app.out() << fmt::format("warning: no trial has logged the objective metric '{}'{}; the logs have: {}\n", objective,
                             DidYouMean(objective, known), fmt::join(logged, ", "));
  }
  return PrintFailedLogs(app, study_id, all);
}

std::string UntrackedTrials(const App& app, const std::vector<store::TrialRecord>& trials) {
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
      live, submitting, unsubmitted, app.study_path, app.study_path);
}

void AddStatusFlags(CLI::App* sub, App& app, StatusFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_flag("--json", flags.json, "Print JSON (schema version 1, see README): every trial, at any size");
  sub->add_flag("--all", flags.all,
                fmt::format("List every trial (a study of more than {} lists its {} best and counts the rest)",
                            kStatusAllRows, kStatusTopRows));
  sub->add_flag("--watch{5}", flags.watch_s,
                "Refresh every 5 s (--watch=SECONDS, whole seconds) until every trial has ended: the whole status on a "
                "terminal, else a progress line (with --json a JSON line) whenever the counts or the best "
                "trial change")
      ->check(CLI::PositiveNumber);
}

Status CmdStatus(App& app, StatusFlags& flags) {
  SWEEP_RETURN_IF_ERROR(app.LoadStudyFile());
  SWEEP_RETURN_IF_ERROR(app.OpenStore(true));
  auto rec = app.store->GetStudy(app.study.name);
  if (!rec.ok()) return rec.status().WithContext("nothing recorded yet for this study; run it first");
  if (flags.watch_s > 0) return WatchStatus(app, flags, rec->id);
  if (flags.json) {
    auto view = ReadStudyView(*app.store, app.study, rec->id, app.clock.Now());
    if (!view.ok()) return view.status();
    run::RunHolder holder = run::FindRunHolder(*app.store, run::RunLock::Holder(app.study.database + ".lock"),
                                               app.clock.Now(), app.study.lease_timeout_s);
    std::cout << DumpJson(StatusJson(app.study, *view,
                                     ComputeProgress(view->progress, ProgressOptionsFor(app.study), app.clock.Now()),
                                     holder, run::ControllerJobOf(app.study)));
    return Status::OK();
  }
  SWEEP_RETURN_IF_ERROR(PrintStatus(app, rec->id, nullptr, flags.all));
  return PrintRunGoingOn(app, rec->id);
}

}  // namespace sweep::cli
