// Study: what a study file (TOML) asks for, as loaded and checked (loader.h) before anything
// touches the cluster. The file format is versioned by what the loader accepts.
// Module study/: the study file; uses base/ only (its vocabulary: params.h, metric_format.h,
// stopping_config.h). The template is read, not checked: run/trial_script.h.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "base/metric_format.h"
#include "base/params.h"
#include "base/status.h"
#include "base/stopping_settings.h"

namespace sweep::study {

struct ParamSpec {
  std::string name;
  std::vector<ParamValue> choices;  // a list in the study file
  // Or a range for the random sampler: { min = .., max = .., log = true, int = false }.
  std::optional<double> min, max;
  bool log = false;
  bool integer = false;
  // `{ values = [...], text = true }`: its string values may hold characters outside the safe
  // alphabet (base/params.h), and the template may then name it only where the shell treats it
  // as data (a variable's value, a comment; run/trial_script.h checks).
  bool text = false;
  // `option = true`: its values may begin with '-' (not only numbers); the template may then put it
  // only after `--` or as `--flag={{name}}`. `path = true`: its values may be absolute or climb
  // with '..', and are normalised (base/params.h: ValueShapeProblem).
  bool option = false;
  bool path = false;
  int line = 0;
};

struct Constraint {
  std::string expr;
  int line = 0;
};

struct ClusterSpec {
  std::string transport = "ssh";  // "ssh" (libssh) | "openssh" (the system's ssh) | "local"
  std::string host;
  int port = 22;
  std::string user;
  std::string identity_file;
  std::string known_hosts;
  std::string ssh_config;       // empty: ~/.ssh/config
  bool require_master = false;  // openssh: use the master the user opened, never open one
  // How long a run waits, backing off as in an outage, for a login that only a human can give
  // (a second factor, a master to reopen) before it stops with "re-authentication needed".
  double reauth_wait_s = 900;
  bool remote() const { return transport != "local"; }
  std::string partition, account, qos;
  std::string workdir;             // on the cluster; scripts/ and logs/ go under it
  int max_concurrent = 4;          // trials running at once (arrays are throttled to it; see queue_ahead)
  double poll_interval_s = 5;      // the wait right after something changed
  double max_poll_interval_s = 0;  // the wait grows up to this while nothing changes (default 4x)
  // Trials that share a template's directives and resources go to Slurm as one job array
  // (sbatch --array=...%N, N from max_concurrent). Off: one sbatch per trial.
  bool arrays = true;
  int max_array_size = 1000;  // Slurm's default MaxArraySize is 1001 (indices 0-1000)
  // How many trials may wait in the queue beyond max_concurrent: -1 = all of them (the sweep
  // is queued at once and ages in the queue), 0 = submit only what can run (every result, e.g.
  // a CUDA OOM, can still shape what is submitted next).
  int queue_ahead = -1;
  // Every slurmsweep of this user on this machine polling the same cluster shares one pace: at
  // most one tick per query_gap_s among all of them (QueryPace). 0 = this study is not paced.
  double query_gap_s = 0.5;
};

struct JobSpec {
  std::string template_path;  // local file, resolved against the study file's directory
  std::string template_text;
  int nodes = 1;
  int gpus_per_node = 0;
  int cpus_per_task = 0;
  std::string mem;
  std::string time_limit;
  std::vector<std::string> stage;           // local files copied into workdir before submission
  std::map<std::string, std::string> vars;  // extra template variables
  // [job.vars] given as `{ value = "...", text = true }`: outside the safe alphabet, as ParamSpec::text.
  std::set<std::string> text_vars;
  // `{ value = "...", option = true }` / `path = true`: as ParamSpec::option and ParamSpec::path.
  std::set<std::string> option_vars, path_vars;
  // Time-limit chaining: a job that ends (completed or timeout) with `resume_marker` in its log
  // stopped early and left a checkpoint; the trial goes on in a new job, up to `max_chain` jobs,
  // and its metrics stay one curve. 0 = off.
  int max_chain = 0;
  std::string resume_marker = "saved checkpoint";
  // Telemetry (base/telemetry.h): a sampler beside the trainer writes LOG.telemetry every
  // `monitor_interval_s` seconds, stored as system/... metrics. `monitor_line`: of the key, for errors.
  bool monitor = false;
  int monitor_interval_s = 10;
  int monitor_line = 0;
};

struct Objective {
  std::string metric = "lm_loss";
  int metric_line = 0;  // of the `metric` key, for errors found while running (0: the default, not in the file)
  bool minimize = true;
  // Rank by the training time to reach the report's target (the smoothed objective first at or
  // past it) instead of by the final value: the headline of a throughput-and-convergence study.
  bool rank_by_time_to_target = false;
  // Metric lines (logged steps) of a trial within which the objective must show up: after that
  // many without it in any trial, `run` stops submitting (a misspelt name would waste the sweep).
  // 0: wait for a trial's end. -1 (default): 10, or 0 for an evaluation metric (a name starting
  // with val, eval or test), which shows up only every evaluation interval.
  int logged_within = -1;
  int LoggedWithin() const;
};

// The events [notify] can name, in the README's order.
inline constexpr const char* kNotifyEvents[] = {"study_finished", "trial_failed", "cluster_unreachable",
                                                "cluster_reachable", "quota_pause"};

// [retry]'s classes with their default counts (base/trial_state.h).
std::map<std::string, int> DefaultRetries();

struct Study {
  std::string path;  // the study file as given
  std::string dir;   // its directory, absolute
  std::string hash;  // of the file's bytes, for the report
  // Of what the trials that ran depend on: the file's settings without [objective] (unless
  // [stopping] rules read it), [report] and [notify], whose edit changes nothing stored. `run`
  // warns that trials keep their old settings only when this changed.
  std::string settings_hash;
  // Loadable but likely wrong ("file:line: ..."): `run` and `plan` print them.
  std::vector<std::string> warnings;
  std::string name;
  std::string database;  // local SQLite file, absolute
  // [study] lease_timeout_s: a run whose lease's heartbeat is this old is taken over by the next
  // (run/lease.h). Default: 120 s, or three of [cluster] max_poll_interval_s if longer.
  double lease_timeout_s = 120;
  // [study] metric_format and [study.metric_regex] (name = 'regex with one capture group').
  LogFormat metric_format;
  Objective objective;
  ClusterSpec cluster;
  JobSpec job;
  std::vector<ParamSpec> space;  // in file order
  std::string sampler = "grid";  // "grid" | "random" | "tpe" (model-based, sampler/tpe.h)
  int trials = 0;                // random, tpe: budget
  uint64_t seed = 1;
  std::vector<Constraint> constraints;
  // [search] repeats and seed_var (study/repeats.h): each configuration runs as `repeats` trials
  // that differ only in the seed the template gets as {{seed_var}} (0 .. repeats - 1). seed_var is
  // empty when the trials carry no seed (repeats = 1 and no seed_var given).
  int repeats = 1;
  std::string seed_var;
  int repeats_line = 0;  // of `repeats` (else `seed_var`): where the template check points
  // [[search.enqueue]]: configurations that run before the sampler's own, in file order, each
  // checked against [space] and the constraints at load.
  std::vector<Params> enqueue;
  // Phase 2 of a two-phase study: the `top` configurations of an earlier study (its file, whose
  // trials must all have ended), ranked `by` "iters_per_s" (throughput screen), "final" or
  // "time_to_target", each crossed with this study's own [space].
  struct SeedFrom {
    std::string study_path;  // absolute
    int top = 3;
    std::string by = "iters_per_s";
    int line = 0;
  };
  std::optional<SeedFrom> seed_from;
  // A tpe study's prior knowledge: every ended trial of another study (same parameters; the
  // hardware or model changed) informs the sampler from its first proposal. [search] seed_from
  // = { study = "old.toml" } with sampler = "tpe".
  struct WarmStart {
    std::string study_path;  // absolute
    int line = 0;
  };
  std::optional<WarmStart> warm_start;
  // Phase 2's seeds, resolved once by the application (ResolveSeeds, results/phase_seeds.h)
  // so that expansion and the report's trial list then take data, not phase 1's files. Unset
  // (tests, tools): read from phase 1 whenever they are needed.
  struct Seeds {
    Status status;  // not OK: why phase 1 cannot seed (yet); what expanding the study returns
    std::vector<std::vector<std::pair<std::string, ParamValue>>> configs;  // best first
    std::vector<std::string> param_names;                                  // phase 1's parameters, in its file's order
  };
  std::optional<Seeds> seeds;
  // The trials the file expands to, computed once with the seeds by the application (ResolveSeeds)
  // so that `status`, the report and its refresh during a run take them as data. Unset (tests,
  // tools, a file that cannot be expanded): expanded whenever they are needed.
  std::shared_ptr<const std::vector<TrialSpec>> expanded;
  // [report]: what the run loop keeps on disk while it works, and what the report compares with.
  struct Report {
    std::string html;            // default: DATABASE without .db + "-report.html"
    std::string csv_dir;         // default: DATABASE without .db + "-csv"
    double refresh_minutes = 5;  // the HTML is rewritten this often during a run; CSV at the end
    std::string baseline;        // trial key or parameter text (base/params_text.h) of values (ReportOptions)
    std::optional<double> target;
  } report;
  StoppingConfig stopping;  // [stopping]: early-stopping rules (early_stop.h); none by default
  // [retry]: how many times a trial that ended in a class is submitted again from scratch; the
  // classes and their defaults are base/trial_state.h's.
  std::map<std::string, int> retry = DefaultRetries();
  // [notify]: a local command `run` starts on each event (run/notify.h), the event as
  // JSON on its stdin. Unset: no notifications.
  struct Notify {
    std::string command;  // run with /bin/sh -c on this machine
    std::vector<std::string> events = {std::begin(kNotifyEvents), std::end(kNotifyEvents)};
    double timeout_s = 30;            // then it is killed (and the failure logged)
    double unreachable_minutes = 10;  // cluster_unreachable fires after this long without the cluster
    int line = 0;
  };
  std::optional<Notify> notify;
};

}  // namespace sweep::study
