// Trials outside the study file's space; see outside_space.h.
#include "run/outside_space.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "base/terminal.h"
#include "base/trial_state.h"
#include "results/study_trials.h"
#include "run/tpe_trials.h"

namespace sweep::run {
namespace {

constexpr size_t kKeysNamed = 5;

}  // namespace

Result<std::vector<store::TrialRecord>> TrialsOutsideSpace(const study::Study& study,
                                                           const std::vector<store::TrialRecord>& stored) {
  std::set<std::string> keys;
  if (study.sampler == "tpe") {
    auto mine = StoredTpeTrials(study, stored);
    if (!mine.ok()) return mine.status();
    for (const auto& spec : *mine) keys.insert(spec.key);
  } else {
    auto specs = results::ExpandStudy(study);
    if (!specs.ok()) return specs.status();
    for (const auto& spec : *specs) keys.insert(spec.key);
    for (const auto& spec : results::StoredRepeats(study, *specs, stored)) keys.insert(spec.key);
  }
  std::vector<store::TrialRecord> out;
  for (const auto& t : stored) {
    if (!keys.count(t.trial_key)) out.push_back(t);
  }
  return out;
}

std::vector<store::TrialRecord> StillOpen(const std::vector<store::TrialRecord>& outside) {
  std::vector<store::TrialRecord> out;
  for (const auto& t : outside) {
    if (!IsFinalTrialState(t.state)) out.push_back(t);
  }
  return out;
}

std::string DescribeOutsideSpace(const study::Study& study, const std::vector<store::TrialRecord>& outside,
                                 const std::string& study_path) {
  if (outside.empty()) return "";
  std::vector<store::TrialRecord> open = StillOpen(outside);
  if (open.empty()) {
    return fmt::format(
        "outside the space: {} trial(s) of an earlier version of {}, all ended (history: left out "
        "of the ranking and the reports)\n",
        outside.size(), study.path);
  }
  std::vector<std::string> named;
  for (size_t i = 0; i < open.size() && i < kKeysNamed; ++i)
    named.push_back(fmt::format("{} ({})", open[i].trial_key, TerminalSafe(open[i].state)));
  if (open.size() > kKeysNamed) named.push_back(fmt::format("... {} more", open.size() - kKeysNamed));
  // A submitted trial holds a slot of max_concurrent until it ends (Submitter::FreeSlots counts every one).
  size_t holding =
      std::count_if(open.begin(), open.end(), [](const store::TrialRecord& t) { return t.state != kTrialNew; });
  return fmt::format(
      "outside the space: {} trial(s) of an earlier version of {}; {} not ended ({} on Slurm, holding that many of "
      "max_concurrent = {} slots): {}; `slurmsweep cancel --outside-space {}` cancels them\n",
      outside.size(), study.path, open.size(), holding, study.cluster.max_concurrent, fmt::join(named, ", "),
      study_path);
}

}  // namespace sweep::run
