// Configurations over seeds; see repeats.h.
#include "reports/config_ranking.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "base/trial_state.h"
#include "reports/html_text.h"

namespace sweep::reports {

ConfigRanking RankConfigurations(const std::vector<std::string>& param_names, const std::vector<TrialRow>& rows,
                                 std::string_view seed_name, bool minimize) {
  ConfigRanking out;
  out.seed_name = seed_name;
  size_t seed_col = param_names.size();
  for (size_t i = 0; i < param_names.size(); ++i) {
    if (param_names[i] == seed_name) seed_col = i;
    else out.param_names.push_back(param_names[i]);
  }
  std::map<std::vector<std::string>, size_t> index;  // configuration -> its group
  for (size_t r = 0; r < rows.size(); ++r) {
    const TrialRow& row = rows[r];
    std::vector<std::string> values;
    std::string seed = "0";  // a trial stored before the study had repeats is its seed 0
    for (size_t i = 0; i < param_names.size(); ++i) {
      std::string v = i < row.param_values.size() ? row.param_values[i].text : "";
      if (i == seed_col) {
        if (!v.empty()) seed = v;
      } else {
        values.push_back(std::move(v));
      }
    }
    auto [it, added] = index.emplace(values, out.groups.size());
    if (added) out.groups.push_back(ConfigGroup{std::move(values), {}, {}, {}, 0, {}, {}, {}, {}});
    ConfigGroup& g = out.groups[it->second];
    g.rows.push_back(r);
    g.seeds.push_back(seed);
    if (row.state == "completed" && row.objective_value && std::isfinite(*row.objective_value)) {
      g.values.push_back(*row.objective_value);
    }
    if (IsFinalTrialState(row.state)) ++g.ended;
  }
  for (ConfigGroup& g : out.groups) {
    if (g.values.empty()) continue;
    double n = static_cast<double>(g.values.size());
    double mean = std::accumulate(g.values.begin(), g.values.end(), 0.0) / n;
    g.mean = mean;
    g.min = *std::min_element(g.values.begin(), g.values.end());
    g.max = *std::max_element(g.values.begin(), g.values.end());
    if (g.values.size() >= 2) {
      double ss = 0;
      for (double v : g.values) ss += (v - mean) * (v - mean);
      g.std = std::sqrt(ss / (n - 1));
    }
  }
  // Best mean first; those without one keep their order after the ranked.
  std::stable_sort(out.groups.begin(), out.groups.end(), [&](const ConfigGroup& a, const ConfigGroup& b) {
    if (!a.mean || !b.mean) return a.mean.has_value() && !b.mean.has_value();
    return minimize ? *a.mean < *b.mean : *a.mean > *b.mean;
  });
  if (out.groups.size() >= 2 && out.groups[1].mean) {
    const ConfigGroup& a = out.groups[0];
    const ConfigGroup& b = out.groups[1];
    if (a.values.size() >= 2 && b.values.size() >= 2) {
      out.best_two_separable = *a.max < *b.min || *b.max < *a.min;
    }
  }
  return out;
}

namespace {

std::string Range(const ConfigGroup& g) { return fmt::format("[{:.4g}, {:.4g}]", *g.min, *g.max); }

std::string ConfigText(const ConfigRanking& r, const ConfigGroup& g) {
  std::string s;
  for (size_t i = 0; i < r.param_names.size() && i < g.param_values.size(); ++i) {
    s += fmt::format("{}{}={}", i ? " " : "", r.param_names[i], g.param_values[i]);
  }
  return s;
}

}  // namespace

std::string SeparabilityText(const ConfigRanking& r) {
  if (r.groups.size() < 2 || !r.groups[1].mean) return "";
  const ConfigGroup& a = r.groups[0];
  const ConfigGroup& b = r.groups[1];
  if (!r.best_two_separable) {
    return fmt::format(
        "the best two cannot be told apart yet: {} completed repeat(s) against {}; two or more each are needed "
        "(slurmsweep run --repeat-top 2 --repeats N adds seeds to them)",
        a.values.size(), b.values.size());
  }
  if (!*r.best_two_separable) {
    return fmt::format(
        "the best two are not separable: their ranges over seeds overlap ({} {} against {} {}); the difference "
        "of their means is within the noise (slurmsweep run --repeat-top 2 --repeats N adds seeds to them)",
        ConfigText(r, a), Range(a), ConfigText(r, b), Range(b));
  }
  return fmt::format("the best two are separable: their ranges over seeds do not overlap ({} against {})", Range(a),
                     Range(b));
}

std::string RenderConfigsCsv(const ConfigRanking& r, const std::vector<TrialRow>& rows) {
  std::string out = "rank";
  for (const auto& name : r.param_names) {
    out += ',';
    AppendCsvText(name, out);
  }
  out += ",repeats,completed,mean,std,min,max,seeds,trial_keys\n";
  int rank = 0;
  for (const ConfigGroup& g : r.groups) {
    if (g.mean) out += std::to_string(++rank);
    for (size_t i = 0; i < r.param_names.size(); ++i) {
      out += ',';
      AppendCsvText(i < g.param_values.size() ? g.param_values[i] : "", out);
    }
    out += fmt::format(",{},{},", g.rows.size(), g.values.size());
    for (const auto& v : {g.mean, g.std, g.min, g.max}) {
      AppendCsvNumber(v, out);
      out += ',';
    }
    std::string seeds, keys;
    for (size_t i = 0; i < g.rows.size(); ++i) {
      seeds += (i ? " " : "") + g.seeds[i];
      keys += (i ? " " : "") + rows[g.rows[i]].trial_key;
    }
    AppendCsvText(seeds, out);
    out += ',';
    AppendCsvText(keys, out);
    out += '\n';
  }
  return out;
}

std::string RenderConfigsSection(const ConfigRanking& r, std::string_view metric) {
  std::string out = fmt::format(
      "<section id=\"configurations\"><h2>Configurations over seeds</h2><p class=\"note\">Each configuration ran "
      "with several seeds ({{{{{}}}}}); ranked by the mean final {} of its completed repeats, ± their standard "
      "deviation, with their range.</p><div class=\"table-wrap\"><table><thead><tr><th>#</th><th>configuration</th>"
      "<th>mean {}</th><th>± sd</th><th>range</th><th>completed / repeats</th></tr></thead><tbody>",
      HtmlEscape(r.seed_name), HtmlEscape(metric), HtmlEscape(metric));
  int rank = 0;
  for (const ConfigGroup& g : r.groups) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td></tr>",
                       g.mean ? std::to_string(++rank) : "–", HtmlEscape(ConfigText(r, g)),
                       g.mean ? fmt::format("{:.4g}", *g.mean) : "–", g.std ? FormatSig(*g.std, 2) : "–",
                       g.mean ? HtmlEscape(Range(g)) : "–", g.values.size(), g.rows.size());
  }
  out += "</tbody></table></div>";
  if (std::string s = SeparabilityText(r); !s.empty()) {
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    out += fmt::format("<p class=\"basis\">{}.</p>", HtmlEscape(s));
  }
  out += "</section>\n";
  return out;
}

}  // namespace sweep::reports
