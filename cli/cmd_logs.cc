// `slurmsweep logs`: a trial's current log, read over the study's transport (SSH or local) from
// the path the store recorded; --follow goes on printing what is appended, moves to the next
// attempt's log when the trial is retried, and ends once the trial has ended.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>

#include "base/text.h"
#include "base/trial_state.h"
#include "cli/commands.h"

namespace sweep::cli {
void AddLogsFlags(CLI::App* sub, App& app, LogsFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_option("trial", flags.trial_name, "Trial key (t-...), a unique beginning of it, or its id")->required();
  sub->add_flag("--follow,-f", flags.follow,
                "Keep printing what is appended (the next attempt's log after a retry) until the trial ends");
}

Status CmdLogs(App& app, LogsFlags& flags) {
  SWEEP_RETURN_IF_ERROR(app.LoadStudyFile(App::Space::kNotNeeded));
  SWEEP_RETURN_IF_ERROR(app.OpenStore(true));
  auto rec = app.store->GetStudy(app.study.name);
  if (!rec.ok()) return rec.status().WithContext("nothing recorded yet for this study; run it first");
  auto trials = app.store->ListTrials(rec->id);
  if (!trials.ok()) return trials.status();
  // A trial key, a unique beginning of one, or the trial's number (status --json's id).
  std::vector<const store::TrialRecord*> matches;
  std::vector<std::string_view> keys;
  for (const auto& t : *trials) {
    keys.push_back(t.trial_key);
    if (t.trial_key == flags.trial_name || std::to_string(t.id) == flags.trial_name) {
      matches = {&t};
      break;
    }
    if (t.trial_key.starts_with(flags.trial_name)) matches.push_back(&t);
  }
  if (matches.empty()) {
    return Status::NotFound(fmt::format("{}: no trial '{}'{} (see `slurmsweep status {}`)", app.study.path,
                                        TerminalSafe(flags.trial_name), DidYouMeanTrial(flags.trial_name, keys),
                                        app.study_path));
  }
  if (matches.size() > 1) {
    return Status::InvalidArgument(fmt::format("'{}' is the beginning of {} trial keys ({}, {}, ...): give more of it",
                                               TerminalSafe(flags.trial_name), matches.size(), matches[0]->trial_key,
                                               matches[1]->trial_key));
  }
  store::TrialRecord trial = *matches[0];
  auto where = [&] { return app.study.cluster.remote() ? "on " + app.study.cluster.host : "on this machine"; };
  // A trial that ended unsubmitted (dropped, skipped, cancelled before its sbatch) never gets a log: --follow
  // would wait on nothing and end silently.
  const bool ended_unsubmitted = trial.log_path.empty() && IsFinalTrialState(trial.state);
  if (trial.log_path.empty() && (!flags.follow || ended_unsubmitted)) {
    return Status::FailedPrecondition(fmt::format("trial {} has no log{}: it is {} (never submitted){}",
                                                  trial.trial_key, ended_unsubmitted ? "" : " yet", trial.state,
                                                  ended_unsubmitted ? "" : "; --follow waits for it"));
  }
  SWEEP_RETURN_IF_ERROR(app.Connect());
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
      auto chunk = app.transport->ReadFrom(path, offset, kChunk);
      if (chunk.ok()) {
        got = !chunk->empty();
        offset += chunk->size();
        std::cout << *chunk;
        std::cout.flush();
      } else if (chunk.status().IsNotFound()) {
        if (!flags.follow) {
          return Status::FailedPrecondition(fmt::format(
              "trial {} ({}): its log {} is not there {} yet{}", trial.trial_key, trial.state, TerminalSafe(path),
              where(), IsFinalTrialState(trial.state) ? "" : "; --follow waits for it"));
        }
      } else if (!(flags.follow && chunk.status().IsUnavailable())) {
        return chunk.status().WithContext("reading " + path);
      }
    }
    if (got) continue;  // more may be there already
    if (!flags.follow) return Status::OK();
    // Nothing new: once the trial has ended and its log was read after that, it is complete.
    if (ended_seen) return Status::OK();
    app.clock.SleepFor(1);
    auto now = app.store->GetTrial(trial.id);
    if (!now.ok()) return now.status();
    trial = *now;
    ended_seen = IsFinalTrialState(trial.state) && trial.log_path == path;
  }
}

}  // namespace sweep::cli
