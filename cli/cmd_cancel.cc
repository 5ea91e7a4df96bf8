// `slurmsweep cancel`: every queued or running job of the study in one scancel, the trials not yet
// submitted, and (unless a run of the study records them itself) the jobs' ends. A run going on,
// even one still starting in the background, is asked to cancel too and submits nothing more
// (run/cancel_request.h); `--outside-space` cancels only the trials an earlier version of the file
// made that its [space] no longer does (run/outside_space.h).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <set>

#include "cli/commands.h"
#include "run/cancel_request.h"
#include "run/lease.h"
#include "run/outside_space.h"
#include "run/run_lock.h"
#include "run/runner.h"

namespace sweep::cli {

void AddCancelFlags(CLI::App* sub, App& app, CancelFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_option("--wait", flags.wait_s,
                  "Wait up to SECONDS for the jobs to end and record their end and last log lines, or for a run "
                  "going on to answer (0: do not wait)")
      ->type_name("SECONDS")
      ->default_val(30);
  sub->add_flag("--outside-space", flags.outside_space,
                "Cancel only the trials an earlier version of the study file made that its [space] no longer "
                "does (plan and run say how many still hold slots); the study's own trials go on");
}

namespace {

// The keys of the trials `--outside-space` cancels: stored, outside the file's space, not ended.
Result<std::set<std::string>> OutsideKeys(App& app) {
  auto rec = app.store->GetStudy(app.study.name);
  if (!rec.ok()) return rec.status();
  auto stored = app.store->ListTrials(rec->id);
  if (!stored.ok()) return stored.status();
  auto outside = run::TrialsOutsideSpace(app.study, *stored);
  if (!outside.ok()) return outside.status().WithContext("finding the trials outside the space");
  std::set<std::string> keys;
  for (const auto& t : run::StillOpen(*outside)) keys.insert(t.trial_key);
  return keys;
}

}  // namespace

Status CmdCancel(App& app, CancelFlags& flags) {
  SWEEP_RETURN_IF_ERROR(app.LoadStudyFile(flags.outside_space ? App::Space::kExpanded : App::Space::kNotNeeded));
  // A run going on on this host holds the lock: maybe one still starting (run --detach), which has
  // not recorded its trials yet. Without one, this command holds the lock while it cancels, so no
  // run starts meanwhile.
  std::string lock_path = app.study.database + ".lock";
  std::optional<std::string> holder = run::RunLock::Holder(lock_path);
  std::optional<run::RunLock> lock;
  if (!holder) {
    auto taken = run::RunLock::Acquire(lock_path);
    if (taken.ok()) lock.emplace(std::move(*taken));
    else holder = run::RunLock::Holder(lock_path);  // one started in between
  }
  // Nothing was ever run nor is starting: say so rather than create an empty database that
  // `status` then shows.
  {
    SWEEP_RETURN_IF_ERROR(app.OpenStore(true));
    // Or a run on another host that shares the study's directory: its lease stands (run/lease.h).
    if (!holder) {
      run::RunHolder remote = run::FindRunHolder(*app.store, std::nullopt, app.clock.Now(), app.study.lease_timeout_s);
      if (remote.going_on) holder = remote.host.empty() ? remote.pid : remote.pid + " on host " + remote.host;
    }
    auto rec = app.store->GetStudy(app.study.name);
    if (!rec.ok() && !holder) return rec.status().WithContext("nothing to cancel: this study was never run");
    app.store.reset();
  }
  SWEEP_RETURN_IF_ERROR(app.OpenStore(false));
  SWEEP_RETURN_IF_ERROR(app.Connect());
  run::Runner runner(app.study, *app.store, *app.transport, app.clock, std::cout);
  Result<int> n = 0;
  std::optional<int64_t> request;
  if (flags.outside_space) {
    auto keys = OutsideKeys(app);
    if (!keys.ok()) return keys.status();
    n = runner.CancelOnly(*keys);
    if (!n.ok()) return n.status();
    std::cout << fmt::format("cancelled {} trial(s) outside the space of {}\n", *n, app.study.path);
  } else {
    n = runner.CancelAll();  // records the study for a run still starting
    if (!n.ok()) return n.status();
    if (holder) {
      // Recorded after the trials this command cancels: a run that inserts or proposes more sees it
      // before it submits them.
      auto id = run::RequestCancel(*app.store, runner.study_id(), app.clock.Now());
      if (!id.ok()) return id.status();
      request = *id;
    }
    std::cout << fmt::format("cancelled {} trial(s){}\n", *n, holder ? " the database knows so far" : "");
  }
  if (flags.wait_s <= 0) return Status::OK();
  if (holder) {
    // The lock names its holder's pid, "?" while a detached run's child is rewriting it.
    std::string who = *holder == "?" ? "" : fmt::format(" (pid {})", *holder);
    if (!request) {
      std::cout << fmt::format("a run of this study is going on{}: it records the jobs' ends at its next tick\n", who);
      return Status::OK();
    }
    std::cout << fmt::format(
        "a run of this study is going on{}: asked it to cancel what it has and submit nothing more; waiting "
        "up to {:g} s for its answer\n",
        who, flags.wait_s);
    std::cout.flush();
    auto answer = run::AwaitCancelAnswer(*app.store, runner.study_id(), *request, app.clock, flags.wait_s);
    if (!answer.ok()) return answer.status();
    if (*answer) {
      std::cout << **answer << "\n";
    } else {
      std::cout << fmt::format(
          "no answer within {:g} s: the run cancels before it submits anything more (`slurmsweep status {}` shows "
          "it)\n",
          flags.wait_s, app.study_path);
    }
    return Status::OK();
  }
  // Record the ends now, so that `status` and the report say cancelled.
  auto open = runner.AwaitEnds(flags.wait_s);
  if (!open.ok()) return open.status().WithContext("recording the cancelled jobs' ends");
  if (*open > 0) {
    std::cout << fmt::format("{} job(s) not ended after {}s; the next `slurmsweep run {}` records their end\n", *open,
                             flags.wait_s, app.study_path);
  }
  return Status::OK();
}

}  // namespace sweep::cli
