// Two-phase studies; see phases.h.
#include "orchestrator/phases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "orchestrator/report_data.h"
#include "orchestrator/runner.h"
#include "reports/study_report.h"
#include "store/store.h"

namespace sweep {
namespace {

// A stored parameter value (JSON) as the study file would have given it.
ParamValue FromJson(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

Result<std::vector<Params>> SeedConfigs(const Study& study) {
  if (!study.seed_from) return std::vector<Params>{Params{}};
  const Study::SeedFrom& seed = *study.seed_from;
  std::string where = fmt::format("{}:{}: search.seed_from", study.path, seed.line);
  auto phase1 = LoadStudy(seed.study_path);
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
    return Status::FailedPrecondition(
        fmt::format("{}: phase 1 ({}) has no results yet: run it first ({})", where, seed.study_path,
                    db.status().message()));
  }
  auto rec = (*db)->GetStudy(phase1->name);
  if (!rec.ok()) return Status::FailedPrecondition(fmt::format("{}: phase 1 study '{}' has not run", where, phase1->name));
  auto trials = (*db)->ListTrials(rec->id);
  if (!trials.ok()) return trials.status();
  // "new" trials are unfinished too: IsFinalTrialState says so.
  size_t open = std::count_if(trials->begin(), trials->end(),
                              [](const store::TrialRecord& t) { return !IsFinalTrialState(t.state); });
  if (open > 0) {
    return Status::FailedPrecondition(fmt::format(
        "{}: phase 1 study '{}' has {} trial(s) not ended yet; phase 2 starts from its final ranking", where,
        phase1->name, open));
  }

  Study ranked = *phase1;
  ranked.objective.rank_by_time_to_target = seed.by == "time_to_target";
  auto report = CollectReport(**db, ranked, rec->id, ReportOptionsFor(ranked), SystemClock().Now());
  if (!report.ok()) return report.status();
  reports::Analysis a = reports::Analyze(*report);
  std::vector<size_t> order;
  for (size_t i : a.ranking) {
    const reports::TrialSummary& t = report->trials[i];
    if (t.state != "completed") continue;
    if (seed.by == "iters_per_s" ? !t.iters_per_s
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
    auto t = std::find_if(trials->begin(), trials->end(), [&](const store::TrialRecord& r) { return r.trial_key == key; });
    nlohmann::json params = nlohmann::json::parse(t->params_json, nullptr, false);
    Params p;
    for (const auto& spec : phase1->space) {
      if (params.is_object() && params.contains(spec.name)) p.emplace_back(spec.name, FromJson(params[spec.name]));
    }
    seeds.push_back(std::move(p));
  }
  return seeds;
}

Result<std::vector<TrialSpec>> ExpandStudy(const Study& study) {
  auto seeds = SeedConfigs(study);
  if (!seeds.ok()) return seeds.status();
  return ExpandSpace(study, *seeds);
}

Result<Plan> PlanStudy(const Study& study) {
  auto trials = ExpandStudy(study);
  if (!trials.ok()) return trials.status();
  return PlanTrials(study, std::move(*trials));
}

}  // namespace sweep
