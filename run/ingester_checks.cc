// What the logs yield, checked before anything more is submitted: the objective (objective_watch.h)
// and points at all (log_yield.h); the logs of trials that stored nothing are read again once the
// study file changed (its metric_format fixed). Ingester methods; see ingester.h.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/telemetry.h"
#include "base/trial_state.h"
#include "run/ingester.h"

namespace sweep::run {

namespace {
constexpr size_t kHeadBytes = 64 << 10;  // what the verdict needs of a log to detect its format

bool EndedQuiet(const std::string& state) { return state == "completed" || state == "timeout"; }
}  // namespace

Status Ingester::RereadEmptyLogs(std::vector<store::TrialRecord>& trials, bool study_changed) {
  if (reread_checked_) return Status::OK();
  auto summaries = ctx_.store.Summaries(ctx_.study_id);
  if (!summaries.ok()) return summaries.status();
  std::set<int64_t> yielded;
  for (const auto& s : *summaries) {
    for (const auto& m : s.metrics) {
      if (!IsTelemetryMetric(m.name)) yielded.insert(s.trial_id);
    }
  }
  std::vector<store::TrialRecord*> empty;  // read lines, stored no point
  for (auto& t : trials) {
    if (t.log_offset > 0 && !t.log_path.empty() && !yielded.count(t.id)) empty.push_back(&t);
  }
  if (empty.empty() || !study_changed) {
    // The same study reads the same logs the same way: only the first that ended is shown to the
    // watch, so a study stopped for it stops again before submitting (one read, not one per trial).
    auto quiet =
        std::find_if(empty.begin(), empty.end(), [](const store::TrialRecord* t) { return EndedQuiet(t->state); });
    if (quiet != empty.end()) {
      const store::TrialRecord& t = **quiet;
      auto head = ctx_.transport.ReadFrom(t.log_path, 0, kHeadBytes);
      if (!head.ok() && !head.status().IsNotFound()) return head.status();
      if (head.ok()) {
        std::string_view lines(*head);
        lines = lines.substr(0, lines.rfind('\n') + 1);
        yield_.Saw(t.id, t.trial_key, lines, static_cast<size_t>(std::count(lines.begin(), lines.end(), '\n')), 0);
        yield_.Ended(t.id, t.state);
      }
    }
    reread_checked_ = true;
    return Status::OK();
  }
  // Ended trials are read now (the loop reads only live ones); live ones from their start at the
  // next read. One ReadMany for the first chunk of every ended log.
  std::vector<slurm::ReadRequest> reads;
  std::vector<store::TrialRecord*> ended;
  for (store::TrialRecord* t : empty) {
    if (!IsFinalTrialState(t->state)) continue;
    reads.push_back({t->log_path, 0, 4 << 20});
    ended.push_back(t);
  }
  auto chunks = reads.empty() ? std::vector<Result<std::string>>() : ctx_.transport.ReadMany(reads);
  int with_points = 0;
  Status st = ctx_.store.InTransaction([&]() -> Status {
    for (store::TrialRecord* t : empty) {
      SWEEP_RETURN_IF_ERROR(ctx_.store.AppendMetrics(t->id, {}, 0));
      t->log_offset = 0;
      Forget(t->id);
    }
    for (size_t i = 0; i < ended.size(); ++i) {
      store::TrialRecord& t = *ended[i];
      auto n = Ingest(t, i < chunks.size() ? &chunks[i] : nullptr);
      if (!n.ok()) return n.status();
      if (*n > 0) ++with_points;
      yield_.Ended(t.id, t.state);
    }
    return Status::OK();
  });
  if (!st.ok()) {
    // Rolled back: the stored offsets stand; forget what was parsed, the next run tries again.
    for (store::TrialRecord* t : empty) parsers_.erase(t->id);
    return st;
  }
  reread_checked_ = true;
  ctx_.Event(std::nullopt, "reread",
             fmt::format("{} trial(s) had stored no metric point from their logs; {} changed, so their logs are read "
                         "again from the start with metric_format = \"{}\": {} of the {} ended one(s) now have points",
                         empty.size(), ctx_.study.path, MetricFormatName(ctx_.study.metric_format.format), with_points,
                         ended.size()));
  return Status::OK();
}

Status Ingester::CheckLogsYield(const std::vector<store::TrialRecord>& trials, bool more_to_propose) {
  for (const auto& t : trials) {
    if (IsFinalTrialState(t.state)) yield_.Ended(t.id, t.state);
  }
  auto verdict = yield_.Check();
  if (!verdict) return Status::OK();
  std::string log_path;
  for (const auto& t : trials) {
    if (t.trial_key == verdict->trial_key) log_path = t.log_path;
  }
  int live = static_cast<int>(std::count_if(trials.begin(), trials.end(), [](const store::TrialRecord& t) {
    return !t.job_id.empty() && !IsFinalTrialState(t.state);
  }));
  std::string what = yield_.Describe(*verdict);
  // Nothing left to submit or track: the run ends as it would, its summary says there is no
  // result, and this says why.
  int unsubmitted = 0;
  for (const auto& t : trials) {
    if (ctx_.specs.count(t.trial_key) && t.state == kTrialNew) ++unsubmitted;
  }
  if (unsubmitted == 0 && !more_to_propose && live == 0) {
    if (!yield_warned_) ctx_.Event(std::nullopt, "no_points", "warning: " + what);
    yield_warned_ = true;
    return Status::OK();
  }
  ctx_.Event(std::nullopt, "no_points", what);
  std::string fix = verdict->guess
                        ? fmt::format("set [study] metric_format = \"{}\" (or \"auto\", the default, which finds it)",
                                      MetricFormatName(verdict->guess->format))
                        : std::string(
                              "check what the trainer prints (`slurmsweep metrics LOG`); a format of its own is read "
                              "with [study.metric_regex] expressions and metric_format = \"regex\"");
  std::string on_slurm = live == 0 ? "No job of the study is on Slurm"
                                   : fmt::format(
                                         "The {} job(s) already on Slurm go on (`slurmsweep cancel {}` "
                                         "stops them)",
                                         live, ctx_.study.path);
  return Status::InvalidArgument(fmt::format(
      "{}: {}. Submission stopped: a sweep would store nothing, and early stopping would have nothing to go on. "
      "{}; the logs stay: {}, and `slurmsweep run {}` reads again the logs of the trials that stored no point.{}",
      ctx_.study.path, what, on_slurm, fix, ctx_.study.path,
      verdict->head.empty() ? "" : fmt::format("\n  {} begins:{}", log_path, verdict->head)));
}

Status Ingester::CheckObjectiveLogged(const std::vector<store::TrialRecord>& trials) {
  if (!watch_primed_) {
    watch_primed_ = true;
    for (const auto& t : trials) {
      if (t.log_offset == 0) continue;
      auto row = ctx_.store.LastMetric(t.id, ctx_.study.objective.metric);
      if (!row.ok()) return row.status();
      if (row->has_value()) {
        watch_.ObjectiveStored();
        break;
      }
    }
  }
  for (const auto& t : trials) {
    if (IsFinalTrialState(t.state)) watch_.Ended(t.id);
  }
  if (std::string why = watch_.TakeNoTimeAxisWarning(); !why.empty())
    ctx_.Event(std::nullopt, "warning", "warning: " + why);
  std::string missing = watch_.MissingObjective();
  if (missing.empty()) return Status::OK();
  int live = static_cast<int>(std::count_if(trials.begin(), trials.end(), [](const store::TrialRecord& t) {
    return !t.job_id.empty() && !IsFinalTrialState(t.state);
  }));
  ctx_.Event(std::nullopt, "objective_missing", missing);
  std::string on_slurm = live == 0
                             ? "No job of the study is on Slurm"
                             : fmt::format("The {} job(s) already on Slurm go on (`slurmsweep cancel {}` stops them)",
                                           live, ctx_.study.path);
  // Named as a load error names a key (file:line: key '...'); the default lm_loss has no line in the file.
  std::string where =
      ctx_.study.objective.metric_line > 0
          ? fmt::format("{}:{}: key 'objective.metric'", ctx_.study.path, ctx_.study.objective.metric_line)
          : fmt::format("{}: [objective] metric (the default, lm_loss)", ctx_.study.path);
  return Status::InvalidArgument(fmt::format(
      "{}: {}. Submission stopped. {}; every metric the logs have is stored, so nothing is "
      "lost: fix [objective] metric (or what the trainer logs; `slurmsweep metrics LOG --study {}` checks a log) and "
      "`slurmsweep run {}` goes on. An objective logged only at the end: [objective] logged_within = 0",
      where, missing, on_slurm, ctx_.study.path, ctx_.study.path));
}

}  // namespace sweep::run
