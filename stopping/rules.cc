// The stopping rules but throughput (throughput_rule.cc); see early_stop.h for what each decides.
#include "stopping/rules.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace sweep::stopping {

std::string Num(double v) { return fmt::format("{:.4g}", v); }
std::string Name(const TrialProgress& t) { return t.name.empty() ? std::to_string(t.id) : t.name; }
std::string Secs(double v) { return fmt::format("{:.4g}s", v); }

namespace {

// Axis time at which the smoothed curve first reaches `target`, interpolated between the points
// around the crossing; nullopt if it never does.
std::optional<double> ReachTime(const Series& s, double target) {
  // No knot is below the lowest point: a curve that never reached the target is not walked (issue 42: at
  // 10,000 trials walking each was most of the race rule's time).
  if (s.min_s > target) return std::nullopt;
  for (size_t k = 0; k < s.s.size(); ++k) {
    if (s.s[k] > target) continue;
    if (k == 0) return s.t[0];
    return s.t[k - 1] + (s.t[k] - s.t[k - 1]) * (s.s[k - 1] - target) / (s.s[k - 1] - s.s[k]);
  }
  return std::nullopt;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Rules

void Divergence(Context& c) {
  const DivergenceRuleConfig& cfg = c.config.divergence;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    const TrialProgress& trial = c.trials[i];
    if (trial.phase != TrialPhase::kRunning || c.decided[i]) continue;
    const Series& s = c.series[i];
    if (cfg.nan && s.first_nonfinite) {
      const CurvePoint& p = *s.first_nonfinite;
      c.Stop(i, "divergence", fmt::format("loss is {} at step {} (t={})", p.value, p.step, Secs(p.time_s)), p.value, 0,
             0);
      continue;
    }
    if (cfg.max_nan_iters) {
      double total = s.nan_total;
      if (total > static_cast<double>(*cfg.max_nan_iters)) {
        c.Stop(i, "divergence",
               fmt::format("{} iterations with NaN loss or gradients > max_nan_iters {}", total, *cfg.max_nan_iters),
               total, static_cast<double>(*cfg.max_nan_iters), 0);
        continue;
      }
    }
    if (s.empty() || s.last_t() < cfg.grace_s) continue;
    double now = s.s.back();  // what the rules judge: the metric, negated when maximised
    const char* worse = c.config.maximize ? "<" : ">";
    if (cfg.max_loss && now > c.User(*cfg.max_loss)) {
      c.Stop(i, "divergence",
             fmt::format("at t={}: smoothed {} {} {} {}", Secs(s.last_t()), c.config.maximize ? "value" : "loss",
                         Num(c.User(now)), worse, Num(*cfg.max_loss)),
             c.User(now), *cfg.max_loss, 0);
      continue;
    }
    if (cfg.spike_factor) {
      // Minimised: above factor x its lowest (positive) loss. Maximised: below its highest
      // (positive) value / factor; in the negated values the best is then negative.
      double best = s.min_s;
      bool applies = c.config.maximize ? best < 0 : best > 0;
      double bound = c.config.maximize ? best / *cfg.spike_factor : best * *cfg.spike_factor;
      if (applies && now > bound) {
        c.Stop(i, "divergence",
               fmt::format("at t={}: smoothed value {} {} {} its best {}", Secs(s.last_t()), Num(c.User(now)), worse,
                           c.config.maximize ? fmt::format("1/{} x", Num(*cfg.spike_factor))
                                             : fmt::format("{} x", Num(*cfg.spike_factor)),
                           Num(c.User(best))),
               c.User(now), c.User(bound), 0);
      }
    }
  }
}

void Race(Context& c) {
  const RaceRuleConfig& cfg = c.config.race;
  double target = c.User(*c.config.target_loss);
  // Any trial that got there counts, stopped ones included: the time it took is a measured fact,
  // once its curve has min_points behind the crossing (a smoothed dip of two points is not).
  // The earliest, and the earliest of another configuration than it: a trial's winner is the
  // earliest that is not its sibling (siblings are not rivals), one of these two.
  struct Reach {
    std::optional<size_t> trial;
    double t = kInf;
  } first, second;
  std::vector<std::optional<double>> reached(c.trials.size());  // ReachTime of those with min_points
  for (size_t j = 0; j < c.trials.size(); ++j) {
    if (static_cast<int>(c.series[j].points) < c.config.evidence.min_points) continue;
    reached[j] = ReachTime(c.series[j], target);
    if (!reached[j]) continue;
    if (*reached[j] < first.t) {
      if (first.trial && c.Rival(*first.trial, j)) second = first;
      first = {j, *reached[j]};
    } else if (*reached[j] < second.t && c.Rival(*first.trial, j)) {
      second = {j, *reached[j]};
    }
  }
  if (!first.trial) return;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (!c.Candidate(i) || !c.Evident(i)) continue;
    const Series& me = c.series[i];
    // A running evident trial has min_points: reached[i] is its ReachTime.
    if (reached[i]) continue;
    const Reach& winner = c.Rival(i, *first.trial) ? first : second;
    if (!winner.trial) continue;
    double best = winner.t, limit = best * (1 + cfg.slack);
    if (me.last_t() <= limit || me.last_t() < cfg.grace_s) continue;
    c.Stop(i, "race",
           fmt::format("at t={}: smoothed value {} has not reached the target {}, which trial {} reached at t={}{}",
                       Secs(me.last_t()), Num(c.User(me.s.back())), Num(c.User(target)), Name(c.trials[*winner.trial]),
                       Secs(best), cfg.slack > 0 ? fmt::format(" (+ slack {:.3g}: {})", cfg.slack, Secs(limit)) : ""),
           c.User(me.s.back()), c.User(target), 1);
  }
}

