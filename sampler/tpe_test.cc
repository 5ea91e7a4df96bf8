// The TPE sampler's promises: feasibility, determinism, resume equivalence, batch diversity,
// and that it learns from completed, failed and warm-start trials.
#include "sampler/tpe.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <set>

namespace sweep::sampler {
namespace {

Dimension Float(const char* name, double lo, double hi, bool log = false) {
  Dimension d;
  d.name = name;
  d.lo = lo;
  d.hi = hi;
  d.log = log;
  return d;
}

Dimension Cat(const char* name, int choices) {
  Dimension d;
  d.name = name;
  d.kind = Dimension::Kind::kCategorical;
  d.choices = choices;
  return d;
}

Dimension Int(const char* name, double lo, double hi) {
  Dimension d = Float(name, lo, hi);
  d.kind = Dimension::Kind::kInt;
  return d;
}

double Branin(const Point& x) {
  double b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, t = 1 / (8 * M_PI);
  return std::pow(x[1] - b * x[0] * x[0] + c * x[0] - 6, 2) + 10 * (1 - t) * std::cos(x[0]) + 10;
}

// Runs `trials` trials in batches of `batch`, each batch proposed at once and then evaluated.
std::vector<Observation> Sweep(const std::vector<Dimension>& space, double (*f)(const Point&), int trials, int batch,
                               uint64_t seed, const Feasible& feasible = nullptr) {
  std::vector<Observation> h;
  Options o;
  o.seed = seed;
  while (static_cast<int>(h.size()) < trials) {
    auto xs = Propose(space, h, std::min(batch, trials - static_cast<int>(h.size())), o, feasible);
    if (xs.empty()) break;
    for (const auto& x : xs) h.push_back({x, Outcome::kComplete, f(x), 0});
  }
  return h;
}

double Best(const std::vector<Observation>& h) {
  double best = INFINITY;
  for (const auto& o : h) best = std::min(best, o.value);
  return best;
}

const std::vector<Dimension> kBranin = {Float("x1", -5, 10), Float("x2", 0, 15)};

TEST_CASE("tpe never proposes a configuration the feasibility check refuses", "[sampler]") {
  // Half of Branin's box is ruled out, including two of its three minima.
  auto feasible = [](const Point& x) { return x[0] + x[1] >= 8; };
  auto h = Sweep(kBranin, Branin, 60, 8, 3, feasible);
  REQUIRE(h.size() == 60);
  for (const auto& o : h) CHECK(o.x[0] + o.x[1] >= 8);

  // A finite space with four feasible configurations: all four once, then nothing more.
  std::vector<Dimension> grid = {Cat("tp", 4), Int("pp", 1, 4)};
  auto four = [](const Point& x) { return x[0] * 4 + (x[1] - 1) < 4; };
  Options o;
  std::vector<Observation> none;
  auto xs = Propose(grid, none, 10, o, four);
  REQUIRE(xs.size() == 4);
  std::set<Point> distinct(xs.begin(), xs.end());
  CHECK(distinct.size() == 4);
}

TEST_CASE("tpe is deterministic for a seed and differs between seeds", "[sampler]") {
  auto a = Sweep(kBranin, Branin, 30, 4, 7);
  auto b = Sweep(kBranin, Branin, 30, 4, 7);
  auto c = Sweep(kBranin, Branin, 30, 4, 8);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i].x == b[i].x);
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i].x == c[i].x;
  CHECK(same == 0);
}

TEST_CASE("tpe proposes after a restart what it would have proposed without one", "[sampler]") {
  // A run interrupted halfway through submitting a batch: the first picks are in the database as
  // pending trials, and the resumed run asks for the rest.
  auto h = Sweep(kBranin, Branin, 20, 4, 5);
  h[17].outcome = Outcome::kPending;  // still running
  h[18].outcome = Outcome::kPartial;  // pruned at its value then
  h[19].outcome = Outcome::kInfeasible;
  Options o;
  o.seed = 5;
  auto whole = Propose(kBranin, h, 6, o, nullptr);
  REQUIRE(whole.size() == 6);
  auto first = Propose(kBranin, h, 2, o, nullptr);
  auto resumed_history = h;
  for (const auto& x : first) resumed_history.push_back({x, Outcome::kPending, 0, 0});
  auto rest = Propose(kBranin, resumed_history, 4, o, nullptr);
  REQUIRE(rest.size() == 4);
  CHECK(first[0] == whole[0]);
  CHECK(first[1] == whole[1]);
  for (int i = 0; i < 4; ++i) CHECK(rest[i] == whole[2 + i]);
}

