// Tests of the [stopping] table's parsing and error messages.
#include "study/stopping_config.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace sweep::study {
namespace {

Result<StoppingConfig> Parse(const std::string& text, const std::vector<std::string>& parameters = {}) {
  toml::table root = toml::parse(text, std::string_view("study.toml"));
  const toml::table* stopping = root["stopping"].as_table();
  REQUIRE(stopping != nullptr);
  return ParseStoppingConfig(*stopping, "study.toml", parameters);
}

TEST_CASE("[stopping] parses every key") {
  auto c = Parse(R"(
[stopping]
axis = "gpu_time"
smoothing = "running_mean"
window = 7
budget_s = 3600
target_loss = 2.5
min_points = 20
min_loss_points = 7
min_fraction = 0.05
noise_z = 3
[stopping.divergence]
max_loss = 12.0
spike_factor = 10
max_nan_iters = 0
grace_s = 60
[stopping.race]
slack = 0.1
grace_s = 5
[stopping.halving]
eta = 4
min_time_s = 300
min_trials = 5
[stopping.median]
grace_s = 120
min_trials = 5
quantile = 0.25
[stopping.patience]
window_s = 600
min_delta = 0.001
[stopping.throughput]
params = ["mbs", "tp"]
grace_s = 30
rate_margin = 0.03
rate_horizon = 4
rival_speedup = 2
margin = 0.05
extrapolate = false
lead = false
)",
                 {"lr", "mbs", "tp"});
  REQUIRE(c.ok());
  CHECK(c->axis == TimeAxis::kGpuTime);
  CHECK(c->smoothing.kind == SmoothingKind::kRunningMean);
  CHECK(c->smoothing.window == 7);
  CHECK(c->budget_s == 3600);
  CHECK(c->evidence.min_points == 20);
  CHECK(c->evidence.min_loss_points == 7);
  CHECK(c->evidence.min_fraction == 0.05);
  CHECK(c->evidence.noise_z == 3);
  CHECK(*c->target_loss == 2.5);
  CHECK(c->divergence.enabled);
  CHECK(c->divergence.nan);
  CHECK(*c->divergence.max_loss == 12);
  CHECK(*c->divergence.spike_factor == 10);
  CHECK(*c->divergence.max_nan_iters == 0);
  CHECK(c->race.enabled);
  CHECK(c->race.slack == 0.1);
  CHECK(c->race.grace_s == 5);
  CHECK(c->halving.enabled);
  CHECK(c->halving.eta == 4);
  CHECK(c->halving.min_time_s == 300);
  CHECK(c->halving.min_trials == 5);
  CHECK(c->median.quantile == 0.25);
  CHECK(c->patience.window_s == 600);
  CHECK(c->throughput.params == std::vector<std::string>{"mbs", "tp"});
  CHECK(c->throughput.rival_speedup == 2);
  CHECK(c->throughput.rate_horizon == 4);
  CHECK_FALSE(c->throughput.extrapolate);
  CHECK_FALSE(c->throughput.lead);
  CHECK(c->AnyRule());
}

TEST_CASE("[stopping] alone: the benchmarked default rule set, with evidence thresholds", "[stopping]") {
  auto c = Parse("[stopping]\n");
  REQUIRE(c.ok());
  // What stopping_bench measures as "default" against issue 15's targets (README).
  CHECK(c->divergence.enabled);
  CHECK(c->divergence.nan);
  CHECK(c->throughput.enabled);
  CHECK(c->throughput.params.empty());
  CHECK(c->throughput.lead);
  CHECK_FALSE(c->median.enabled);
  CHECK_FALSE(c->halving.enabled);
  CHECK_FALSE(c->patience.enabled);
  CHECK_FALSE(c->race.enabled);
  CHECK(c->evidence.min_points == 10);
  CHECK(c->evidence.min_loss_points == 5);
  CHECK(c->evidence.min_fraction == 0.1);
  CHECK(c->evidence.noise_z == 2);
  CHECK(c->axis == TimeAxis::kTrainTime);
  CHECK(c->smoothing.kind == SmoothingKind::kEma);
  // With top-level options but no rule table, the same rules.
  auto b = Parse("[stopping]\nbudget_s = 600\n");
  REQUIRE(b.ok());
  CHECK(b->throughput.enabled);
  // A rule table present: that rule only (with the evidence thresholds all the same).
  auto m = Parse("[stopping.median]\n");
  REQUIRE(m.ok());
  CHECK(m->median.enabled);
  CHECK(m->median.min_trials == 3);
  CHECK_FALSE(m->throughput.enabled);
  CHECK_FALSE(m->divergence.enabled);
  CHECK(m->evidence.min_points == 10);
}