void Halving(Context& c) {
  const HalvingRuleConfig& cfg = c.config.halving;
  double max_time = cfg.max_time_s > 0 ? cfg.max_time_s : c.config.budget_s > 0 ? c.config.budget_s : kInf;
  // Per rung (by index), every trial that reached it with its smoothed value there, sorted, and
  // each trial's place in that order: the same for every trial judged, so built once per evaluation.
  struct Rung {
    std::vector<std::pair<double, size_t>> values;
    std::vector<size_t> place;  // per trial; values.size() if it did not reach the rung
  };
  std::vector<std::optional<Rung>> at_rung;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (!c.Candidate(i) || !c.Evident(i)) continue;
    const Series& me = c.series[i];
    // Every rung the trial has passed, earliest first: a rung is judged again as more trials
    // reach it, so the answer does not depend on who happened to arrive first.
    size_t k = 0;
    for (double rung = cfg.min_time_s; rung < max_time && rung <= me.last_t(); rung *= cfg.eta, ++k) {
      if (!me.Reached(rung)) continue;
      if (at_rung.size() <= k) at_rung.resize(k + 1);
      if (!at_rung[k]) {
        Rung& g = at_rung[k].emplace();
        std::vector<std::pair<double, size_t>>& v = g.values;
        for (size_t j = 0; j < c.series.size(); ++j) {
          if (c.series[j].Reached(rung)) v.emplace_back(c.series[j].At(rung), j);
        }
        std::sort(v.begin(), v.end());
        g.place.assign(c.series.size(), v.size());
        for (size_t r = 0; r < v.size(); ++r) g.place[v[r].second] = r;
      }
      const std::vector<std::pair<double, size_t>>& values = at_rung[k]->values;
      // The trial is ranked among those that reached the rung but its siblings: their places, in order.
      std::vector<size_t> siblings;
      if (c.HasSiblings(i)) {
        for (size_t j : c.kin_members[c.kin[i]]) {
          if (j != i && at_rung[k]->place[j] < values.size()) siblings.push_back(at_rung[k]->place[j]);
        }
        std::sort(siblings.begin(), siblings.end());
      }
      size_t ranked = values.size() - siblings.size();
      if (static_cast<int>(ranked) < cfg.min_trials) continue;
      size_t keep = std::max<size_t>(1, static_cast<size_t>(static_cast<double>(ranked) / cfg.eta));
      size_t at = keep - 1;  // the keep-th of them, siblings skipped
      for (size_t place : siblings) at += place <= at;
      auto [cut, at_cut] = values[at];
      double mine = me.At(rung);
      // The best at a rung may since have been stopped by another rule; the best live trial stays,
      // or every trial could be stopped for the sake of ones already gone.
      bool best_live = true;
      for (size_t r = 0; r < values.size() && values[r].first < mine && best_live; ++r) {
        size_t j = values[r].second;
        best_live = j == i || c.Sibling(i, j) || !c.live[j];
      }
      double margin = c.Margin(i, at_cut);
      if (mine > cut + margin && !best_live) {
        c.Stop(i, "halving",
               fmt::format("rung at t={}: smoothed value {} is not in the best {} of {} trials (cut-off {}, "
                           "noise margin {})",
                           Secs(rung), Num(c.User(mine)), keep, ranked, Num(c.User(cut)), Num(margin)),
               c.User(mine), c.User(cut), static_cast<int>(ranked));
        break;
      }
    }
  }
}