double MinDistance(const std::vector<Point>& xs) {
  double best = INFINITY;
  for (size_t i = 0; i < xs.size(); ++i) {
    for (size_t j = i + 1; j < xs.size(); ++j) {
      best = std::min(best, std::hypot((xs[i][0] - xs[j][0]) / 15, (xs[i][1] - xs[j][1]) / 15));
    }
  }
  return best;
}

TEST_CASE("a batch is spread out: each pick is a pending trial the next one avoids", "[sampler]") {
  double spread = 0, spread_alone = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    auto h = Sweep(kBranin, Branin, 30, 1, seed);
    Options o;
    o.seed = seed;
    auto batch = Propose(kBranin, h, 8, o, nullptr);
    REQUIRE(batch.size() == 8);
    // The same eight picks without the liar: each from the ended trials alone (other streams).
    std::vector<Point> alone;
    for (int i = 0; i < 8; ++i) {
      auto with_ignored = h;
      for (int j = 0; j < i; ++j) with_ignored.push_back({{-100.0 - j, -100.0}, Outcome::kIgnored, 0, 0});
      alone.push_back(Propose(kBranin, with_ignored, 1, o, nullptr).at(0));
    }
    spread += MinDistance(batch);
    spread_alone += MinDistance(alone);
  }
  // The closest two picks of a batch are, on average, several times further apart.
  CHECK(spread > 2 * spread_alone);
}

TEST_CASE("tpe finds Branin's minimum better than random search", "[sampler]") {
  int wins = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    double tpe = Best(Sweep(kBranin, Branin, 50, 8, seed));
    uint64_t rng = seed;
    double random = INFINITY;
    for (int i = 0; i < 50; ++i) random = std::min(random, Branin(RandomPoint(kBranin, rng)));
    wins += tpe < random;
  }
  CHECK(wins >= 8);
}

TEST_CASE("tpe learns failed regions and warm starts from another study", "[sampler]") {
  std::vector<Dimension> space = {Cat("mbs", 4), Float("lr", 1e-4, 1e-1, true)};
  // mbs 3 always runs out of memory; among the rest the loss is best near lr 1e-2 and mbs 1.
  auto loss = [](const Point& x) { return std::pow(std::log10(x[1]) + 2, 2) + 0.1 * std::fabs(x[0] - 1); };
  std::vector<Observation> h;
  uint64_t rng = 11;
  for (int i = 0; i < 40; ++i) {
    Point x = RandomPoint(space, rng);
    bool oom = x[0] == 3;
    h.push_back({x, oom ? Outcome::kInfeasible : Outcome::kComplete, oom ? 0 : loss(x), 0});
  }
  Options o;
  auto next = Propose(space, h, 8, o, nullptr);
  REQUIRE(next.size() == 8);
  int oom_picks = 0;
  for (const auto& x : next) oom_picks += x[0] == 3;
  CHECK(oom_picks <= 1);

  // The same observations from another study: no random start-up, the first picks go near its best.
  for (auto& obs : h) obs.source = 1;
  auto warm = Propose(space, h, 4, o, nullptr);
  REQUIRE(warm.size() == 4);
  for (const auto& x : warm) CHECK(std::fabs(std::log10(x[1]) + 2) < 0.75);
  // Without it the first picks are random: on average far further from it.
  auto cold = Propose(space, {}, 4, o, nullptr);
  double warm_err = 0, cold_err = 0;
  for (int i = 0; i < 4; ++i) {
    warm_err += std::fabs(std::log10(warm[i][1]) + 2);
    cold_err += std::fabs(std::log10(cold[i][1]) + 2);
  }
  CHECK(warm_err < cold_err);
}

}  // namespace
}  // namespace sweep::sampler