TEST_CASE("[stopping] errors name file, line and key, and suggest the closest key") {
  auto status = [](const std::string& text, const std::vector<std::string>& params = {}) {
    auto r = Parse(text, params);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
    return r.status().message();
  };
  CHECK(status("[stopping]\nsmothing = \"ema\"\n") ==
        "study.toml:2: unknown key 'stopping.smothing' (did you mean 'smoothing'?)");
  CHECK(status("[stopping.mediann]\n") == "study.toml:1: unknown key 'stopping.mediann' (did you mean 'median'?)");
  CHECK(status("[stopping.median]\ngrace = 5\n") ==
        "study.toml:2: unknown key 'stopping.median.grace' (did you mean 'grace_s'?)");
  CHECK(status("[stopping]\n\naxis = \"wall\"\n") ==
        "study.toml:3: key 'stopping.axis': 'wall' is not one of 'train_time', 'gpu_time'");
  CHECK(status("[stopping.median]\nquantile = 2\n") ==
        "study.toml:2: key 'stopping.median.quantile': must be between 0 and 1");
  CHECK(status("[stopping.median]\nmin_trials = \"3\"\n") ==
        "study.toml:2: key 'stopping.median.min_trials': must be an integer");
  CHECK(status("[stopping.halving]\neta = 3\n") ==
        "study.toml:1: missing key 'stopping.halving.min_time_s' (the time of the first rung)");
  CHECK(status("[stopping.halving]\nmin_time_s = 10\neta = 1\n") ==
        "study.toml:3: key 'stopping.halving.eta': must be greater than 1");
  CHECK(status("[stopping.patience]\nwindow_s = 0\n") ==
        "study.toml:2: key 'stopping.patience.window_s': must be greater than 0");
  CHECK(status("[stopping]\nmedian = 3\n") == "study.toml:2: key 'stopping.median': must be a table");
  CHECK(status("[stopping.throughput]\nparams = [\"mbs\", \"tpp\"]\n", {"mbs", "tp", "lr"}) ==
        "study.toml:2: key 'stopping.throughput.params': 'tpp' is not a parameter of [space] (did you mean 'tp'?)");
  CHECK(status("[stopping.throughput]\nparams = [\"mbs\"]\nrate_horizon = 0\n", {"mbs"}) ==
        "study.toml:3: key 'stopping.throughput.rate_horizon': must be greater than 0");
  CHECK(status("[stopping.throughput]\nparams = []\n") ==
        "study.toml:2: key 'stopping.throughput.params': must be a non-empty list of parameter names");
  CHECK(status("[stopping]\nbudget_s = 10\n[stopping.race]\nslack = 0.1\n") ==
        "study.toml:1: missing key 'stopping.target_loss' (the loss that [stopping.race] races the trials to)");
  CHECK(status("[stopping]\ntarget_loss = 2\n[stopping.race]\nslack = -1\n") ==
        "study.toml:4: key 'stopping.race.slack': must be at least 0");
  CHECK(status("[stopping]\nmin_points = 2\n") ==
        "study.toml:2: key 'stopping.min_points': must be between 3 and 1000000");
  CHECK(status("[stopping]\nmin_loss_points = 2\n") ==
        "study.toml:2: key 'stopping.min_loss_points': must be between 3 and 1000000");
  CHECK(status("[stopping]\nmin_fraction = 1.5\n") ==
        "study.toml:2: key 'stopping.min_fraction': must be between 0 and 1");
  CHECK(status("[stopping.throughput]\ngrace_s = 1\n") ==
        "study.toml:1: missing key 'stopping.throughput.params' (the parameters that change speed but not loss per "
        "iteration)");
}

}  // namespace
}  // namespace sweep::study
