// Progress numbers and their text; see progress.h for how the ETA is made.
#include "cli/progress.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <queue>

#include "base/final_objective.h"
#include "base/median.h"
#include "base/terminal.h"
#include "base/trial_state.h"

namespace sweep::cli {
namespace {

// A trial's remaining run time from its rate and remaining iterations, if both are known.
std::optional<double> RemainingByRate(const ProgressTrial& t) {
  if (!t.total_steps || !t.iters_per_s || *t.iters_per_s <= 0) return std::nullopt;
  return std::max<double>(0, static_cast<double>(*t.total_steps - t.steps)) / *t.iters_per_s;
}

}  // namespace

Progress ComputeProgress(const std::vector<ProgressTrial>& trials, const ProgressOptions& options, double now) {
  Progress p;
  std::vector<double> completed_runs;
  std::vector<const ProgressTrial*> running, queued;
  std::optional<double> first_start, last_end;
  double run_s = 0;
  for (const ProgressTrial& t : trials) {
    const TrialStateInfo* info = FindTrialState(t.state);
    // A state this version does not know (a newer slurmsweep's) is counted as running: it has not ended.
    TrialOutcome outcome = info ? info->outcome : TrialOutcome::kRunning;
    if (outcome == TrialOutcome::kDropped) {
      ++p.dropped;
      continue;
    }
    ++p.total;
    switch (outcome) {
      case TrialOutcome::kCompleted:
        ++p.completed;
        if (t.run_s) completed_runs.push_back(*t.run_s);
        break;
      case TrialOutcome::kFailed:
        // Failed states are final; a state the table counts as failed but that is not final does not exist.
        ++p.failed;
        break;
      case TrialOutcome::kCancelled:
        ++p.cancelled;
        if (t.state == kTrialPruned) ++p.pruned;
        break;
      case TrialOutcome::kRunning:
        ++p.running;
        running.push_back(&t);
        break;
      case TrialOutcome::kQueued:
      case TrialOutcome::kDropped:
        ++p.queued;
        queued.push_back(&t);
        break;
    }
    if (t.started_at) first_start = std::min(first_start.value_or(*t.started_at), *t.started_at);
    if (t.ended_at) last_end = std::max(last_end.value_or(*t.ended_at), *t.ended_at);
    run_s += std::max(0.0, t.run_s.value_or(0));
    // Only a trial that completed is a result: a failed, pruned or running one's objective is
    // where it stopped, not what its configuration reaches.
    if (outcome == TrialOutcome::kCompleted && t.objective && std::isfinite(*t.objective) &&
        (!p.best_trial || Better(*t.objective, p.best_value, options.minimize))) {
      p.best_trial = t.key, p.best_value = *t.objective, p.best_state = t.state;
    }
  }
  bool open = p.running + p.queued > 0;
  // The sampler proposes the rest of its budget as trials end; once none is open it has ended (or
  // found nothing more to propose), and the total is what ran.
  if (open && options.budget > p.total + p.dropped) {
    p.to_propose = options.budget - p.total - p.dropped;
    p.total += p.to_propose;
  }
  if (first_start) p.elapsed_s = std::max(0.0, (open ? now : last_end.value_or(now)) - *first_start);
  p.gpu_hours = run_s * options.gpus_per_trial / 3600;

  if (!open) {
    p.eta_s = 0;
    p.eta_basis = "every trial has ended";
    return p;
  }
  std::optional<double> median_run = Median(completed_runs);
  // Before any trial completed, a queued trial is expected to take a running trial's full run.
  std::optional<double> full_run;
  {
    double sum = 0;
    int n = 0;
    for (const ProgressTrial* t : running) {
      if (t->total_steps && t->iters_per_s && *t->iters_per_s > 0) sum += *t->total_steps / *t->iters_per_s, ++n;
    }
    if (n > 0) full_run = sum / n;
  }
  bool used_rates = false, used_durations = false;
  // Slot free times, seconds from now: one per running trial, at least max_concurrent.
  std::priority_queue<double, std::vector<double>, std::greater<>> slots;
  for (const ProgressTrial* t : running) {
    if (auto left = RemainingByRate(*t)) {
      slots.push(*left);
      used_rates = true;
    } else if (median_run) {
      double ran = t->started_at ? now - *t->started_at : 0;
      slots.push(std::max(0.0, *median_run - ran));
      used_durations = true;
    } else {
      p.eta_basis = fmt::format("unknown until trial {} logs its rate and total iterations, or a trial completes",
                                TerminalSafe(t->key));
      return p;
    }
  }
  // Slots: max_concurrent, unless Slurm holds some of the study's jobs pending while fewer run: then the
  // cluster, not the study, bounds how many run at once, and the queued trials get the slots it grants now
  // (10,000 trials at once on a cluster that runs 30: ETA 4 s with 664 waiting, from max_concurrent's slots).
  int capacity = std::max(1, options.max_concurrent);
  bool pending =
      std::any_of(queued.begin(), queued.end(), [](const ProgressTrial* t) { return t->state == "pending"; });
  bool cluster_bound = pending && static_cast<int>(running.size()) < capacity;
  if (cluster_bound) capacity = std::max<int>(1, static_cast<int>(running.size()));
  while (static_cast<int>(slots.size()) < capacity) slots.push(0);
  double end = 0;
  size_t waiting = queued.size() + static_cast<size_t>(p.to_propose);
  if (waiting > 0) {
    std::optional<double> each = median_run ? median_run : full_run;
    if (!each) {
      p.eta_basis = "unknown until a trial completes or logs its rate and total iterations";
      return p;
    }
    (median_run ? used_durations : used_rates) = true;
    for (size_t i = 0; i < waiting; ++i) {
      double free_at = slots.top();
      slots.pop();
      slots.push(free_at + *each);
    }
  }
  while (!slots.empty()) end = std::max(end, slots.top()), slots.pop();
  p.eta_s = end;
  p.eta_basis = used_rates && used_durations ? "from running trials' rates and completed trials' durations"
                : used_rates                 ? "from running trials' rates and remaining iterations"
                                             : "from completed trials' durations";
  if (cluster_bound && waiting > 0) {
    p.eta_basis += fmt::format("; {} at a time, as the cluster runs them now (jobs pending)", capacity);
  }
  return p;
}

std::string FormatDuration(double seconds) {
  auto s = static_cast<int64_t>(std::llround(std::max(0.0, seconds)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, s % 3600 / 60);
  return fmt::format("{}d{:02}h", s / 86400, s % 86400 / 3600);
}

namespace {

std::string Counts(const Progress& p) {
  std::string ended;
  // A pruned trial is one a stopping rule cancelled: the user asked for it, so it is not shown as cancelled.
  for (auto [n, what] : {std::pair{p.completed, "completed"},
                         {p.failed, "failed"},
                         {p.pruned, "pruned"},
                         {p.cancelled - p.pruned, "cancelled"}}) {
    if (n > 0) ended += fmt::format("{}{} {}", ended.empty() ? "" : ", ", n, what);
  }
  return fmt::format("{}/{} done ({:.0f}%){}; {} running, {} queued{}{}", p.done(), p.total, p.percent(),
                     ended.empty() ? "" : " [" + ended + "]", p.running, p.queued,
                     p.to_propose ? fmt::format(", {} to propose", p.to_propose) : "",
                     p.dropped ? fmt::format("; {} dropped by constraints", p.dropped) : "");
}

std::string Best(const Progress& p, const ProgressOptions& o) {
  if (!p.best_trial) return fmt::format("best {}: none yet", TerminalSafe(o.objective));
  return fmt::format("best {}{} ({}): {:.5g} in {} ({})", o.repeats > 1 ? "single seed's " : "",
                     TerminalSafe(o.objective), o.minimize ? "min" : "max", p.best_value, TerminalSafe(*p.best_trial),
                     p.best_state);
}

std::string Times(const Progress& p, const ProgressOptions& o, bool basis) {
  std::string eta = p.eta_s ? FormatDuration(*p.eta_s) : "unknown";
  if (basis && !p.eta_basis.empty() && !(p.eta_s && *p.eta_s == 0)) eta += " (" + p.eta_basis + ")";
  return fmt::format("elapsed {}, ETA {}{}", FormatDuration(p.elapsed_s), eta,
                     o.gpus_per_trial > 0 ? fmt::format(", {:.1f} GPU-hours used", p.gpu_hours) : "");
}

}  // namespace

std::string RenderProgressBlock(const Progress& p, const ProgressOptions& o) {
  return fmt::format("trials: {}\n{}\n{}\n", Counts(p), Best(p, o), Times(p, o, true));
}

std::string RenderProgressLine(const Progress& p, const ProgressOptions& o) {
  return fmt::format("progress: {}; {}; {}\n", Counts(p), Best(p, o), Times(p, o, false));
}

std::string ProgressChangeKey(const Progress& p) {
  return fmt::format("{} {} {} {} {} {} {} {} {} {}", p.completed, p.failed, p.cancelled, p.pruned, p.running, p.queued,
                     p.to_propose, p.dropped, p.best_trial.value_or("-"), p.best_value);
}

nlohmann::json ProgressJson(const Progress& p) {
  return {{"total", p.total},
          {"done", p.done()},
          {"completed", p.completed},
          {"failed", p.failed},
          {"cancelled", p.cancelled},
          {"pruned", p.pruned},
          {"running", p.running},
          {"queued", p.queued},
          {"dropped", p.dropped},
          {"to_propose", p.to_propose},
          {"percent", p.percent()},
          {"elapsed_s", p.elapsed_s},
          {"eta_s", p.eta_s ? nlohmann::json(*p.eta_s) : nlohmann::json()},
          {"eta_basis", p.eta_basis},
          {"gpu_hours", p.gpu_hours}};
}

nlohmann::json BestJson(const Progress& p, const ProgressOptions& o) {
  if (!p.best_trial) return nullptr;
  return {{"trial", *p.best_trial},
          {"state", p.best_state},
          {"metric", o.objective},
          {"goal", o.minimize ? "min" : "max"},
          {"value", p.best_value}};
}

}  // namespace sweep::cli
