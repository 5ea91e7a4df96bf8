// The TPE sampler; see tpe.h.
#include "sampler/tpe.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <set>

namespace sweep::sampler {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLogSqrt2Pi = 0.91893853320467274178;
// Finite spaces up to this many configurations times components are scored exhaustively.
constexpr double kExhaustiveWork = 4e6;

// splitmix64: the same numbers on every compiler and standard library (std::normal_distribution
// is not), which a resumed run on another machine relies on.
uint64_t Next(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
double Uniform(uint64_t& s) { return static_cast<double>(Next(s) >> 11) * 0x1.0p-53; }
double Normal(uint64_t& s) {
  double u = std::max(Uniform(s), 1e-300), v = Uniform(s);
  return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
}

bool Numeric(const Dimension& d) { return d.kind != Dimension::Kind::kCategorical; }

// Internal (modelled) bounds of a numeric dimension: log scale where asked; integers own the
// half-unit around them, so each integer is equally likely under a flat density.
std::pair<double, double> Bounds(const Dimension& d) {
  double lo = d.lo, hi = d.hi;
  if (d.kind == Dimension::Kind::kInt) {
    lo = std::ceil(d.lo) - 0.5;
    hi = std::floor(d.hi) + 0.5;
    if (d.log) lo = std::max(lo, std::ceil(d.lo) * 0.5);
  }
  if (d.log) return {std::log(lo), std::log(hi)};
  return {lo, hi};
}

double ToInternal(const Dimension& d, double x) { return Numeric(d) && d.log ? std::log(x) : x; }

double RoundDigits(double x, int digits) {
  if (x == 0 || !std::isfinite(x)) return x;
  double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
  return std::round(x * scale) / scale;
}

// A value of the dimension from an internal one: clamped, rounded to what a trial would carry.
double FromInternal(const Dimension& d, double u) {
  if (d.kind == Dimension::Kind::kCategorical) {
    return std::clamp(std::floor(u), 0.0, static_cast<double>(d.choices - 1));
  }
  double x = d.log ? std::exp(u) : u;
  if (d.kind == Dimension::Kind::kInt) return std::clamp(std::round(x), std::ceil(d.lo), std::floor(d.hi));
  return std::clamp(RoundDigits(x, d.digits), d.lo, d.hi);
}

double LogNormalCdfMass(double lo, double hi, double mu, double sigma) {
  double a = (lo - mu) / (sigma * M_SQRT2), b = (hi - mu) / (sigma * M_SQRT2);
  double mass = 0.5 * (std::erf(b) - std::erf(a));
  return std::log(std::max(mass, 1e-300));
}

// The newest this many observations of a density weigh 1; older ones weigh less, linearly down
// to 1 / n for the oldest (Optuna's default weights): the model follows where the search went.
constexpr size_t kFullWeight = 25;

std::vector<double> RecencyWeights(size_t n) {
  std::vector<double> w(n, 1.0);
  if (n <= kFullWeight) return w;
  size_t ramp = n - kFullWeight;
  double lo = 1.0 / static_cast<double>(n);
  for (size_t i = 0; i < ramp; ++i) {
    w[i] = ramp == 1 ? lo : lo + (1.0 - lo) * static_cast<double>(i) / static_cast<double>(ramp - 1);
  }
  return w;
}

// A pending trial's kernel in g (the constant liar): half an observation's width, twice its
// height at the centre. Why not an observation's kernel: with one width for l and g, a pending
// pick p next to a good observation b adds to g the same shape l has around b, so near p the
// ratio l / g is flat, not lower, and the next pick lands anywhere around b, p included (a
// batch of near-duplicates: the closest two picks 1.15x as far apart as without the liar).
// A narrower kernel makes l / g rise away from p; twice the height (weight 2 * 0.5^numeric
// dimensions) lowers the odds at p itself without pushing the whole batch out to the prior.
constexpr double kLiarWidth = 0.5, kLiarHeight = 2;

// Kernel widths (Options::width, prior_width), as the factor of Scott's rule (Optuna's
// multivariate TPE takes 0.2 for both densities, each with its own number of points). This
// study's observations: 0.15, better than 0.2 on every problem of bench/search_bench (1000 seeds,
// the joint density alone; Hartmann-6 in batches of 8: 0.512 against 0.594). Not narrower,
// though 0.13 is better still there: those objectives have no noise, a training run's loss has,
// and narrower kernels trust a lucky result more.
// Another study's (warm start): 0.2, wider, as they were measured on other hardware or another
// model, so each says less precisely where the good region is now. The wider kernels also carry
// what a categorical choice taught across the float ranges: at 0.15, narrow kernels of the
// prior's bad trials leave its worse optimizer unpunished away from them, and a warm start's
// first batch takes the prior's best optimizer less often (tests/tpe_runner_test.cc;
// search_bench --warm).

// Joint and independent (Options::independent): each density's log pdf mixes the joint density,
// 0.7, with the product of its marginals, 0.3. The joint learns knobs that only work together (each
// optimizer its own learning rate); the marginals carry what one knob taught (sgd is worse; x near
// 0.3 is good) across the other knobs' ranges, where narrow product kernels leave the joint with
// nothing but the flat prior. Candidates are still drawn from the joint l. Over 1000 seeds of
// search_bench (--independent 0 / 0.3 / 0.5 / 0.7 / 1), Hartmann-6 in batches of 8 gets 0.512 /
// 0.477 / 0.469 / 0.477 / 0.544 and the mixed problem with batches of 1 0.013 / 0.0085 / 0.009 /
// 0.0201 / 0.035: 0.3 is better than the joint alone in every cell; more independence loses the
// interactions the mixed problem (and a real space) has.

// A mixture of product kernels: one per observation, plus the prior (flat over the space).
class Parzen {
 public:
  // `points` oldest first (RecencyWeights); `bandwidth_n`: the number of observations the
  // kernels' width is set for (pending ones get kLiarWidth of it).
  Parzen(const std::vector<Dimension>& space, const std::vector<const Observation*>& points, const Options& options,
         size_t bandwidth_n)
      : space_(space), n_(points.size()), independent_(options.independent) {
    size_t dims = space.size();
    int numeric = static_cast<int>(std::count_if(space.begin(), space.end(), Numeric));
    // Scott's rule for a product kernel, as a fraction of each range (Optuna's multivariate
    // TPE), times options.width or options.prior_width by the observation's study.
    double scott = std::pow(static_cast<double>(std::max<size_t>(bandwidth_n, 1)), -1.0 / (numeric + 4));
    std::vector<double> w = RecencyWeights(n_);
    for (size_t i = 0; i < n_; ++i) {
      if (points[i]->outcome == Outcome::kPending) w[i] *= kLiarHeight * std::pow(kLiarWidth, numeric);
    }
    double prior_weight = options.prior_weight;
    double total = prior_weight;
    for (double x : w) total += x;
    log_w_.assign(n_ + 1, 0);
    for (size_t i = 0; i < n_; ++i) log_w_[i] = std::log(w[i] / total);
    log_w_[n_] = std::log(prior_weight / total);
    // Categorical kernels: each observation's choice plus a share of the prior, by count.
    double smooth = prior_weight / (static_cast<double>(n_) + prior_weight);
    mu_.assign((n_ + 1) * dims, 0);
    inv_sigma_.assign((n_ + 1) * dims, 0);
    log_norm_.assign((n_ + 1) * dims, 0);
    cat_.resize(dims);
    for (size_t j = 0; j < dims; ++j) {
      const Dimension& d = space[j];
      if (!Numeric(d)) {
        // Each observation's kernel: its choice plus a share of the prior over all choices.
        int c = d.choices;
        cat_[j].assign((n_ + 1) * c, 0);
        for (size_t i = 0; i < n_; ++i) {
          int x = static_cast<int>(points[i]->x[j]);
          double norm = 1 + smooth * c;
          for (int k = 0; k < c; ++k) cat_[j][i * c + k] = std::log((smooth + (k == x ? 1 : 0)) / norm);
        }
        for (int k = 0; k < c; ++k) cat_[j][n_ * c + k] = -std::log(static_cast<double>(c));
        continue;
      }
      auto [lo, hi] = Bounds(d);
      double range = hi - lo;
      for (size_t i = 0; i < n_; ++i) {
        double frac = (points[i]->source == 0 ? options.width : options.prior_width) * scott;
        double sigma = std::max(frac * range, range * 1e-3);
        double mu = std::clamp(ToInternal(d, points[i]->x[j]), lo, hi);
        double s = points[i]->outcome == Outcome::kPending ? sigma * kLiarWidth : sigma;
        mu_[i * dims + j] = mu;
        inv_sigma_[i * dims + j] = 1 / s;
        log_norm_[i * dims + j] = -std::log(s) - kLogSqrt2Pi - LogNormalCdfMass(lo, hi, mu, s);
      }
      mu_[n_ * dims + j] = 0;  // the prior: flat
      log_norm_[n_ * dims + j] = -std::log(range);
    }
  }

  // log density at an internal point (numeric dimensions internal, categorical as indices): the
  // mixture of the joint density (the product kernels) and, with weight options.independent, the
  // product of its marginals.
  double LogPdf(const std::vector<double>& u) const {
    size_t dims = space_.size();
    double best = -kInf;
    scratch_.resize(n_ + 1);
    terms_.resize((n_ + 1) * dims);
    for (size_t i = 0; i <= n_; ++i) {
      double s = log_w_[i];
      for (size_t j = 0; j < dims; ++j) {
        const Dimension& d = space_[j];
        double t;
        if (!Numeric(d)) {
          t = cat_[j][i * d.choices + static_cast<int>(u[j])];
        } else if (i == n_) {
          t = log_norm_[i * dims + j];
        } else {
          double z = (u[j] - mu_[i * dims + j]) * inv_sigma_[i * dims + j];
          t = log_norm_[i * dims + j] - 0.5 * z * z;
        }
        terms_[i * dims + j] = log_w_[i] + t;
        s += t;
      }
      scratch_[i] = s;
      best = std::max(best, s);
    }
    double sum = 0;
    for (double s : scratch_) sum += std::exp(s - best);
    double joint = best + std::log(sum);
    if (independent_ <= 0) return joint;
    double marginals = 0;  // log of the product of the marginal densities
    for (size_t j = 0; j < dims; ++j) {
      double m = -kInf, msum = 0;
      for (size_t i = 0; i <= n_; ++i) m = std::max(m, terms_[i * dims + j]);
      for (size_t i = 0; i <= n_; ++i) msum += std::exp(terms_[i * dims + j] - m);
      marginals += m + std::log(msum);
    }
    double a = std::log1p(-independent_) + joint, b = std::log(independent_) + marginals, top = std::max(a, b);
    return top + std::log(std::exp(a - top) + std::exp(b - top));
  }

  // A draw in internal coordinates.
  std::vector<double> Sample(uint64_t& rng) const {
    size_t dims = space_.size();
    double r = Uniform(rng), acc = 0;
    size_t comp = n_;
    for (size_t i = 0; i <= n_; ++i) {
      acc += std::exp(log_w_[i]);
      if (r < acc) {
        comp = i;
        break;
      }
    }
    std::vector<double> u(dims);
    for (size_t j = 0; j < dims; ++j) {
      const Dimension& d = space_[j];
      if (!Numeric(d)) {
        double r2 = Uniform(rng), a2 = 0;
        int c = d.choices, pick = c - 1;
        for (int k = 0; k < c; ++k) {
          a2 += std::exp(cat_[j][comp * c + k]);
          if (r2 < a2) {
            pick = k;
            break;
          }
        }
        u[j] = pick;
        continue;
      }
      auto [lo, hi] = Bounds(d);
      if (comp == n_) {
        u[j] = lo + Uniform(rng) * (hi - lo);
        continue;
      }
      double mu = mu_[comp * dims + j], x = mu;
      bool inside = false;
      for (int tries = 0; tries < 64 && !inside; ++tries) {
        x = mu + Normal(rng) / inv_sigma_[comp * dims + j];
        inside = x >= lo && x <= hi;
      }
      u[j] = inside ? x : std::clamp(x, lo, hi);
    }
    return u;
  }

 private:
  const std::vector<Dimension>& space_;
  size_t n_;
  std::vector<double> log_w_, mu_, inv_sigma_, log_norm_;
  std::vector<std::vector<double>> cat_;  // per dimension: [component * choices + choice] log mass
  double independent_;
  mutable std::vector<double> scratch_, terms_;  // terms_: [component * dims + dim] log weight + log kernel
};

// Internal coordinates of a point (as the densities read it).
std::vector<double> Internal(const std::vector<Dimension>& space, const Point& x) {
  std::vector<double> u(space.size());
  for (size_t j = 0; j < space.size(); ++j) u[j] = ToInternal(space[j], x[j]);
  return u;
}

Point External(const std::vector<Dimension>& space, const std::vector<double>& u) {
  Point x(space.size());
  for (size_t j = 0; j < space.size(); ++j) x[j] = FromInternal(space[j], u[j]);
  return x;
}

int Gamma(size_t n) { return std::min(static_cast<int>(std::ceil(0.1 * static_cast<double>(n))), 25); }

// The number of configurations of a space of choices and integers (infinity with a float).
double FiniteSize(const std::vector<Dimension>& space) {
  double size = 1;
  for (const auto& d : space) {
    if (d.kind == Dimension::Kind::kFloat) return kInf;
    size *= d.kind == Dimension::Kind::kCategorical ? d.choices : std::floor(d.hi) - std::ceil(d.lo) + 1;
  }
  return size;
}

// Every configuration of a finite space, in lexicographic order.
std::vector<Point> Enumerate(const std::vector<Dimension>& space) {
  std::vector<Point> out{Point()};
  for (const auto& d : space) {
    std::vector<Point> next;
    double lo = d.kind == Dimension::Kind::kCategorical ? 0 : std::ceil(d.lo);
    double hi = d.kind == Dimension::Kind::kCategorical ? d.choices - 1 : std::floor(d.hi);
    for (const auto& p : out) {
      for (double v = lo; v <= hi; v += 1) {
        Point q = p;
        q.push_back(v);
        next.push_back(std::move(q));
      }
    }
    out = std::move(next);
  }
  return out;
}

class Proposer {
 public:
  Proposer(const std::vector<Dimension>& space, const Options& options, const Feasible& feasible)
      : space_(space), options_(options), feasible_(feasible), finite_size_(FiniteSize(space)) {}

  // One proposal given the history; nullopt when nothing feasible and new is left.
  std::optional<Point> ProposeOne(const std::vector<Observation>& history) {
    size_t own = 0;
    std::set<Point> taken;
    for (const auto& o : history) {
      if (o.source != 0) continue;
      ++own;
      taken.insert(o.x);
    }
    uint64_t rng = options_.seed * 0x9e3779b97f4a7c15ULL ^ (own + 1) * 0xd1b54a32d192ed03ULL;
    Next(rng);
    auto ok = [&](const Point& x) { return !taken.count(x) && (!feasible_ || feasible_(x)); };

    // Below / above: each source ranked within itself; completed before pruned; failed and
    // pending always above.
    std::vector<const Observation*> below, above;
    std::set<int> sources;
    for (const auto& o : history) sources.insert(o.source);
    for (int s : sources) {
      std::vector<const Observation*> ranked;
      for (const auto& o : history) {
        if (o.source != s) continue;
        if (o.outcome == Outcome::kComplete || o.outcome == Outcome::kPartial) ranked.push_back(&o);
        else if (o.outcome != Outcome::kIgnored) above.push_back(&o);
      }
      std::stable_sort(ranked.begin(), ranked.end(), [](const Observation* a, const Observation* b) {
        bool pa = a->outcome == Outcome::kPartial, pb = b->outcome == Outcome::kPartial;
        if (pa != pb) return pb;
        return a->value < b->value;
      });
      size_t n = 0;
      for (const auto& o : history) n += o.source == s && o.outcome != Outcome::kIgnored;
      size_t cut = std::min(ranked.size(), static_cast<size_t>(Gamma(n)));
      for (size_t i = 0; i < ranked.size(); ++i) (i < cut ? below : above).push_back(ranked[i]);
    }
    // Oldest first, as the recency weights read them (pointers into `history`, in its order).
    std::sort(below.begin(), below.end(), std::less<const Observation*>());
    std::sort(above.begin(), above.end(), std::less<const Observation*>());
    bool model = own >= static_cast<size_t>(options_.startup) && !below.empty();
    // A warm start needs no random start-up, not even for this study's first proposal.
    if (!sources.empty() && *sources.rbegin() > 0 && !below.empty()) model = true;

    if (!model) return RandomFeasible(rng, ok);
    // Each observation's kernel has one width in both densities, Scott's rule on every observation (by its
    // study; see Options::width): with a width of
    // its own, g (about nine times the points of l) would get narrower, taller kernels, and the
    // ratio would push candidates away from any point "above" by the width alone, even one next
    // to the best. With one width, l / g reads as the local share of good observations.
    size_t bandwidth_n = below.size() + above.size();
    Parzen l(space_, below, options_, bandwidth_n), g(space_, above, options_, bandwidth_n);
    auto score = [&](const Point& x) {
      auto u = Internal(space_, x);
      return l.LogPdf(u) - g.LogPdf(u);
    };
    double work = finite_size_ * static_cast<double>(below.size() + above.size() + 2);
    if (work <= kExhaustiveWork) {
      std::optional<Point> best;
      double best_score = -kInf;
      for (const Point& x : Enumerate(space_)) {
        if (!ok(x)) continue;
        // Ties (rare) go to the first in order: deterministic.
        double s = score(x);
        if (!best || s > best_score) best = x, best_score = s;
      }
      return best;
    }
    std::optional<Point> best;
    double best_score = -kInf;
    int scored = 0;
    for (int draws = 0; scored < options_.candidates && draws < options_.candidates * 20; ++draws) {
      Point x = External(space_, l.Sample(rng));
      if (!ok(x)) continue;
      ++scored;
      double s = score(x);
      if (!best || s > best_score) best = x, best_score = s;
    }
    if (best) return best;
    return RandomFeasible(rng, ok);
  }

 private:
  template <class Ok>
  std::optional<Point> RandomFeasible(uint64_t& rng, const Ok& ok) {
    for (int tries = 0; tries < 2000; ++tries) {
      Point x = RandomPoint(space_, rng);
      if (ok(x)) return x;
    }
    // A small finite space mostly taken or ruled out: look at every configuration.
    if (finite_size_ <= 1e6) {
      std::vector<Point> left;
      for (const Point& x : Enumerate(space_)) {
        if (ok(x)) left.push_back(x);
      }
      if (left.empty()) return std::nullopt;
      return left[static_cast<size_t>(Uniform(rng) * static_cast<double>(left.size()))];
    }
    return std::nullopt;
  }

  const std::vector<Dimension>& space_;
  const Options& options_;
  const Feasible& feasible_;
  double finite_size_;
};

}  // namespace

Point RandomPoint(const std::vector<Dimension>& space, uint64_t& rng) {
  Point x(space.size());
  for (size_t j = 0; j < space.size(); ++j) {
    const Dimension& d = space[j];
    if (!Numeric(d)) {
      x[j] = std::min(std::floor(Uniform(rng) * d.choices), static_cast<double>(d.choices - 1));
      continue;
    }
    auto [lo, hi] = Bounds(d);
    x[j] = FromInternal(d, lo + Uniform(rng) * (hi - lo));
  }
  return x;
}

std::vector<Point> Propose(const std::vector<Dimension>& space, std::vector<Observation> history, int k,
                           const Options& options, const Feasible& feasible) {
  Proposer proposer(space, options, feasible);
  std::vector<Point> out;
  for (int i = 0; i < k; ++i) {
    auto x = proposer.ProposeOne(history);
    if (!x) break;
    out.push_back(*x);
    // The constant liar: the pick is pending, so the next one is drawn away from it.
    history.push_back({*x, Outcome::kPending, 0, 0});
  }
  return out;
}

}  // namespace sweep::sampler
