// A study's trials grouped into configurations; see configurations.h.
#include "results/configurations.h"

#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <set>

#include "base/terminal.h"
#include "results/study_trials.h"
#include "study/repeats.h"

namespace sweep::results {

std::optional<reports::ConfigRanking> RankStudyConfigurations(const study::Study& study,
                                                              const std::vector<reports::TrialRow>& rows) {
  if (!study::Seeded(study)) return std::nullopt;
  return reports::RankConfigurations(ParamNames(study), rows, study.seed_var, study.objective.minimize);
}

std::string RenderConfigurationsText(const reports::ConfigRanking& r) {
  std::string out = fmt::format("configurations by their mean over seeds ({}):\n", r.seed_name);
  int rank = 0;
  for (const reports::ConfigGroup& g : r.groups) {
    std::string params;
    for (size_t i = 0; i < r.param_names.size() && i < g.param_values.size(); ++i) {
      params += fmt::format("{}{}={}", i ? " " : "", r.param_names[i], TerminalSafe(g.param_values[i]));
    }
    std::string values;
    for (double v : g.values) values += fmt::format("{}{:.5g}", values.empty() ? "" : " ", v);
    out += fmt::format("  {:>3} {:>11} {:>10} {:>23} {:>3}/{:<3} {}{}\n", g.mean ? std::to_string(++rank) : "-",
                       g.mean ? fmt::format("{:.5g}", *g.mean) : "-", g.std ? fmt::format("± {:.2g}", *g.std) : "",
                       g.min ? fmt::format("[{:.5g}, {:.5g}]", *g.min, *g.max) : "", g.values.size(), g.rows.size(),
                       params, values.empty() ? "" : "  (" + values + ")");
  }
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
                       {"std", opt(g.std)},
                       {"min", opt(g.min)},
                       {"max", opt(g.max)},
                       {"seeds", seeds},
                       {"trials", trials}});
  }
  return {{"seed_var", r.seed_name},
          {"best_two_separable", r.best_two_separable ? nlohmann::json(*r.best_two_separable) : nlohmann::json()},
          {"ranking", ranking}};
}

}  // namespace sweep::results
