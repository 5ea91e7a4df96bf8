// The study file's keys in one place (keys.h): the loader checks each table against its list here.
#include "study/keys.h"

#include "base/trial_state.h"

namespace sweep::study {
namespace {

struct KeyTable {
  std::string_view name;    // what the loader asks for
  std::string_view prefix;  // where its keys stand in the file, dotted ("*": a name the study chooses)
  std::vector<std::string_view> keys;
};

const std::vector<KeyTable>& Tables() {
  static const std::vector<KeyTable> tables = {
      {"", "", {"study", "objective", "cluster", "job", "search", "space", "retry", "stopping", "report", "notify"}},
      {"study", "study", {"name", "database", "metric_format", "metric_regex", "lease_timeout_s"}},
      {"study.metric_regex", "study.metric_regex", {"*"}},
      {"objective", "objective", {"metric", "mode", "rank_by", "logged_within"}},
      {"cluster", "cluster", {"transport",
                              "host",
                              "port",
                              "user",
                              "identity_file",
                              "known_hosts",
                              "partition",
                              "account",
                              "qos",
                              "workdir",
                              "max_concurrent",
                              "poll_interval_s",
                              "max_poll_interval_s",
                              "arrays",
                              "max_array_size",
                              "queue_ahead",
                              "query_gap_s",
                              "ssh_config",
                              "require_master",
                              "reauth_wait_s"}},
      {"job",
       "job",
       {"template", "nodes", "gpus_per_node", "cpus_per_task", "mem", "time_limit", "stage", "vars", "max_chain",
        "resume_marker", "monitor", "monitor_interval_s"}},
      {"job.vars", "job.vars", {"*"}},
      {"job.vars.text", "job.vars.*", {"value", "text", "option", "path"}},
      {"search", "search", {"sampler", "trials", "seed", "constraints", "seed_from", "repeats", "seed_var", "enqueue"}},
      {"search.seed_from", "search.seed_from", {"study", "top", "by"}},
      {"search.enqueue", "search.enqueue", {"*"}},
      {"space", "space", {"*"}},
      {"space.values", "space.*", {"values", "text", "option", "path"}},
      {"space.range", "space.*", {"min", "max", "log", "int"}},
      {"retry", "retry", RetryClasses()},
      {"report", "report", {"html", "csv_dir", "refresh_minutes", "baseline", "target"}},
      {"notify", "notify", {"command", "events", "timeout_s", "unreachable_minutes"}},
      {"stopping",
       "stopping",
       {"axis", "smoothing", "ema_alpha", "window", "budget_s", "target_loss", "min_points", "min_loss_points",
        "min_fraction", "noise_z", "divergence", "race", "halving", "median", "patience", "throughput"}},
      {"stopping.divergence", "stopping.divergence", {"nan", "max_loss", "spike_factor", "max_nan_iters", "grace_s"}},
      {"stopping.race", "stopping.race", {"slack", "grace_s"}},
      {"stopping.halving", "stopping.halving", {"eta", "min_time_s", "max_time_s", "min_trials"}},
      {"stopping.median", "stopping.median", {"grace_s", "min_trials", "quantile"}},
      {"stopping.patience", "stopping.patience", {"window_s", "min_delta", "grace_s"}},
      {"stopping.throughput",
       "stopping.throughput",
       {"params", "min_points", "grace_s", "rate_margin", "rate_horizon", "rival_speedup", "margin", "extrapolate",
        "lead"}},
  };
  return tables;
}

}  // namespace

const std::vector<std::string_view>& AllowedKeys(std::string_view table) {
  static const std::vector<std::string_view> none;
  for (const KeyTable& t : Tables()) {
    if (t.name == table) return t.keys;
  }
  return none;
}

std::vector<std::string> KnownKeys() {
  std::vector<std::string> keys;
  for (const KeyTable& t : Tables()) {
    for (std::string_view k : t.keys) {
      keys.push_back(t.prefix.empty() ? std::string(k) : std::string(t.prefix) + "." + std::string(k));
    }
  }
  return keys;
}

}  // namespace sweep::study