std::vector<std::pair<double, size_t>> MedianLatest(const Context& c) {
  // The evident trials' latest times, latest first (ties by index): the same for every trial judged.
  std::vector<std::pair<double, size_t>> latest;
  for (size_t j = 0; j < c.series.size(); ++j) {
    if (c.Evident(j)) latest.emplace_back(c.series[j].last_t(), j);
  }
  std::sort(latest.begin(), latest.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  return latest;
}

std::optional<double> MedianTime(const Context& c, size_t i, const std::vector<std::pair<double, size_t>>& latest) {
  const MedianRuleConfig& cfg = c.config.median;
  if (cfg.min_trials < 1 || !c.Candidate(i) || !c.Evident(i)) return std::nullopt;
  const Series& me = c.series[i];
  // Compare at the latest time that enough other trials have reached: in a sweep where all
  // trials run at once, the trial that started first is always ahead, and comparing only at
  // its own latest time would never find rivals that got there, so it could never be stopped.
  // That is the min_trials-th latest time of the other evident trials (its siblings are not others:
  // here and below, a trial is compared only with other configurations).
  std::optional<double> reach;
  int seen = 0;
  for (const auto& [when, j] : latest) {
    if (c.Rival(i, j) && ++seen == cfg.min_trials) {
      reach = when;
      break;
    }
  }
  if (!reach) return std::nullopt;
  double at = std::min(me.last_t(), *reach);
  if (at < cfg.grace_s || at <= me.first_t()) return std::nullopt;
  return at;
}

void MedianJudge(Context& c, size_t i, double at, std::vector<double>& others, double se, bool may_skip) {
  const MedianRuleConfig& cfg = c.config.median;
  if (static_cast<int>(others.size()) < cfg.min_trials) return;
  se /= static_cast<double>(others.size());
  double mine = c.series[i].RunningAverage(at);
  double margin = std::hypot(c.Se(i), se);
  if (may_skip) {
    // The quantile is at least the lo-th smallest of the others (Quantile adds a non-negative part
    // to it): when that is at least `floor`, and floor + margin is not below mine, the trial stays,
    // and counting the others below floor is enough to know it, without selecting them.
    size_t lo = static_cast<size_t>(std::floor(cfg.quantile * static_cast<double>(others.size() - 1)));
    double floor = mine - margin;
    if (!(mine > floor + margin)) {
      size_t below = 0;
      for (double v : others) below += v < floor;
      if (below <= lo) return;
    }
  }
  double median = Quantile(others, cfg.quantile);
  if (mine > median + margin) {
    c.Stop(i, "median",
           fmt::format("at t={}: running average of smoothed value {} worse than the {} {} of {} trials by more "
                       "than the noise margin {}",
                       Secs(at), Num(c.User(mine)),
                       cfg.quantile == 0.5 ? "median" : fmt::format("{}-quantile", cfg.quantile), Num(c.User(median)),
                       others.size(), Num(margin)),
           c.User(mine), c.User(median), static_cast<int>(others.size()));
  }
}

void Median(Context& c) {
  std::vector<std::pair<double, size_t>> latest = MedianLatest(c);
  for (size_t i = 0; i < c.trials.size(); ++i) {
    std::optional<double> at = MedianTime(c, i, latest);
    if (!at) continue;
    std::vector<double> others;
    double se = 0;  // the others' typical standard error (times its quantile)
    for (size_t j = 0; j < c.series.size(); ++j) {
      if (c.Rival(i, j) && c.Evident(j) && c.series[j].Reached(*at)) {
        others.push_back(c.series[j].RunningAverage(*at));
        se += c.Se(j);
      }
    }
    MedianJudge(c, i, *at, others, se, false);
  }
}

void Patience(Context& c) {
  const PatienceRuleConfig& cfg = c.config.patience;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (!c.Candidate(i) || !c.Evident(i)) continue;
    const Series& me = c.series[i];
    double now = me.last_t();
    double split = now - cfg.window_s;
    if (now < cfg.grace_s || split < me.first_t()) continue;
    double before = me.At(split), recent = kInf;
    for (size_t k = 0; k < me.t.size(); ++k) {
      if (me.t[k] <= split) before = std::min(before, me.s[k]);
      else recent = std::min(recent, me.s[k]);
    }
    // An improvement within the curve's own noise (a low point among noisy ones) is none.
    double delta = c.Margin(i, i, cfg.min_delta);
    if (recent > before - delta) {
      c.Stop(i, "patience",
             fmt::format("at t={}: best smoothed value in the last {} is {}, not better than {} by {} (min_delta, "
                         "or the curve's noise)",
                         Secs(now), Secs(cfg.window_s), Num(c.User(recent)), Num(c.User(before)), Num(delta)),
             c.User(recent), c.User(before - delta), 0);
    }
  }
}

}  // namespace sweep::stopping
