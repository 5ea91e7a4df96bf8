// Phase 2's seeds from phase 1's report; see phase_seeds.h.
#include "results/phase_seeds.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/clock.h"
#include "base/trial_state.h"
#include "results/report_data.h"
#include "results/study_trials.h"
#include "reports/study_report.h"
#include "study/loader.h"

namespace sweep::results {

namespace {

// Phase 1's top configurations, best first, read from its store and ranked as its report ranks them.
Result<std::vector<Params>> ReadPhase1Seeds(const study::Study& study) {
  const study::Study::SeedFrom& seed = *study.seed_from;
  std::string where = fmt::format("{}:{}: search.seed_from", study.path, seed.line);
  auto phase1 = study::LoadStudy(seed.study_path);
  if (!phase1.ok()) return phase1.status().WithContext(where);
  for (const auto& p : phase1->space) {
    for (const auto& own : study.space) {
      if (own.name == p.name) {
        return Status::InvalidArgument(fmt::format(
            "{}: parameter '{}' is in both studies; phase 2's [space] must hold only the knobs phase 1 did not vary",
            where, p.name));
      }
    }
  }
  auto db = store::Store::OpenReadOnly(phase1->database);
  if (!db.ok()) {
    return Status::FailedPrecondition(fmt::format("{}: phase 1 ({}) has no results yet: run it first ({})", where,
                                                  seed.study_path, db.status().message()));
  }
  auto rec = (*db)->GetStudy(phase1->name);
  if (!rec.ok())
    return Status::FailedPrecondition(fmt::format("{}: phase 1 study '{}' has not run", where, phase1->name));
  auto trials = (*db)->ListTrials(rec->id);
  if (!trials.ok()) return trials.status();
  // "new" trials are unfinished too: IsFinalTrialState says so.
  size_t open = std::count_if(trials->begin(), trials->end(),
                              [](const store::TrialRecord& t) { return !IsFinalTrialState(t.state); });
  if (open > 0) {
    return Status::FailedPrecondition(
        fmt::format("{}: phase 1 study '{}' has {} trial(s) not ended yet; phase 2 starts from its final ranking",
                    where, phase1->name, open));
  }

  study::Study ranked = *phase1;
  ranked.objective.rank_by_time_to_target = seed.by == "time_to_target";
  // `now` only fills running trials' wall time, and phase 1 has none left: the ranking does not
  // depend on it, so no clock is injected this deep.
  auto report = CollectReport(**db, ranked, rec->id, ReportOptionsFor(ranked), SystemClock().Now());
  if (!report.ok()) return report.status();
  reports::Analysis a = reports::Analyze(*report);
  std::vector<size_t> order;
  for (size_t i : a.ranking) {
    const reports::TrialSummary& t = report->trials[i];
    if (t.state != "completed") continue;
    if (seed.by == "iters_per_s"      ? !t.iters_per_s
        : seed.by == "time_to_target" ? !reports::TimeToTarget(t)
                                      : !(t.final_value && std::isfinite(*t.final_value))) {
      continue;
    }
    order.push_back(i);
  }
  if (seed.by == "iters_per_s") {
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return *report->trials[x].iters_per_s > *report->trials[y].iters_per_s;
    });
  }
  if (order.empty()) {
    return Status::FailedPrecondition(
        fmt::format("{}: no completed trial of phase 1 study '{}' has a {} to rank by", where, phase1->name, seed.by));
  }
  order.resize(std::min(order.size(), static_cast<size_t>(seed.top)));

  std::vector<Params> seeds;
  for (size_t i : order) {
    const std::string& key = report->trials[i].key;
    auto t =
        std::find_if(trials->begin(), trials->end(), [&](const store::TrialRecord& r) { return r.trial_key == key; });
    std::vector<std::string> names;
    for (const auto& spec : phase1->space) names.push_back(spec.name);
    seeds.push_back(t->Values(names));
  }
  return seeds;
}

// Phase 2: phase 1's ranking and parameter names, into study.seeds (see ResolveSeeds).
void ResolvePhase1(study::Study& study) {
  study.seeds.reset();
  study::Study::Seeds seeds;
  auto configs = ReadPhase1Seeds(study);
  if (configs.ok()) seeds.configs = std::move(*configs);
  else seeds.status = configs.status();
  seeds.param_names = ParamNames(study);
  seeds.param_names.resize(seeds.param_names.size() - study.space.size());
  study.seeds = std::move(seeds);
}

}  // namespace

Status ResolveSeeds(study::Study& study) {
  study.expanded.reset();
  if (study.seed_from) ResolvePhase1(study);
  auto specs = ExpandStudy(study);
  if (specs.ok()) study.expanded = std::make_shared<const std::vector<TrialSpec>>(std::move(*specs));
  return Status::OK();
}

}  // namespace sweep::results
