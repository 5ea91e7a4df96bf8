// Configurations over seeds and the test that tells the best two apart; see config_ranking.h.
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
    if (added) {
      out.groups.emplace_back();
      out.groups.back().param_values = std::move(values);
    }
    ConfigGroup& g = out.groups[it->second];
    if (row.iters_per_s && std::isfinite(*row.iters_per_s) && *row.iters_per_s > 0) {
      g.iters_per_s = g.iters_per_s.value_or(0) + *row.iters_per_s;
      ++g.with_throughput;
    }
    g.rows.push_back(r);
    g.seeds.push_back(seed);
    if (row.state == "completed" && row.objective_value && std::isfinite(*row.objective_value)) {
      g.values.push_back(*row.objective_value);
    }
    if (IsFinalTrialState(row.state)) ++g.ended;
  }
  for (ConfigGroup& g : out.groups) {
    if (g.with_throughput > 0) *g.iters_per_s /= g.with_throughput;
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
      g.sem = *g.std / std::sqrt(n);
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
      out.separability = WelchTest(*a.mean, *a.std, a.values.size(), *b.mean, *b.std, b.values.size());
      out.best_two_separable = out.separability.verdict == Separability::Verdict::kSeparable;
    }
  }
  return out;
}

namespace {

// ln Γ(x) for x > 0 is std::lgamma; the regularized incomplete beta I_x(a, b) by its continued
// fraction (Lentz's method), the textbook route to Student's t distribution.
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (std::fabs(del - 1) < 1e-14) break;
  }
  return h;
}

double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * BetaContinuedFraction(a, b, x) / a;
  return 1 - front * BetaContinuedFraction(b, a, 1 - x) / b;
}

struct Welch {
  double se = 0, t = 0, df = 0, p = 1;
};

Welch WelchOf(double diff, double var_a, size_t n_a, double var_b, size_t n_b) {
  Welch w;
  double va = var_a / static_cast<double>(n_a), vb = var_b / static_cast<double>(n_b);
  w.se = std::sqrt(va + vb);
  if (w.se == 0) {
    // No noise at all: any difference is certain, none is not.
    w.t = diff == 0 ? 0 : INFINITY;
    w.df = static_cast<double>(n_a + n_b - 2);
    w.p = diff == 0 ? 1 : 0;
    return w;
  }
  w.t = diff / w.se;
  w.df = (va + vb) * (va + vb) / (va * va / static_cast<double>(n_a - 1) + vb * vb / static_cast<double>(n_b - 1));
  w.p = StudentTwoSidedP(w.t, w.df);
  return w;
}

constexpr double kAlpha = 0.05;

}  // namespace

double StudentTwoSidedP(double t, double df) {
  if (!std::isfinite(t)) return 0;
  return RegularizedBeta(df / 2, 0.5, df / (df + t * t));
}

Separability WelchTest(double mean_a, double sd_a, size_t n_a, double mean_b, double sd_b, size_t n_b) {
  Separability s;
  if (n_a < 2 || n_b < 2) return s;
  s.difference = std::fabs(mean_a - mean_b);
  Welch w = WelchOf(s.difference, sd_a * sd_a, n_a, sd_b * sd_b, n_b);
  s.se = w.se, s.t = w.t, s.df = w.df, s.p = w.p;
  if (w.p < kAlpha) {
    s.verdict = Separability::Verdict::kSeparable;
    return s;
  }
  // The same gap and noise, k more seeds each: when does the test tell them apart?
  for (int k = 1; k <= kMaxMoreSeeds && s.difference > 0; ++k) {
    if (WelchOf(s.difference, sd_a * sd_a, n_a + k, sd_b * sd_b, n_b + k).p < kAlpha) {
      s.verdict = Separability::Verdict::kMoreSeeds;
      s.more_seeds = k;
      return s;
    }
  }
  s.verdict = Separability::Verdict::kNotWithSeeds;
  return s;
}

std::string ConfigText(const ConfigRanking& r, const ConfigGroup& g) {
  std::string s;
  for (size_t i = 0; i < r.param_names.size() && i < g.param_values.size(); ++i) {
    s += fmt::format("{}{}={}", i ? " " : "", r.param_names[i], g.param_values[i]);
  }
  return s;
}

std::string MeanText(const ConfigGroup& g) {
  if (!g.mean) return "–";
  std::string s = fmt::format("{:.4g}", *g.mean);
  if (g.sem) s += " ± " + FormatSig(*g.sem, 2);
  return s + fmt::format(" (n = {})", g.values.size());
}

