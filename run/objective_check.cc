// The first trials' logs checked against the study's objective and time rules; see objective_watch.h.
#include "run/objective_check.h"

#include <fmt/format.h>

#include "base/text.h"

namespace sweep::run {

void ObjectiveCheck::Saw(int64_t trial, std::string_view trial_key, const std::vector<MetricPoint>& points,
                         std::string_view time_key) {
  Seen& s = trials_[trial];
  s.key = std::string(trial_key);
  if (!time_key.empty()) s.timed = true;
  for (const MetricPoint& p : points) {
    if (p.name == objective_) objective_seen_ = true;
    if (names_.size() < 200) names_.insert(p.name);
    if (s.steps.size() < 1000) s.steps.insert(p.step);
  }
}

void ObjectiveCheck::Ended(int64_t trial) {
  auto it = trials_.find(trial);
  if (it != trials_.end()) it->second.ended = true;
}

const ObjectiveCheck::Seen* ObjectiveCheck::Decisive() const {
  for (const auto& [id, s] : trials_) {
    bool enough = lines_needed_ > 0 && static_cast<int>(s.steps.size()) >= lines_needed_;
    if (enough || (s.ended && !s.steps.empty())) return &s;
  }
  return nullptr;
}

std::string ObjectiveCheck::MissingObjective() const {
  if (objective_seen_) return "";
  const Seen* s = Decisive();
  if (!s) return "";
  std::vector<std::string_view> names(names_.begin(), names_.end());
  std::string listed;
  for (auto n : names) listed += (listed.empty() ? "" : ", ") + std::string(n);
  return fmt::format("trial {} logged {} metric line(s) with {} but never the objective '{}'{}", s->key,
                     s->steps.size(), listed, objective_, DidYouMean(objective_, names));
}

std::string ObjectiveCheck::TakeNoTimeAxisWarning() {
  if (!time_rules_ || time_warned_) return "";
  const Seen* s = Decisive();
  if (!s || s->timed) return "";
  for (const auto& [id, t] : trials_) {
    if (t.timed) return "";  // some trial's log has time: the format can carry it
  }
  time_warned_ = true;
  return fmt::format(
      "trial {} logged {} metric line(s) with no time axis: the [stopping] rules compare loss at equal training "
      "time and cannot stop any trial. Megatron logs 'elapsed time per iteration (ms)'; a JSON line needs \"time\", "
      "\"elapsed\" or \"time_s\" (seconds since the start) or \"iter_time_ms\" or \"iteration_time\" (seconds) per "
      "step (README: Metrics); check a log with `slurmsweep metrics LOG`",
      s->key, s->steps.size());
}

}  // namespace sweep::run
