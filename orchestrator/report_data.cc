// Summaries of each trial's metrics for reports and `status`; see report_data.h.
#include "orchestrator/report_data.h"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace sweep {
namespace {

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string JsonScalarToString(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  return j.dump();
}

}  // namespace

std::vector<std::string> ParamNames(const Study& study) {
  std::vector<std::string> names;
  for (const auto& p : study.space) names.push_back(p.name);
  return names;
}

Result<std::vector<reports::TrialRow>> CollectTrialRows(store::Store& store, int64_t study_id,
                                                        const std::vector<std::string>& param_names, double now) {
  auto trials = store.ListTrials(study_id);
  if (!trials.ok()) return trials.status();
  std::vector<reports::TrialRow> rows;
  for (const auto& t : *trials) {
    reports::TrialRow r;
    r.trial_id = t.id;
    r.trial_key = t.trial_key;
    auto params = nlohmann::json::parse(t.params_json, nullptr, false);
    for (const auto& name : param_names) {
      r.param_values.push_back(params.is_object() && params.contains(name) ? JsonScalarToString(params[name]) : "");
    }
    r.state = t.state;
    r.reason = t.reason;
    r.job_id = t.job_id;
    r.exit_code = t.exit_code;
    auto metrics = store.Metrics(t.id);
    if (!metrics.ok()) return metrics.status();
    std::vector<double> iter_ms;
    int64_t loss_step = -1;
    for (const auto& m : *metrics) {
      r.steps = std::max(r.steps, m.step);
      if (!r.train_time_s || m.time_s > *r.train_time_s) r.train_time_s = m.time_s;
      if ((m.name == "lm_loss" || m.name == "loss") && m.step >= loss_step) {
        loss_step = m.step;
        r.final_loss = m.value;
      }
      if (m.name == "iter_time_ms" && m.value > 0) iter_ms.push_back(m.value);
    }
    r.median_iter_time_ms = Median(iter_ms);
    if (r.median_iter_time_ms) r.iters_per_s = 1000.0 / *r.median_iter_time_ms;
    if (t.started_at) r.wall_time_s = (t.ended_at ? *t.ended_at : now) - *t.started_at;
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace sweep