std::optional<size_t> GroupOfRow(const ConfigRanking& r, size_t row) {
  for (size_t i = 0; i < r.groups.size(); ++i) {
    if (std::find(r.groups[i].rows.begin(), r.groups[i].rows.end(), row) != r.groups[i].rows.end()) return i;
  }
  return std::nullopt;
}

std::string SeparabilityText(const ConfigRanking& r) {
  if (r.groups.size() < 2 || !r.groups[1].mean) return "";
  const ConfigGroup& a = r.groups[0];
  const ConfigGroup& b = r.groups[1];
  const Separability& s = r.separability;
  using V = Separability::Verdict;
  std::string test = fmt::format("Welch's t test of the means: difference {} ± {}, t = {:.2f}, p = {:.2g}",
                                 FormatSig(s.difference, 2), FormatSig(s.se, 2), s.t, s.p);
  switch (s.verdict) {
    case V::kUnknown:
      return fmt::format(
          "the best two cannot be told apart yet: {} completed repeat(s) against {}; two or more each are needed "
          "(slurmsweep run --repeat-top 2 --repeats N adds seeds to them)",
          a.values.size(), b.values.size());
    case V::kSeparable:
      return fmt::format("the best two are separable ({}): {} is better than {}", test, ConfigText(r, a),
                         ConfigText(r, b));
    case V::kMoreSeeds:
      return fmt::format(
          "the best two are not separable yet ({}); about {} more seed{} each would tell them apart if the gap "
          "holds (slurmsweep run --repeat-top 2 --repeats {})",
          test, s.more_seeds, s.more_seeds == 1 ? "" : "s", std::max(a.values.size(), b.values.size()) + s.more_seeds);
    case V::kNotWithSeeds:
      return fmt::format(
          "the best two are not separable ({}), and more seeds will not tell them apart: the gap is too small "
          "against the noise (even {} more each would not); either will do",
          test, kMaxMoreSeeds);
  }
  return "";
}

std::string RenderConfigsCsv(const ConfigRanking& r, const std::vector<TrialRow>& rows) {
  std::string out = "rank";
  for (const auto& name : r.param_names) {
    out += ',';
    AppendCsvText(name, out);
  }
  out += ",repeats,completed,mean,std,min,max,seeds,trial_keys,sem\n";
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
    out += ',';
    AppendCsvNumber(g.sem, out);
    out += '\n';
  }
  return out;
}

std::string RenderConfigsSection(const ConfigRanking& r, std::string_view metric, size_t max_rows) {
  std::string out = fmt::format(
      "<section id=\"configurations\"><h2>Configurations over seeds</h2><p class=\"note\">Each configuration ran "
      "with several seeds ({{{{{}}}}}); ranked by the mean final {} of its completed repeats, with the standard "
      "error of that mean (sd / √n), their standard deviation and their range.</p><div class=\"table-wrap\">"
      "<table><thead><tr><th>#</th><th>configuration</th><th>mean {}</th><th>± se</th><th>± sd</th><th>range</th>"
      "<th>completed / repeats</th></tr></thead><tbody>",
      HtmlEscape(r.seed_name), HtmlEscape(metric), HtmlEscape(metric));
  int rank = 0;
  size_t shown = 0;
  for (size_t k = 0; k < r.groups.size(); ++k) {
    const ConfigGroup& g = r.groups[k];
    if (g.mean) ++rank;
    // A large study lists its best configurations and the baseline's; configs.csv holds every one.
    if (k >= max_rows && r.baseline != k) continue;
    ++shown;
    out += fmt::format(
        "<tr><td>{}</td><td class=\"config\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {}</td></tr>",
        g.mean ? std::to_string(rank) : "–", HtmlEscape(ConfigText(r, g)),
        g.mean ? fmt::format("{:.4g}", *g.mean) : "–", g.sem ? FormatSig(*g.sem, 2) : "–",
        g.std ? FormatSig(*g.std, 2) : "–", g.mean ? HtmlEscape(fmt::format("[{:.4g}, {:.4g}]", *g.min, *g.max)) : "–",
        g.values.size(), g.rows.size());
  }
  out += "</tbody></table></div>";
  if (shown < r.groups.size())
    out += fmt::format("<p class=\"note\">… {} more configurations not listed here; configs.csv lists every one.</p>",
                       r.groups.size() - shown);
  if (std::string s = SeparabilityText(r); !s.empty()) {
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    out += fmt::format("<p class=\"basis\">{}.</p>", HtmlEscape(s));
  }
  out += "</section>\n";
  return out;
}

}  // namespace sweep::reports
