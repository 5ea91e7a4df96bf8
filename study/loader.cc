// Loading and checking a study file; see loader.h. toml++ does the parsing; this file turns
// its nodes into a Study and says exactly where anything is wrong.
#include "study/loader.h"

#include "study/loader_walk.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <unordered_set>
#include <toml++/toml.h>

#include "base/params_text.h"
#include "base/text.h"
#include "base/trial_state.h"
#include "study/expr.h"
#include "study/keys.h"
#include "study/names.h"
#include "study/repeats_load.h"
#include "study/stopping_config.h"
#include "study/template_vars.h"
#include "study/toml_table.h"

namespace sweep::study {
namespace fs = std::filesystem;

namespace {

std::string Fnv1a64Hex(std::string_view data) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

// The hash of what the trials that ran depend on (Study::settings_hash): the file as TOML, in a
// fixed form (comments, spacing and key order do not count), without the tables nothing stored
// depends on. [objective] names what is read out of the stored metrics, unless [stopping] rules
// pruned trials by it.
std::string SettingsHash(const toml::table& root) {
  toml::table kept = root;
  kept.erase("report");
  kept.erase("notify");
  if (!kept.contains("stopping")) kept.erase("objective");
  std::ostringstream text;
  text << toml::toml_formatter(kept, toml::format_flags::none);
  return Fnv1a64Hex(text.str());
}

}  // namespace

std::string StudyFileHash(std::string_view text) { return Fnv1a64Hex(text); }

std::string Loader::Resolve(const std::string& dir, const std::string& p) const {
  if (p.empty()) return p;
  if (p.rfind("~/", 0) == 0) {
    const char* home = std::getenv("HOME");
    return (fs::path(home ? home : "/") / p.substr(2)).string();
  }
  fs::path path(p);
  return (path.is_absolute() ? path : fs::path(dir) / path).lexically_normal().string();
}

Status Loader::CheckDatabasePath(const toml::node* node, const std::string& database) const {
  struct stat st;
  if (::lstat(database.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    return Error(node, "study.database",
                 fmt::format("{} is {}; the database must be a regular file (or not exist yet)", database,
                             S_ISLNK(st.st_mode)   ? "a symbolic link"
                             : S_ISDIR(st.st_mode) ? "a folder"
                                                   : "a device, FIFO or socket"));
  }
  std::string parent = fs::path(database).parent_path().string();
  if (::stat(parent.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
    return Error(node, "study.database", fmt::format("{} is not a folder", parent));
  }
  return Status::OK();
}

Result<Study> Loader::Load(const std::string& text) {
  Study s;
  s.path = path_;
  s.dir = fs::absolute(fs::path(path_)).parent_path().string();
  s.hash = Fnv1a64Hex(text);
  toml::table root;
  try {
    root = toml::parse(text, path_);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(
        fmt::format("{}:{}:{}: {}", path_, e.source().begin.line, e.source().begin.column, e.description()));
  }
  s.settings_hash = SettingsHash(root);
  SWEEP_RETURN_IF_ERROR(CheckKeys(root, "", AllowedKeys("")));

  // [study]
  auto study = Table(root, "study", true);
  if (!study.ok()) return study.status();
  const toml::table& st = **study;
  SWEEP_RETURN_IF_ERROR(CheckKeys(st, "study", AllowedKeys("study")));
  SWEEP_RETURN_IF_ERROR(String(st, "study", "name", &s.name, true));
  if (!IsSafeName(s.name)) {
    return Error(st.get("name"), "study.name", "use 1-64 letters, digits, '_', '-' or '.' (not '.' or '..' alone)");
  }
  std::string db = s.name + ".db";
  SWEEP_RETURN_IF_ERROR(String(st, "study", "database", &db, false));
  s.database = Resolve(s.dir, db);
  SWEEP_RETURN_IF_ERROR(CheckDatabasePath(st.get("database") ? st.get("database") : st.get("name"), s.database));
  std::string format = "auto";  // the first metric line decides: a log is never read in the wrong format by default
  SWEEP_RETURN_IF_ERROR(String(st, "study", "metric_format", &format, false));
  if (!ParseMetricFormat(format, &s.metric_format.format)) {
    return Error(st.get("metric_format"), "study.metric_format", fmt::format("must be {}", kMetricFormatNames));
  }
  if (const toml::node* n = st.get("metric_regex")) {
    const toml::table* regexes = n->as_table();
    if (!regexes) return Error(n, "study.metric_regex", "must be a table of metric = 'regular expression'");
    for (const auto& [k, v] : *regexes) {
      std::string key = fmt::format("study.metric_regex.{}", k.str());
      auto pattern = v.value<std::string>();
      if (!v.is_string() || !pattern) return Error(&v, key, "must be a string (a regular expression)");
      MetricRegex r;
      std::string why;
      if (!CompileMetricRegex(std::string(k.str()), *pattern, &r, &why)) return Error(&v, key, why);
      s.metric_format.regexes.push_back(std::move(r));
    }
  }
  bool has_step = false;
  for (const MetricRegex& r : s.metric_format.regexes) has_step |= r.name == "step";
  if (s.metric_format.format == MetricFormat::kRegex && !has_step) {
    return Error(st.get("metric_format"), "study.metric_format",
                 "\"regex\" needs [study.metric_regex] with a step expression, e.g. step = 'iter (\\d+)'");
  }
  if (s.metric_format.format != MetricFormat::kRegex && has_step) {
    return Error(st.get("metric_regex"), "study.metric_regex.step",
                 "a step expression needs metric_format = \"regex\" (the format gives the step)");
  }

  // [objective]
  auto obj = Table(root, "objective", false);
  if (!obj.ok()) return obj.status();
  if (*obj) {
    SWEEP_RETURN_IF_ERROR(CheckKeys(**obj, "objective", AllowedKeys("objective")));
    SWEEP_RETURN_IF_ERROR(String(**obj, "objective", "metric", &s.objective.metric, false));
    if (const toml::node* m = (*obj)->get("metric")) s.objective.metric_line = static_cast<int>(m->source().begin.line);
    // An empty name matches no logged metric: run would submit trials and stop only once one ended.
    if (s.objective.metric.empty()) {
      return Error((*obj)->get("metric"), "objective.metric",
                   "is empty; name a metric the trainer logs (default lm_loss)");
    }
    std::string mode = "min";
    SWEEP_RETURN_IF_ERROR(String(**obj, "objective", "mode", &mode, false));
    if (mode != "min" && mode != "max")
      return Error((*obj)->get("mode"), "objective.mode", "must be \"min\" or \"max\"");
    s.objective.minimize = mode == "min";
    std::string rank_by = "final";
    SWEEP_RETURN_IF_ERROR(String(**obj, "objective", "rank_by", &rank_by, false));
    if (rank_by != "final" && rank_by != "time_to_target") {
      return Error((*obj)->get("rank_by"), "objective.rank_by", "must be \"final\" or \"time_to_target\"");
    }
    s.objective.rank_by_time_to_target = rank_by == "time_to_target";
    SWEEP_RETURN_IF_ERROR(Int(**obj, "objective", "logged_within", &s.objective.logged_within, 0, 1000000));
  }

  SWEEP_RETURN_IF_ERROR(LoadCluster(root, s));
  // After [cluster]: a run renews its lease once a tick, so the timeout must outlast the longest
  // wait between two ticks, or a live run would be taken over (run/lease.h).
  s.lease_timeout_s = std::max(120.0, 3 * s.cluster.max_poll_interval_s);
  SWEEP_RETURN_IF_ERROR(Number(st, "study", "lease_timeout_s", &s.lease_timeout_s, 1));
  if (s.lease_timeout_s < 2 * s.cluster.max_poll_interval_s) {
    return Error(st.get("lease_timeout_s"), "study.lease_timeout_s",
                 fmt::format("must be at least twice [cluster] max_poll_interval_s ({} s): a run renews its lease "
                             "once a tick",
                             2 * s.cluster.max_poll_interval_s));
  }
  SWEEP_RETURN_IF_ERROR(LoadSearch(root, s));
  SWEEP_RETURN_IF_ERROR(LoadJob(root, s));
  // After [space] and [job.vars]: the seed's name must not be theirs, enqueued values are checked against both.
  if (const toml::table* search = root["search"].as_table()) {
    SWEEP_RETURN_IF_ERROR(LoadRepeatsAndEnqueue(*search, path_, s));
  }
  SWEEP_RETURN_IF_ERROR(LoadRetry(root, s));
  SWEEP_RETURN_IF_ERROR(LoadReport(root, s));
  SWEEP_RETURN_IF_ERROR(LoadNotify(root, s));
  auto stopping = Table(root, "stopping", false);
  if (!stopping.ok()) return stopping.status();
  if (*stopping) {
    std::vector<std::string> names;
    for (const auto& p : s.space) names.push_back(p.name);
    auto cfg = ParseStoppingConfig(**stopping, path_, names);
    if (!cfg.ok()) return cfg.status();
    cfg->maximize = !s.objective.minimize;  // the rules judge the objective's negation
    s.stopping = std::move(*cfg);
    // The loss the trials race to is the report's target too, unless the report sets its own.
    if (!s.report.target && s.stopping.target_loss) s.report.target = s.stopping.target_loss;
  }
  return s;
}

Status Loader::LoadCluster(const toml::table& root, Study& s) {
  auto cl = Table(root, "cluster", true);
  if (!cl.ok()) return cl.status();
  const toml::table& c = **cl;
  SWEEP_RETURN_IF_ERROR(CheckKeys(c, "cluster", AllowedKeys("cluster")));
  ClusterSpec& k = s.cluster;
  SWEEP_RETURN_IF_ERROR(String(c, "cluster", "transport", &k.transport, false));
  if (k.transport != "ssh" && k.transport != "openssh" && k.transport != "local") {
    return Error(c.get("transport"), "cluster.transport", "must be \"ssh\", \"openssh\" or \"local\"");
  }
  SWEEP_RETURN_IF_ERROR(String(c, "cluster", "host", &k.host, k.remote()));
  if (k.remote() && (k.host.empty() || k.host[0] == '-')) {
    return Error(c.get("host"), "cluster.host", "must be a host name (not empty, not starting with '-')");
  }
  SWEEP_RETURN_IF_ERROR(Int(c, "cluster", "port", &k.port, 1, 65535));
  SWEEP_RETURN_IF_ERROR(String(c, "cluster", "user", &k.user, false));
  SWEEP_RETURN_IF_ERROR(String(c, "cluster", "identity_file", &k.identity_file, false));
  SWEEP_RETURN_IF_ERROR(String(c, "cluster", "known_hosts", &k.known_hosts, false));
  SWEEP_RETURN_IF_ERROR(String(c, "cluster", "ssh_config", &k.ssh_config, false));
  for (const char* key : {"identity_file", "known_hosts", "ssh_config"}) {
    // An empty path would silently mean the default under ~/.ssh: say so instead.
    if (c.get(key) && c.get(key)->value<std::string>().value_or("x").empty()) {
      return Error(c.get(key), fmt::format("cluster.{}", key), "is empty; leave the key out to use ~/.ssh's default");
    }
  }
  SWEEP_RETURN_IF_ERROR(Bool(c, "cluster", "require_master", &k.require_master));
  if (c.get("require_master") && k.transport != "openssh") {
    return Error(c.get("require_master"), "cluster.require_master",
                 "needs transport = \"openssh\" (a ControlMaster is OpenSSH's; libssh cannot use one)");
  }
  SWEEP_RETURN_IF_ERROR(Number(c, "cluster", "reauth_wait_s", &k.reauth_wait_s, 0));
  k.identity_file = Resolve(s.dir, k.identity_file);
  k.known_hosts = Resolve(s.dir, k.known_hosts);
  k.ssh_config = Resolve(s.dir, k.ssh_config);
  for (auto [key, out] : {std::pair{"partition", &k.partition}, {"account", &k.account}, {"qos", &k.qos}}) {
    SWEEP_RETURN_IF_ERROR(String(c, "cluster", key, out, false));
    if (!out->empty() && !IsSafeName(*out)) {
      return Error(c.get(key), fmt::format("cluster.{}", key), "use letters, digits, '_', '-' or '.'");
    }
  }
  SWEEP_RETURN_IF_ERROR(String(c, "cluster", "workdir", &k.workdir, true));
  if (!IsSafePath(k.workdir)) {
    return Error(c.get("workdir"), "cluster.workdir",
                 "must be an absolute path of letters, digits, '_', '-', '.' and '/' (it goes into #SBATCH lines)");
  }
  SWEEP_RETURN_IF_ERROR(Int(c, "cluster", "max_concurrent", &k.max_concurrent, 1, 100000));
  SWEEP_RETURN_IF_ERROR(Number(c, "cluster", "poll_interval_s", &k.poll_interval_s, 0.2));
  k.max_poll_interval_s = 4 * k.poll_interval_s;
  SWEEP_RETURN_IF_ERROR(Number(c, "cluster", "max_poll_interval_s", &k.max_poll_interval_s, k.poll_interval_s));
  SWEEP_RETURN_IF_ERROR(Bool(c, "cluster", "arrays", &k.arrays));
  SWEEP_RETURN_IF_ERROR(Int(c, "cluster", "max_array_size", &k.max_array_size, 2, 1000000));
  SWEEP_RETURN_IF_ERROR(Int(c, "cluster", "queue_ahead", &k.queue_ahead, -1, 1000000));
  SWEEP_RETURN_IF_ERROR(Number(c, "cluster", "query_gap_s", &k.query_gap_s, 0));
  return Status::OK();
}

Status Loader::LoadReport(const toml::table& root, Study& s) {
  std::string stem =
      s.database.size() > 3 && s.database.ends_with(".db") ? s.database.substr(0, s.database.size() - 3) : s.database;
  s.report.html = stem + "-report.html";
  s.report.csv_dir = stem + "-csv";
  auto rt = Table(root, "report", false);
  if (!rt.ok()) return rt.status();
  if (!*rt) return Status::OK();
  const toml::table& r = **rt;
  SWEEP_RETURN_IF_ERROR(CheckKeys(r, "report", AllowedKeys("report")));
  SWEEP_RETURN_IF_ERROR(String(r, "report", "html", &s.report.html, false));
  SWEEP_RETURN_IF_ERROR(String(r, "report", "csv_dir", &s.report.csv_dir, false));
  s.report.html = Resolve(s.dir, s.report.html);
  s.report.csv_dir = Resolve(s.dir, s.report.csv_dir);
  SWEEP_RETURN_IF_ERROR(Number(r, "report", "refresh_minutes", &s.report.refresh_minutes, 0.1));
  if (const toml::node* b = r.get("baseline")) {
    // A trial key, or the parameter values of the configuration the team runs today.
    if (auto key = b->value<std::string>(); b->is_string() && key) {
      s.report.baseline = *key;
    } else if (const toml::table* values = b->as_table()) {
      Params wanted;
      for (const auto& [k, v] : *values) {
        if (auto i = v.as_integer()) wanted.emplace_back(std::string(k.str()), i->get());
        else if (auto d = v.as_floating_point()) wanted.emplace_back(std::string(k.str()), d->get());
        else if (auto str = v.as_string()) wanted.emplace_back(std::string(k.str()), str->get());
        else if (auto bo = v.as_boolean()) wanted.emplace_back(std::string(k.str()), bo->get());
        else return Error(&v, fmt::format("report.baseline.{}", k.str()), "must be a value of the parameter");
        std::string_view key = k.str();  // clang < 16 cannot capture a structured binding
        // Phase 1's parameters (seed_from) are checked when phase 2 expands its trials.
        if (!s.seed_from &&
            std::none_of(s.space.begin(), s.space.end(), [&](const ParamSpec& p) { return p.name == key; })) {
          return Error(&v, fmt::format("report.baseline.{}", k.str()), "is not a parameter of [space]");
        }
      }
      s.report.baseline = ParamsText(wanted);
    } else {
      return Error(b, "report.baseline", "must be a trial key or a table of parameter values");
    }
  }
  if (const toml::node* t = r.get("target")) {
    if (!t->is_number()) return Error(t, "report.target", "must be a number (objective value that counts as reached)");
    s.report.target = t->value<double>();
  }
  return Status::OK();
}

Status Loader::LoadNotify(const toml::table& root, Study& s) {
  auto nt = Table(root, "notify", false);
  if (!nt.ok()) return nt.status();
  if (!*nt) return Status::OK();
  TableReader r(**nt, "notify", path_);
  SWEEP_RETURN_IF_ERROR(r.CheckKeys(AllowedKeys("notify"), /*list_known=*/true));
  Study::Notify n;
  n.line = LineOf(**nt);
  SWEEP_RETURN_IF_ERROR(r.String("command", &n.command, true));
  if (n.command.find_first_not_of(" \t") == std::string::npos) {
    return r.Error(*r.Get("command"), "command", "must not be empty (it is run with /bin/sh -c)");
  }
  SWEEP_RETURN_IF_ERROR(r.Positive("timeout_s", &n.timeout_s));
  SWEEP_RETURN_IF_ERROR(r.Positive("unreachable_minutes", &n.unreachable_minutes));
  if (const toml::node* ev = r.Get("events")) {
    const toml::array* list = ev->as_array();
    if (!list) return r.Error(*ev, "events", "must be a list of event names");
    n.events.clear();
    for (const toml::node& e : *list) {
      auto name = e.value<std::string>();
      std::vector<std::string_view> known(std::begin(kNotifyEvents), std::end(kNotifyEvents));
      if (!e.is_string() || std::find(known.begin(), known.end(), *name) == known.end()) {
        return r.Error(e, "events",
                       fmt::format("'{}' is not an event{}; events: {}", name.value_or("?"),
                                   name ? DidYouMean(*name, known) : "", fmt::join(known, ", ")));
      }
      n.events.push_back(*name);
    }
  }
  s.notify = std::move(n);
  return Status::OK();
}

Status Loader::LoadRetry(const toml::table& root, Study& s) {
  auto rt = Table(root, "retry", false);
  if (!rt.ok()) return rt.status();
  if (!*rt) return Status::OK();
  SWEEP_RETURN_IF_ERROR(TableReader(**rt, "retry", path_).CheckKeys(AllowedKeys("retry"), /*list_known=*/true));
  for (auto& [cls, n] : s.retry) SWEEP_RETURN_IF_ERROR(Int(**rt, "retry", cls, &n, 0, 100));
  return Status::OK();
}

Status Loader::LoadJob(const toml::table& root, Study& s) {
  auto jb = Table(root, "job", true);
  if (!jb.ok()) return jb.status();
  const toml::table& j = **jb;
  SWEEP_RETURN_IF_ERROR(CheckKeys(j, "job", AllowedKeys("job")));
  JobSpec& job = s.job;
  SWEEP_RETURN_IF_ERROR(String(j, "job", "template", &job.template_path, true));
  job.template_path = Resolve(s.dir, job.template_path);
  SWEEP_RETURN_IF_ERROR(Int(j, "job", "nodes", &job.nodes, 1, 100000));
  SWEEP_RETURN_IF_ERROR(Int(j, "job", "gpus_per_node", &job.gpus_per_node, 0, 1024));
  SWEEP_RETURN_IF_ERROR(Int(j, "job", "cpus_per_task", &job.cpus_per_task, 0, 100000));
  SWEEP_RETURN_IF_ERROR(String(j, "job", "mem", &job.mem, false));
  SWEEP_RETURN_IF_ERROR(String(j, "job", "time_limit", &job.time_limit, false));
  SWEEP_RETURN_IF_ERROR(Int(j, "job", "max_chain", &job.max_chain, 0, 1000));
  SWEEP_RETURN_IF_ERROR(String(j, "job", "resume_marker", &job.resume_marker, false));
  SWEEP_RETURN_IF_ERROR(Bool(j, "job", "monitor", &job.monitor));
  SWEEP_RETURN_IF_ERROR(Int(j, "job", "monitor_interval_s", &job.monitor_interval_s, 1, 3600));
  if (const toml::node* n = j.get("monitor")) job.monitor_line = static_cast<int>(n->source().begin.line);
  if (j.get("monitor_interval_s") && !job.monitor) {
    return Error(j.get("monitor_interval_s"), "job.monitor_interval_s",
                 "sets the telemetry interval, but telemetry is off: add monitor = true");
  }
  if (job.max_chain > 0 && job.resume_marker.empty()) {
    return Error(j.get("resume_marker"), "job.resume_marker", "chaining needs a non-empty marker");
  }
  // Slurm's own syntaxes, checked here so that a typo fails the study file, not every sbatch.
  static const std::regex kMem("[0-9]+[KMGTkmgt]?");
  static const std::regex kTime("([0-9]+-)?[0-9]+(:[0-9]+){0,2}|UNLIMITED|INFINITE|unlimited|infinite");
  if (!job.mem.empty() && !std::regex_match(job.mem, kMem)) {
    return Error(j.get("mem"), "job.mem",
                 fmt::format("'{}' is not a Slurm memory size: a number with an optional K, M, G or T suffix, "
                             "e.g. \"100M\" or \"64G\"",
                             job.mem));
  }
  if (!job.time_limit.empty() && !std::regex_match(job.time_limit, kTime)) {
    return Error(j.get("time_limit"), "job.time_limit",
                 fmt::format("'{}' is not a Slurm time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS, "
                             "e.g. \"01:30:00\"",
                             job.time_limit));
  }
  if (const toml::node* n = j.get("stage")) {
    const toml::array* arr = n->as_array();
    if (!arr) return Error(n, "job.stage", "must be a list of local file paths");
    for (const toml::node& e : *arr) {
      auto v = e.value<std::string>();
      if (!e.is_string() || !v) return Error(&e, "job.stage", "each entry must be a string path");
      std::string p = Resolve(s.dir, *v);
      if (!fs::is_regular_file(p)) return Error(&e, "job.stage", fmt::format("no such file: {}", p));
      job.stage.push_back(p);
    }
  }
  if (const toml::node* n = j.get("vars")) {
    const toml::table* vars = n->as_table();
    if (!vars) return Error(n, "job.vars", "must be a table of name = value");
    for (const auto& [k, v] : *vars) {
      std::string full = fmt::format("job.vars.{}", k.str());
      if (!IsIdentifier(k.str())) return Error(&v, full, "variable names must be identifiers");
      if (IsBuiltinTemplateVar(k.str()))
        return Error(&v, full, "this name is reserved for a built-in template variable");
      std::string name(k.str());
      const toml::node* value = &v;
      // `{ value = "...", text = true }`: a string outside the safe alphabet (as [space] lists);
      // `option = true`, `path = true`: a string of another shape (base/params.h).
      if (const toml::table* form = v.as_table()) {
        SWEEP_RETURN_IF_ERROR(CheckKeys(*form, full, AllowedKeys("job.vars.text")));
        value = form->get("value");
        if (!value || !value->is_string()) return Error(&v, full + ".value", "must be a string");
        if (!form->get("text") && !form->get("option") && !form->get("path")) {
          return Error(&v, full, "declares nothing: give text = true, option = true or path = true");
        }
        for (auto [flag, set] : {std::pair{"text", &job.text_vars}, std::pair{"option", &job.option_vars},
                                 std::pair{"path", &job.path_vars}}) {
          const toml::node* t = form->get(flag);
          if (!t) continue;
          if (!t->is_boolean()) return Error(t, full + "." + flag, "must be true or false");
          if (t->value<bool>().value_or(false)) set->insert(name);
        }
      }
      if (auto str = value->value<std::string>(); value->is_string() && str) {
        if (!job.text_vars.count(name) && !IsSafeValue(*str)) {
          return Error(value, full, UnsafeValueMessage(*str, name, "{ value = \"...\", text = true }"));
        }
        // A declared path is normalised before anything sees it (the template, `plan`).
        if (job.path_vars.count(name)) *str = fs::path(*str).lexically_normal().string();
        job.vars[name] = *str;
      } else if (auto i = v.as_integer()) job.vars[name] = std::to_string(i->get());
      else if (auto d = v.as_floating_point()) job.vars[name] = fmt::format("{}", d->get());
      else if (auto b = v.as_boolean()) job.vars[name] = b->get() ? "true" : "false";
      else return Error(&v, full, "must be a string, number or boolean");
      if (std::string problem =
              ValueShapeProblem(job.vars[name], job.option_vars.count(name) > 0, job.path_vars.count(name) > 0);
          !problem.empty()) {
        return Error(value, full, ValueShapeMessage(job.vars[name], name, problem, "{{ value = \"...\", {} }}"));
      }
    }
  }
  for (const auto& p : s.space) {
    if (job.vars.count(p.name)) return ErrorAt(p.line, "space." + p.name, "also defined in [job.vars]; pick one");
  }

  // A regular file of sane size: /dev/zero or a FIFO would exhaust memory or hang the loader.
  std::error_code ec;
  if (!fs::is_regular_file(job.template_path, ec)) {
    return Error(j.get("template"), "job.template", fmt::format("{} is not a regular file", job.template_path));
  }
  if (fs::file_size(job.template_path, ec) > (1u << 20)) {
    return Error(j.get("template"), "job.template", fmt::format("{} is larger than 1 MiB", job.template_path));
  }
  std::ifstream in(job.template_path, std::ios::binary);
  if (!in) return Error(j.get("template"), "job.template", fmt::format("cannot read {}", job.template_path));
  std::stringstream ss;
  ss << in.rdbuf();
  job.template_text = ss.str();
  return Status::OK();
}

Result<Study> ParseStudy(const std::string& text, const std::string& path) { return Loader(path).Load(text); }

Result<Study> LoadStudy(const std::string& path) {
  // A regular file of at most kMaxStudyFileBytes: /dev/zero would exhaust memory, a FIFO would
  // block the loader forever (O_NONBLOCK opens it without waiting for a writer; fstat refuses it).
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return Status::NotFound(fmt::format("cannot read study file {}: {}", path, std::strerror(errno)));
  std::unique_ptr<int, void (*)(int*)> closer(&fd, [](int* f) { ::close(*f); });
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return Status::IOError(fmt::format("cannot read study file {}: {}", path, std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) {
    return Status::InvalidArgument(
        fmt::format("study file {} is not a regular file (a FIFO, a device or a folder)", path));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxStudyFileBytes) {
    return Status::InvalidArgument(fmt::format("study file {} is {} bytes, more than the limit of {} ({} MiB)", path,
                                               st.st_size, kMaxStudyFileBytes, kMaxStudyFileBytes >> 20));
  }
  std::string text;
  char buf[64 * 1024];
  // Bounded even if the file grows while read.
  while (text.size() <= kMaxStudyFileBytes) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError(fmt::format("cannot read study file {}: {}", path, std::strerror(errno)));
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  if (text.size() > kMaxStudyFileBytes) {
    return Status::InvalidArgument(
        fmt::format("study file {} is more than the limit of {} bytes", path, kMaxStudyFileBytes));
  }
  return ParseStudy(text, path);
}

}  // namespace sweep::study
