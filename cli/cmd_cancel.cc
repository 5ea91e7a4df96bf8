// `slurmsweep cancel`: every queued or running job of the study in one scancel, the trials not yet
// submitted, and (unless a run of the study records them itself) the jobs' ends.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/commands.h"
#include "run/run_lock.h"
#include "run/runner.h"

namespace sweep::cli {

void AddCancelFlags(CLI::App* sub, App& app, CancelFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_option("--wait", flags.wait_s,
                  "Wait up to SECONDS for the jobs to end and record their end and last log lines (0: do not "
                  "wait; a run of the study going on records them itself)")
      ->type_name("SECONDS")
      ->default_val(30);
}

Status CmdCancel(App& app, CancelFlags& flags) {
  SWEEP_RETURN_IF_ERROR(app.LoadStudyFile(App::Space::kNotNeeded));
  // Nothing was ever run: say so rather than create an empty database that `status` then shows.
  {
    SWEEP_RETURN_IF_ERROR(app.OpenStore(true));
    auto rec = app.store->GetStudy(app.study.name);
    if (!rec.ok()) return rec.status().WithContext("nothing to cancel: this study was never run");
    app.store.reset();
  }
  SWEEP_RETURN_IF_ERROR(app.OpenStore(false));
  SWEEP_RETURN_IF_ERROR(app.Connect());
  run::Runner runner(app.study, *app.store, *app.transport, app.clock, std::cout);
  auto n = runner.CancelAll();
  if (!n.ok()) return n.status();
  std::cout << fmt::format("cancelled {} trial(s)\n", *n);
  if (flags.wait_s <= 0) return Status::OK();
  // Record the ends now, so that `status` and the report say cancelled, unless a `run` of the
  // study is going: it records them itself at its next tick.
  auto lock = run::RunLock::Acquire(app.study.database + ".lock");
  if (!lock.ok()) {
    std::cout << "a run of this study is going on: it records the jobs' ends at its next tick\n";
    return Status::OK();
  }
  auto open = runner.AwaitEnds(flags.wait_s);
  if (!open.ok()) return open.status().WithContext("recording the cancelled jobs' ends");
  if (*open > 0) {
    std::cout << fmt::format("{} job(s) not ended after {}s; the next `slurmsweep run {}` records their end\n", *open,
                             flags.wait_s, app.study_path);
  }
  return Status::OK();
}

}  // namespace sweep::cli
