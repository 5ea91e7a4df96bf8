// A study's trials grouped into configurations; see configurations.h.
#include "results/configurations.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

#include "base/params_text.h"
#include "base/terminal.h"
#include "results/study_trials.h"
#include "study/repeats.h"

namespace sweep::results {

std::optional<reports::ConfigRanking> RankStudyConfigurations(const study::Study& study,
                                                              const std::vector<reports::TrialRow>& rows) {
  if (!study::Seeded(study)) return std::nullopt;
  std::vector<std::string> names = ParamNames(study);
  reports::ConfigRanking ranking = reports::RankConfigurations(names, rows, study.seed_var, study.objective.minimize);
  const std::string& spec = study.report.baseline;
  if (spec.empty()) return ranking;
  for (size_t i = 0; i < rows.size() && !ranking.baseline; ++i) {
    bool match = rows[i].trial_key == spec;
    if (!match && IsParamsText(spec)) {
      // The row's values as a parameter text, numbers as numbers, for the codec's comparison.
      nlohmann::json values = nlohmann::json::object();
      for (size_t p = 0; p < names.size() && p < rows[i].param_values.size(); ++p) {
        const ParamCell& cell = rows[i].param_values[p];
        if (cell.text.empty()) continue;
        if (auto n = cell.Number()) values[names[p]] = *n;
        else values[names[p]] = cell.text;
      }
      match = ParamsTextHolds(values.dump(), spec);
    }
    if (match) ranking.baseline = reports::GroupOfRow(ranking, i);
  }
  return ranking;
}

std::string RenderConfigurationsText(const reports::ConfigRanking& r, size_t max_rows) {
  std::string out = fmt::format(
      "configurations by their mean over seeds ({}), ± the standard error of the mean, range, completed/repeats:\n",
      r.seed_name);
  int rank = 0;
  size_t shown = 0;
  for (size_t k = 0; k < r.groups.size(); ++k) {
    const reports::ConfigGroup& g = r.groups[k];
    if (g.mean) ++rank;
    if (k >= max_rows && r.baseline != k) continue;
    ++shown;
    std::string params;
    for (size_t i = 0; i < r.param_names.size() && i < g.param_values.size(); ++i) {
      params += fmt::format("{}{}={}", i ? " " : "", r.param_names[i], TerminalSafe(g.param_values[i]));
    }
    std::string values;
    for (double v : g.values) values += fmt::format("{}{:.5g}", values.empty() ? "" : " ", v);
    bool base = r.baseline && &r.groups[*r.baseline] == &g;
    out += fmt::format("  {:>3} {:>11} {:>12} {:>23} {:>3}/{:<3} {}{}{}\n", g.mean ? std::to_string(rank) : "-",
                       g.mean ? fmt::format("{:.5g}", *g.mean) : "-", g.sem ? fmt::format("± {:.2g} se", *g.sem) : "",
                       g.min ? fmt::format("[{:.5g}, {:.5g}]", *g.min, *g.max) : "", g.values.size(), g.rows.size(),
                       params, values.empty() ? "" : "  (" + values + ")", base ? "  [baseline]" : "");
  }
  if (shown < r.groups.size())
    out += fmt::format("  ... {} more configurations (status --all)\n", r.groups.size() - shown);
  if (std::string s = reports::SeparabilityText(r); !s.empty()) out += s + "\n";
  return out;
}

nlohmann::json ConfigurationsJson(const reports::ConfigRanking& r, const std::vector<reports::TrialRow>& rows,
                                  const std::vector<nlohmann::json>& typed) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json ranking = nlohmann::json::array();
  int rank = 0;
  for (const reports::ConfigGroup& g : r.groups) {
    nlohmann::json params = g.rows.front() < typed.size() && typed[g.rows.front()].is_object()
                                ? typed[g.rows.front()]
                                : nlohmann::json::object();
    params.erase(r.seed_name);
    nlohmann::json seeds = nlohmann::json::array();
    for (const std::string& seed : g.seeds) seeds.push_back(std::strtoll(seed.c_str(), nullptr, 10));
    nlohmann::json trials = nlohmann::json::array();
    for (size_t i : g.rows) trials.push_back(rows[i].trial_key);
    ranking.push_back({{"rank", g.mean ? nlohmann::json(++rank) : nlohmann::json()},
                       {"params", params},
                       {"repeats", g.rows.size()},
                       {"completed", g.values.size()},
                       {"mean", opt(g.mean)},
                       {"sem", opt(g.sem)},
                       {"std", opt(g.std)},
                       {"min", opt(g.min)},
                       {"max", opt(g.max)},
                       {"iters_per_s", opt(g.iters_per_s)},
                       {"seeds", seeds},
                       {"trials", trials}});
  }
  using V = reports::Separability::Verdict;
  const reports::Separability& s = r.separability;
  const char* verdict = s.verdict == V::kSeparable      ? "separable"
                        : s.verdict == V::kMoreSeeds    ? "more_seeds"
                        : s.verdict == V::kNotWithSeeds ? "not_with_more_seeds"
                                                        : "unknown";
  nlohmann::json separability = {{"test", "welch"}, {"verdict", verdict}};
  if (s.verdict != V::kUnknown) {
    separability["difference"] = s.difference;
    separability["se"] = s.se;
    separability["t"] = std::isfinite(s.t) ? nlohmann::json(s.t) : nlohmann::json();
    separability["df"] = s.df;
    separability["p"] = s.p;
    separability["more_seeds"] = s.verdict == V::kMoreSeeds ? nlohmann::json(s.more_seeds) : nlohmann::json();
  }
  auto ranked = [&](size_t i) { return i < r.groups.size() && r.groups[i].mean ? ranking[i] : nlohmann::json(); };
  nlohmann::json baseline;
  if (r.baseline) {
    baseline = ranking[*r.baseline];
    baseline["is_recommendation"] = *r.baseline == 0 && r.groups[0].mean.has_value();
  }
  return {{"seed_var", r.seed_name},
          {"best_two_separable", r.best_two_separable ? nlohmann::json(*r.best_two_separable) : nlohmann::json()},
          {"separability", separability},
          {"recommendation", ranked(0)},
          {"runner_up", ranked(1)},
          {"baseline", baseline},
          {"ranking", ranking}};
}

}  // namespace sweep::results
