// The run loop; see runner.h.
#include "orchestrator/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <map>
#include <utility>
#include <sstream>

#include "logs/classify.h"
#include "orchestrator/config_groups.h"
#include "orchestrator/job_marks.h"
#include "base/telemetry.h"
#include "logs/telemetry_parser.h"
#include "slurm/telemetry_script.h"
#include "stopping/early_stop.h"
#include "orchestrator/phases.h"
#include "planner/planner.h"
#include "orchestrator/poll_schedule.h"
#include "orchestrator/query_budget.h"
#include "orchestrator/report_data.h"
#include "orchestrator/tpe_trials.h"
#include "study/repeats.h"
#include "study/space.h"
#include "slurm/array_script.h"
#include "orchestrator/trial_script.h"
#include "slurm/job_state.h"
#include "slurm/sbatch_script.h"

namespace sweep {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * kMiB;
constexpr size_t kReadChunk = 4 << 20;  // per trial per read; a busy log is read in several

std::string ReadLocalFile(const std::string& path, Status* st) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *st = Status::NotFound(fmt::format("cannot read {}", path));
    return "";
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BaseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// Slurm prints times as local "2026-12-02T17:18:01", or "N/A", "Unknown", "NONE".
std::optional<double> ParseSlurmTime(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  return static_cast<double>(std::mktime(&tm));
}

// "42:0" -> "exit code 42", "0:9" -> "killed by signal 9".
std::string DescribeExit(const std::string& exit_code) {
  auto colon = exit_code.find(':');
  if (colon == std::string::npos) return exit_code.empty() ? "" : "exit code " + exit_code;
  std::string code = exit_code.substr(0, colon), sig = exit_code.substr(colon + 1);
  if (sig != "0") return "killed by signal " + sig;
  return "exit code " + code;
}

}  // namespace

namespace {
// Rules that compare trials at equal training time (all but divergence).
bool TimeRulesOn(const StoppingConfig& c) {
  return c.race.enabled || c.halving.enabled || c.median.enabled || c.patience.enabled || c.throughput.enabled;
}
}  // namespace

Runner::Runner(const Study& study, store::Store& store, slurm::Transport& transport, Clock& clock, std::ostream& log)
    : study_(study),
      store_(store),
      transport_(transport),
      client_(transport_),
      clock_(clock),
      log_(log),
      watch_(study.objective.metric, TimeRulesOn(study.stopping), study.objective.LoggedWithin()),
      yield_(study.metric_format.format),
      storm_(FailureStorm::Needed(study.cluster.max_concurrent)),
      stopping_(study.stopping) {}

Runner::~Runner() {
  if (report_thread_.joinable()) report_thread_.join();
}

void Runner::Event(std::optional<int64_t> trial_id, const std::string& kind, const std::string& message) {
  log_ << fmt::format("[{}] {}{}\n", FormatUtc(clock_.Now()), trial_id ? fmt::format("trial {}: ", *trial_id) : "",
                      message);
  log_.flush();
  // An event that cannot be stored is not worth stopping the sweep for; the log line stands.
  (void)store_.AddEvent(study_id_, trial_id, clock_.Now(), kind, message);
  if (on_event_) on_event_(trial_id, kind, message);
}

std::string Runner::JobName(const std::string& trial_key) const { return "ss-" + study_.name + "-" + trial_key; }

std::string Runner::CommentTag(const store::TrialRecord& t) const {
  return fmt::format("slurmsweep:study={}:trial={}:attempt={}", study_.name, t.trial_key, t.attempt);
}

std::string Runner::ArrayTag(const std::string& array_name) const {
  return fmt::format("slurmsweep:study={}:array={}", study_.name, array_name);
}

Status Runner::Prepare() {
  auto before = store_.GetStudy(study_.name);
  auto id = store_.UpsertStudy(study_.name, study_.path, study_.hash, clock_.Now());
  if (!id.ok()) return id.status();
  study_id_ = *id;
  study_changed_ = before.ok() && before->spec_hash != study_.hash;
  if (study_changed_) {
    // Trials are keyed by their [space] values alone, so a trial that already ran keeps its
    // results under the old [job] settings, template variables or objective.
    auto ran = store_.ListTrials(study_id_);
    if (!ran.ok()) return ran.status();
    Event(std::nullopt, "changed",
          fmt::format(
              "warning: {} changed since this study's last run (hash {} -> {}); trials that already ran "
              "keep their results from the old settings, and only new trials use the new ones. To compare "
              "like with like, give the changed study a new [study] name.{}",
              study_.path, before->spec_hash, study_.hash,
              ChangedStudyTimeoutHint(std::count_if(ran->begin(), ran->end(),
                                                    [](const store::TrialRecord& t) { return t.state == "timeout"; }),
                                      study_.path)));
  }

  auto specs = ExpandStudy(study_);
  if (!specs.ok()) return specs.status();
  auto stored_trials = store_.ListTrials(study_id_);
  if (!stored_trials.ok()) return stored_trials.status();
  for (auto& spec : StoredRepeats(study_, *specs, *stored_trials)) specs->push_back(std::move(spec));  // --repeat-top's
  // A study that names a model gets the memory planner's verdict before anything is queued:
  // configurations Megatron would refuse, or that cannot fit in GPU memory, are dropped.
  std::map<std::string, std::string> plan_drops;
  plan_.reset();
  plan_rows_.clear();
  tpe_rows_.clear();
  if (study_.job.vars.count("model")) {
    auto plan = PlanStudy(study_);
    if (!plan.ok()) return plan.status();
    plan_ = std::move(*plan);
    headroom_bytes_ = plan_->headroom_gib * kGiB;
    for (const auto& row : plan_->rows) plan_rows_[row.trial.key] = &row;
    for (const auto& row : plan_->rows) {
      bool oom = row.verdict == PlanRow::Verdict::kOom;
      if (row.verdict == PlanRow::Verdict::kRule || (oom && !submit_predicted_oom_)) {
        plan_drops[row.trial.key] = (oom ? "memory plan: " : "parallelism rule: ") + row.reason;
      }
    }
  }
  std::vector<store::TrialRecord> records;
  specs_.clear();
  for (auto spec : *specs) {
    if (spec.dropped_reason.empty() && plan_drops.count(spec.key)) spec.dropped_reason = plan_drops[spec.key];
    specs_[spec.key] = spec;
    store::TrialRecord r;
    r.trial_key = spec.key;
    r.params_json = spec.params_json;
    r.state = spec.dropped_reason.empty() ? std::string(kTrialNew) : std::string(kTrialDropped);
    r.reason = spec.dropped_reason;
    records.push_back(std::move(r));
  }
  std::vector<TrialSpec> checked;
  for (const auto& [key, spec] : specs_) checked.push_back(spec);
  // Every trial's script renders before anything is stored or submitted: a value its template
  // cannot carry stops the run here, not when that trial comes up after others were submitted.
  // A tpe study has no trials yet: each value of its lists renders instead, so a value its
  // template cannot carry stops the run before the first proposal is submitted.
  if (study_.sampler == "tpe") {
    if (auto refused = ValueRefusals(study_); !refused.empty()) {
      return Status::InvalidArgument(fmt::format("{} value(s) cannot be rendered, nothing was submitted; first, {}: {}",
                                                 refused.size(), refused.begin()->first, refused.begin()->second));
    }
  }
  if (auto refused = RenderRefusals(study_, checked); !refused.empty()) {
    return Status::InvalidArgument(
        fmt::format("{} trial(s) cannot be rendered, nothing was submitted; first, trial "
                    "{}: {}",
                    refused.size(), refused.begin()->first, refused.begin()->second));
  }
  SWEEP_RETURN_IF_ERROR(store_.InsertTrialsIfAbsent(study_id_, records));
  if (study_.sampler == "tpe") SWEEP_RETURN_IF_ERROR(PrepareTpe());

  const std::string& w = study_.cluster.workdir;
  auto stored = store_.ListTrials(study_id_);
  if (!stored.ok()) return stored.status();
  files_ = FilesOf(w, study_.name, *stored);
  auto record = store_.GetStudy(study_.name);
  if (!record.ok()) return record.status();
  std::string host = LocalHostName();
  std::string claim_note;
  SWEEP_RETURN_IF_ERROR(
      ClaimStudyFiles(transport_, files_, ClaimToken(*record, host, study_.database), host, study_.path, &claim_note));
  if (!claim_note.empty()) Event(std::nullopt, "claim", claim_note);
  for (const auto& local : study_.job.stage) {
    Status st;
    std::string content = ReadLocalFile(local, &st);
    SWEEP_RETURN_IF_ERROR(st);
    SWEEP_RETURN_IF_ERROR(
        transport_.WriteFile(w + "/" + BaseName(local), content, 0755).WithContext("staging " + local));
  }
  size_t dropped = std::count_if(records.begin(), records.end(),
                                 [](const store::TrialRecord& t) { return t.state == kTrialDropped; });
  Event(std::nullopt, "prepare",
        fmt::format("study '{}': {} trials ({} dropped by constraints or the memory plan) via {}", study_.name,
                    specs->size(), dropped, transport_.Describe()));
  prepared_ = true;
  return Status::OK();
}

Result<std::string> Runner::RenderBody(const store::TrialRecord& t) {
  auto spec = specs_.find(t.trial_key);
  if (spec == specs_.end()) return Status::Internal("trial " + t.trial_key + " is not in this study file");
  return slurm::RenderTemplate(
      study_.job.template_text, study_.job.template_path,
      TrialTemplateVars(study_, spec->second, t.attempt, t.log_path, files_.TrialDir(t.trial_key)), TextNames(study_));
}

Result<std::optional<std::vector<std::string>>> Runner::NextDirectives(const store::TrialRecord& t) {
  auto spec = specs_.find(t.trial_key);
  if (spec == specs_.end()) return Status::Internal("trial " + t.trial_key + " is not in this study file");
  // Its log path depends on the array the trial joins, which these lines decide: a marker stands
  // in for it, and a directive that carries it keeps the trial out of every array.
  // (The marker is drawn from the safe alphabet, as every value the renderer takes.)
  static constexpr std::string_view kLogMarker = "slurmsweep-log-marker@@=";
  std::string_view tmpl = study_.job.template_text;
  auto head = slurm::RenderTemplate(
      tmpl.substr(0, slurm::DirectivesEnd(tmpl)), study_.job.template_path,
      TrialTemplateVars(study_, spec->second, t.attempt + 1, std::string(kLogMarker), files_.TrialDir(t.trial_key)),
      TextNames(study_));
  if (!head.ok()) return head.status();
  std::vector<std::string> directives = slurm::SbatchDirectives(*head);
  for (const auto& d : directives) {
    if (d.find(kLogMarker) != std::string::npos) return std::optional<std::vector<std::string>>();
  }
  return std::optional<std::vector<std::string>>(std::move(directives));
}

slurm::SbatchHeader Runner::Header() const {
  slurm::SbatchHeader h;
  h.workdir = study_.cluster.workdir;
  h.partition = study_.cluster.partition;
  h.account = study_.cluster.account;
  h.qos = study_.cluster.qos;
  h.nodes = study_.job.nodes;
  h.gpus_per_node = study_.job.gpus_per_node;
  h.cpus_per_task = study_.job.cpus_per_task;
  h.mem = study_.job.mem;
  h.time_limit = study_.job.time_limit;
  return h;
}

Result<std::string> Runner::RenderScript(const store::TrialRecord& t, std::string_view body) {
  slurm::SbatchHeader h = Header();
  h.job_name = JobName(t.trial_key);
  h.output = t.log_path;
  h.comment = CommentTag(t);
  auto script = slurm::AddSbatchHeader(body, h);
  if (!script.ok()) return script.status();
  // The sampler first: the start mark, inserted at the same place, then goes before it.
  if (study_.job.monitor)
    *script = slurm::WithTelemetrySampler(*script, TelemetryPath(t), study_.job.monitor_interval_s);
  // Each run of the job leaves a start mark beside its log: it finds a job Slurm has purged
  // (Reconcile) and tells one run from the next when Slurm requeues it (HandleRestarts).
  return WithStartMark(*script, MarksPath(t.log_path), {study_.name, t.trial_key, t.attempt});
}

// A crash between recording the intent and storing the job id leaves trials "submitting".
// Before anything new is submitted, look for their jobs by name (one squeue call) and adopt
// them; only trials with no job at all go back to "new".
Status Runner::Reconcile(std::vector<store::TrialRecord>& trials) {
  std::vector<std::string> names;
  for (const auto& t : trials) {
    if (t.state != kTrialSubmitting) continue;
    std::string name = t.array_name.empty() ? JobName(t.trial_key) : t.array_name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) return Status::OK();
  auto found = client_.FindByName(names);
  if (!found.ok()) return found.status();
  auto marked = JobsFromStartMarks(trials);
  if (!marked.ok()) return marked.status();
  for (auto& t : trials) {
    if (t.state != kTrialSubmitting) continue;
    // The tag names the attempt (or the array, whose name names its first trial's attempt), so
    // an earlier attempt's job is never mistaken for this one.
    std::string tag = t.array_name.empty() ? CommentTag(t) : ArrayTag(t.array_name);
    std::string job_id;
    slurm::JobState state = slurm::JobState::kPending;
    for (const auto& j : *found) {
      if (j.comment != tag) continue;
      std::string base = slurm::ArrayBaseId(j.job_id);
      std::string mine = t.array_name.empty() ? base : fmt::format("{}_{}", base, t.array_index);
      // A task that already left squeue is still this array's: the next query finds out how it ended.
      if (job_id.empty() || j.job_id == mine) job_id = mine;
      if (j.job_id == mine && !slurm::IsTerminal(j.state) && j.state != slurm::JobState::kUnknown) state = j.state;
    }
    if (!job_id.empty()) {
      t.job_id = job_id;
      t.state = std::string(slurm::JobStateName(state));
      Event(t.id, "adopt", fmt::format("adopted job {} submitted before a restart", job_id));
    } else if (auto m = marked->find(t.id); m != marked->end()) {
      // Gone from squeue (ended and purged after MinJobAge), but it ran: its start mark says so.
      // Adopted like the others; the next query finds out what Slurm still knows of its end.
      t.job_id = m->second;
      t.state = std::string(slurm::JobStateName(slurm::JobState::kRunning));
      Event(
          t.id, "adopt",
          fmt::format("adopted job {} submitted before a restart (no longer in squeue; found by its start mark in {})",
                      t.job_id, MarksPath(t.log_path)));
    } else {
      UndoSubmission(t);
      Event(t.id, "resubmit", "no job found for an interrupted submission; it will be submitted");
    }
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
  }
  return Status::OK();
}

void Runner::ReadStartMarks(const std::vector<const store::TrialRecord*>& trials, MarksRead& marks) {
  std::vector<slurm::ReadRequest> reads;
  std::vector<int64_t> ids;
  for (const store::TrialRecord* t : trials) {
    if (marks.count(t->id)) continue;
    reads.push_back({MarksPath(t->log_path), 0, 64 << 10});
    ids.push_back(t->id);
  }
  if (reads.empty()) return;
  auto got = transport_.ReadMany(reads);
  for (size_t i = 0; i < got.size(); ++i) marks.emplace(ids[i], std::move(got[i]));
}

Result<std::map<int64_t, std::string>> Runner::JobsFromStartMarks(const std::vector<store::TrialRecord>& trials) {
  std::vector<const store::TrialRecord*> submitting;
  for (const auto& t : trials) {
    if (t.state == kTrialSubmitting && !t.log_path.empty()) submitting.push_back(&t);
  }
  MarksRead marks;
  ReadStartMarks(submitting, marks);
  std::map<int64_t, std::string> jobs;
  for (auto& [id, text] : marks) {
    if (!text.ok()) {
      if (text.status().IsNotFound()) continue;  // never started (or never submitted)
      return text.status();
    }
    auto starts = ParseStartMarks(*text);
    if (!starts.empty()) jobs[id] = starts.front().job_id;
  }
  return jobs;
}

namespace {

// scontrol's node State for a node that failed: DOWN, FAIL, or '*' (not responding).
bool NodeFailed(const std::string& state) {
  return state.find("DOWN") != std::string::npos || state.find("FAIL") != std::string::npos ||
         state.find('*') != std::string::npos;
}

}  // namespace

// Slurm ran a trial's job again under the same id (JobRequeue=1: its node failed, a higher-priority
// job preempted it, or `scontrol requeue`). The new run starts from scratch and rewrites the log,
// so the points stored so far belong to a run that is over: it is an ended attempt, and the new
// run is the next one, never spliced onto it (FindRestarts). Its log is read once it has begun.
Status Runner::HandleRestarts(std::vector<store::TrialRecord>& trials,
                              const std::map<std::string, slurm::JobInfo>& jobs, const std::set<int64_t>& rewritten,
                              std::map<int64_t, Result<std::string>>& prefetched, std::set<int64_t>& hold) {
  MarksRead marks;
  SWEEP_RETURN_IF_ERROR(FindRestarts(trials, jobs, rewritten, prefetched, marks));
  // After a restart the log is the new run's only once that run has started (Slurm truncates the
  // log when it does; until then it may be the old run's, still COMPLETING): its start mark says so.
  std::vector<const store::TrialRecord*> waiting;
  for (const auto& t : trials) {
    if (t.job_restarts == 0 || t.log_offset > 0 || t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    waiting.push_back(&t);
  }
  ReadStartMarks(waiting, marks);
  for (const store::TrialRecord* t : waiting) {
    const Result<std::string>& text = marks.at(t->id);
    if (!text.ok()) {
      if (text.status().IsNotFound()) continue;  // a job from before start marks: read as it is
      return text.status();
    }
    auto starts = ParseStartMarks(*text);
    bool started = std::any_of(starts.begin(), starts.end(), [&](const JobStart& s) {
      return s.job_id == t->job_id && s.restart >= t->job_restarts;
    });
    if (!started) {
      hold.insert(t->id);
      prefetched.erase(t->id);
    }
  }
  return Status::OK();
}

// A restart is seen by Slurm's restart count (squeue), by the job's start marks (which outlive
// squeue: a job purged on a cluster without accounting), or by a log shorter than what was read.
Status Runner::FindRestarts(std::vector<store::TrialRecord>& trials, const std::map<std::string, slurm::JobInfo>& jobs,
                            const std::set<int64_t>& rewritten, std::map<int64_t, Result<std::string>>& prefetched,
                            MarksRead& marks) {
  std::vector<store::TrialRecord*> suspects;
  for (auto& t : trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state) || t.log_path.empty()) continue;
    auto it = jobs.find(t.job_id);
    // Without a count (sacct's answer, or no answer: purged with no accounting) the marks decide.
    bool no_count = it == jobs.end() ? t.stop_request.empty() : it->second.restarts < 0;
    bool counted = it != jobs.end() && it->second.restarts > t.job_restarts;
    if (counted || no_count || rewritten.count(t.id)) suspects.push_back(&t);
  }
  if (suspects.empty()) return Status::OK();
  ReadStartMarks(std::vector<const store::TrialRecord*>(suspects.begin(), suspects.end()), marks);
  std::vector<std::string> cancel;
  std::map<std::string, std::string> node_states;  // one scontrol per failed node, however many jobs it ran
  for (store::TrialRecord* suspect : suspects) {
    store::TrialRecord& t = *suspect;
    std::vector<JobStart> starts;
    const Result<std::string>& text = marks.at(t.id);
    if (text.ok()) {
      for (auto& s : ParseStartMarks(*text)) {
        if (s.job_id == t.job_id) starts.push_back(std::move(s));
      }
    } else if (!text.status().IsNotFound()) {
      return text.status();
    }
    auto it = jobs.find(t.job_id);
    bool counted_by_squeue = it != jobs.end() && it->second.restarts >= 0;
    int seen = std::max(t.job_restarts, counted_by_squeue ? it->second.restarts : 0);
    for (const auto& s : starts) seen = std::max(seen, s.restart);
    // A log rewritten while squeue shows no new count is read again next tick, when it does.
    bool restarted = seen > t.job_restarts || (rewritten.count(t.id) && !counted_by_squeue);
    if (!restarted) continue;
    if (seen == t.job_restarts) ++seen;
    prefetched.erase(t.id);  // the new run's log is read from its start

    // The run that ended: where it ran, from when to when.
    std::string host;
    double run_start = t.started_at.value_or(0), next_start = 0;
    for (const auto& s : starts) {
      if (s.restart == t.job_restarts) {
        host = s.host;
        if (!t.started_at) run_start = s.time;
      }
      if (s.restart == seen) next_start = s.time;
    }
    std::string cls(slurm::JobStateName(slurm::JobState::kPreempted));
    if (!host.empty() && !node_states.count(host)) {
      auto node = client_.NodeState(host);
      if (!node.ok() && node.status().IsUnavailable()) return node.status();
      node_states[host] = node.ok() ? *node : "";
    }
    if (!host.empty() && NodeFailed(node_states[host])) {
      cls = std::string(slurm::JobStateName(slurm::JobState::kNodeFail));
    }
    double end = next_start > 0 ? std::min(next_start, clock_.Now()) : clock_.Now();
    double ran = run_start > 0 ? std::max(0.0, end - run_start) : 0;
    auto policy = study_.retry.find(cls);
    int allowed = policy == study_.retry.end() ? 0 : policy->second;
    std::string what = fmt::format("job {} was started again by Slurm (restart {}: {})", t.job_id, seen,
                                   cls == "node_fail" ? "its node " + host + " failed" : "preempted or requeued");
    t.job_restarts = seen;
    if (t.attempt > allowed) {
      // No retry left for this class: the attempt ends as any other would, and the new run goes.
      // Its log is read to its end first: until the rerun starts (its start mark), the log is
      // still the ended run's, with whatever it wrote since the last tick.
      if (next_start == 0 && !rewritten.count(t.id)) {
        auto tail = Ingest(t);
        if (!tail.ok()) return tail.status();
      }
      if (run_start > 0) t.started_at = run_start;
      t.ended_at = end;
      t.state = cls;
      t.reason = fmt::format("{} in attempt {}; no retry left ([retry] {} = {}), so the new run was cancelled", what,
                             t.attempt, cls, allowed);
      t.stop_request = t.reason;
      Event(t.id, "end", fmt::format("job {}: {} ({})", t.job_id, cls, t.reason));
      SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
      cancel.push_back(t.job_id);
      continue;
    }
    Event(t.id, "requeue",
          fmt::format("{}: attempt {} ended after {:.0f} s; its points are dropped and the new run is attempt {} "
                      "(retry {} of {} for {})",
                      what, t.attempt, ran, t.attempt + 1, t.attempt, allowed, cls));
    t.prior_run_s += ran;
    t.attempt += 1;
    t.started_at.reset();
    t.ended_at.reset();
    t.reason = fmt::format("retry after {} in attempt {}: {}", cls, t.attempt - 1, what);
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    SWEEP_RETURN_IF_ERROR(store_.ResetMetrics(t.id));
    t.log_offset = 0;
    t.telemetry_offset = 0;
    parsers_.erase(t.id);
    stopping_.Forget(t.id);
  }
  return client_.Cancel(cancel);
}

Status Runner::HoldForeignLogs(const std::vector<store::TrialRecord>& trials,
                               std::map<int64_t, Result<std::string>>& prefetched, std::set<int64_t>& hold) {
  // Only a log about to be read from its start, with something in it: once a run's first bytes
  // are its own, the rest are (a run that starts later truncates the log and is a restart).
  std::vector<const store::TrialRecord*> first_reads;
  for (const auto& t : trials) {
    if (t.log_offset != 0 || hold.count(t.id) || t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    auto chunk = prefetched.find(t.id);
    if (chunk == prefetched.end() || !chunk->second.ok() || chunk->second->empty()) continue;
    first_reads.push_back(&t);
  }
  if (first_reads.empty()) return Status::OK();
  MarksRead marks;
  ReadStartMarks(first_reads, marks);
  for (const store::TrialRecord* t : first_reads) {
    const Result<std::string>& text = marks.at(t->id);
    if (!text.ok()) {
      if (text.status().IsNotFound()) continue;  // a job from before start marks, or one that could not write them
      return text.status();
    }
    std::string owner =
        ForeignLogOwner(ParseStartMarks(*text), t->job_id, {study_.name, t->trial_key, t->attempt}, t->job_restarts);
    if (owner.empty()) continue;
    hold.insert(t->id);
    prefetched.erase(t->id);
    if (foreign_reported_.insert(t->id).second) {
      Event(t->id, "foreign_log",
            fmt::format("{} was last written by {}, not by this trial's job {}: it is not read (another study "
                        "writes to this study's file names; give each study its own [study] name)",
                        t->log_path, owner, t->job_id));
    }
  }
  return Status::OK();
}

Result<int64_t> Runner::Ingest(store::TrialRecord& t, const Result<std::string>* first) {
  if (t.log_path.empty()) return int64_t{0};
  auto ps = parsers_.find(t.id);
  if (ps == parsers_.end()) {
    // Resume the time axis where the stored metrics end: from the store's summary of the
    // trial's metrics (their last points), not from the points themselves.
    ParserState state;
    auto summary = store_.Summary(t.id);
    if (!summary.ok()) return summary.status();
    for (const auto& m : summary->metrics) {
      if (IsTelemetryMetric(m.name)) continue;  // keyed by the clock, not by the log's steps
      yield_.Yielded(t.id);
      if (m.last_step >= state.last_step) state.last_step = m.last_step, state.time_s = m.last_time_s;
      if (m.name == "train_iters") state.train_iters = static_cast<int64_t>(m.last_value);  // stored once, not again
    }
    ps = parsers_.emplace(t.id, state).first;
  }
  int64_t stored = 0;
  while (true) {
    auto chunk = first ? *std::exchange(first, nullptr)
                       : transport_.ReadFrom(t.log_path, static_cast<uint64_t>(t.log_offset), kReadChunk);
    if (!chunk.ok()) {
      if (chunk.status().IsNotFound()) return stored;  // not started writing yet
      return chunk.status();
    }
    if (chunk->empty()) return stored;
    ParserState next = ps->second;
    ParseOutput parsed = ParseMetrics(*chunk, study_.metric_format, next);
    if (parsed.consumed == 0) return stored;  // only a partial line so far
    watch_.Saw(t.id, t.trial_key, parsed.points, parsed.time_key);
    yield_.Saw(t.id, t.trial_key, std::string_view(*chunk).substr(0, parsed.consumed), parsed.lines,
               parsed.points.size() + (parsed.train_iters ? 1 : 0));
    std::vector<store::MetricRow> rows;
    rows.reserve(parsed.points.size());
    int reserved = 0;  // log values under telemetry's prefix: not stored, they would mix with it
    for (auto& p : parsed.points) {
      if (IsTelemetryMetric(p.name)) ++reserved;
      else rows.push_back({p.step, p.time_s, std::move(p.name), p.value});
    }
    if (parsed.train_iters)
      rows.push_back({parsed.train_iters->step, parsed.train_iters->time_s, "train_iters", parsed.train_iters->value});
    int64_t new_offset = t.log_offset + static_cast<int64_t>(parsed.consumed);
    SWEEP_RETURN_IF_ERROR(store_.AppendMetrics(t.id, rows, new_offset));
    // Only after the write: a failed one leaves offset and parser where they were (and when the
    // caller's transaction rolls back later, QueryAndIngest puts them back).
    t.log_offset = new_offset;
    ps->second = next;
    if (stopping_.Has(t.id)) {
      std::vector<CurvePoint> loss, nan_iters;
      for (const auto& r : rows) {
        if (r.name == study_.objective.metric) loss.push_back({r.step, r.time_s, r.value});
        if (r.name == "nan_iters") nan_iters.push_back({r.step, r.time_s, r.value});
      }
      stopping_.Append(t.id, Gpus(), loss, nan_iters);
    }
    stored += static_cast<int64_t>(rows.size());
    if (parsed.malformed > 0) {
      Event(t.id, "malformed", fmt::format("{} malformed metric line(s) skipped in {}", parsed.malformed, t.log_path));
    }
    if (reserved > 0) {
      Event(t.id, "malformed",
            fmt::format("{} value(s) in {} named under '{}' not stored: that prefix is slurmsweep's telemetry",
                        reserved, t.log_path, kTelemetryPrefix));
    }
    if (chunk->size() < kReadChunk) return stored;
  }
}

std::string Runner::TelemetryPath(const store::TrialRecord& t) { return t.log_path + std::string(kTelemetrySuffix); }

// Whether a telemetry file, from its first byte, is the current run's. After a requeue the old
// run's file stays until the new run's sampler truncates it, which it does in the background,
// after the start mark that lets the log be read: its header says whose it is. A header from a
// sampler before job and restart were written proves nothing after a restart: not read then.
bool Runner::TelemetryOfThisRun(const store::TrialRecord& t, std::string_view head) {
  auto header = ParseTelemetryHeader(head);
  if (!header) return false;  // being written (the sampler's first line), or not a telemetry file
  if (header->job_id.empty()) return t.job_restarts == 0;
  return header->job_id == t.job_id && header->restart == t.job_restarts;
}

Result<int64_t> Runner::IngestTelemetry(store::TrialRecord& t, const Result<std::string>* first) {
  if (!study_.job.monitor || t.log_path.empty()) return int64_t{0};
  std::string path = TelemetryPath(t);
  int64_t stored = 0;
  while (true) {
    auto chunk = first ? *std::exchange(first, nullptr)
                       : transport_.ReadFrom(path, static_cast<uint64_t>(t.telemetry_offset), kReadChunk);
    if (!chunk.ok()) {
      if (chunk.status().IsNotFound()) return stored;  // the sampler has not started yet
      return chunk.status();
    }
    if (t.telemetry_offset == 0 && !chunk->empty() && !TelemetryOfThisRun(t, *chunk)) return stored;
    TelemetryOutput parsed = ParseTelemetry(*chunk);
    if (parsed.consumed == 0) return stored;
    int64_t new_offset = t.telemetry_offset + static_cast<int64_t>(parsed.consumed);
    SWEEP_RETURN_IF_ERROR(store_.AppendTelemetry(t.id, parsed.points, new_offset));
    t.telemetry_offset = new_offset;
    stored += static_cast<int64_t>(parsed.points.size());
    if (parsed.malformed > 0) {
      // nvidia-smi prints its failures ("NVIDIA-SMI has failed ...") where its samples would be.
      Event(t.id, "malformed", fmt::format("{} line(s) of {} are not telemetry samples", parsed.malformed, path));
    }
    if (chunk->size() < kReadChunk) return stored;
  }
}

Status Runner::QueryAndIngest(std::vector<store::TrialRecord>& trials, TickReport& report) {
  std::vector<std::string> ids;
  for (const auto& t : trials) {
    if (!t.job_id.empty() && !IsFinalTrialState(t.state)) ids.push_back(t.job_id);
  }
  report.active = static_cast<int>(ids.size());
  if (ids.empty()) return Status::OK();
  auto before = client_.stats();
  auto jobs = client_.Query(ids);
  report.slurm_queries = (client_.stats().squeue - before.squeue) + (client_.stats().sacct - before.sacct);
  if (!jobs.ok()) return jobs.status();

  // Every log that has news is read with one ReadMany (over SSH: one command for up to 100 logs).
  std::vector<slurm::ReadRequest> reads;
  std::vector<int64_t> read_ids, read_offsets;
  std::vector<slurm::ReadRequest> telemetry_reads;
  for (const auto& t : trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state) || t.log_path.empty()) continue;
    auto it = jobs->find(t.job_id);
    if (it != jobs->end() &&
        (it->second.state == slurm::JobState::kPending || it->second.state == slurm::JobState::kUnknown)) {
      continue;
    }
    // From one byte before the offset: a log shorter than what was read of it was rewritten by a
    // new run of the job (HandleRestarts).
    reads.push_back({t.log_path, static_cast<uint64_t>(std::max<int64_t>(0, t.log_offset - 1)), kReadChunk});
    read_ids.push_back(t.id);
    read_offsets.push_back(t.log_offset);
    if (study_.job.monitor) {
      telemetry_reads.push_back({TelemetryPath(t), static_cast<uint64_t>(t.telemetry_offset), kReadChunk});
    }
  }
  // The telemetry files of the same trials, in the same call, after the logs.
  size_t logs_read = reads.size();
  reads.insert(reads.end(), std::make_move_iterator(telemetry_reads.begin()),
               std::make_move_iterator(telemetry_reads.end()));
  std::map<int64_t, Result<std::string>> prefetched;
  std::map<int64_t, std::pair<int64_t, Result<std::string>>> telemetry;  // trial -> offset read at, chunk
  std::set<int64_t> rewritten;  // trials whose log is shorter than their offset
  if (!reads.empty()) {
    auto chunks = transport_.ReadMany(reads);
    for (size_t i = logs_read; i < chunks.size(); ++i) {
      telemetry.emplace(read_ids[i - logs_read],
                        std::make_pair(static_cast<int64_t>(reads[i].offset), std::move(chunks[i])));
    }
    for (size_t i = 0; i < std::min(chunks.size(), logs_read); ++i) {
      if (read_offsets[i] > 0 && chunks[i].ok()) {
        if (chunks[i]->empty()) {
          rewritten.insert(read_ids[i]);
          continue;
        }
        chunks[i]->erase(0, 1);
      }
      prefetched.emplace(read_ids[i], std::move(chunks[i]));
    }
  }
  std::set<int64_t> hold;  // restarted, the new run not started yet: its log is the old run's
  SWEEP_RETURN_IF_ERROR(HandleRestarts(trials, *jobs, rewritten, prefetched, hold));
  SWEEP_RETURN_IF_ERROR(HoldForeignLogs(trials, prefetched, hold));

  // What squeue says of each tracked trial, decided before anything is written.
  struct Observed {
    store::TrialRecord* t;
    std::string new_state, reason;
  };
  std::vector<Observed> observed;
  for (auto& t : trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    auto it = jobs->find(t.job_id);
    std::string new_state;
    std::string reason;
    if (it == jobs->end() && !t.stop_request.empty()) {
      // We cancelled it; a queued array task that never started leaves no record at all.
      new_state = std::string(slurm::JobStateName(slurm::JobState::kCancelled));
    } else if (it == jobs->end()) {
      new_state = std::string(kTrialLost);
      reason = "job " + t.job_id + " left the queue and the cluster keeps no accounting of how it ended";
    } else {
      const slurm::JobInfo& j = it->second;
      new_state = std::string(slurm::JobStateName(j.state));
      t.slurm_state = j.slurm_state;
      if (slurm::IsTerminal(j.state)) t.exit_code = j.exit_code;  // squeue says 0:0 while a job runs
      reason = j.reason == "None" ? "" : j.reason;
      if (j.state == slurm::JobState::kFailed)
        reason = DescribeExit(j.exit_code) + (reason.empty() ? "" : " (" + reason + ")");
      // Slurm's own times where it has them: a short job may start and end between two ticks.
      bool started = j.state != slurm::JobState::kPending && j.state != slurm::JobState::kUnknown;
      if (started) t.started_at = ParseSlurmTime(j.start_time).value_or(t.started_at.value_or(clock_.Now()));
      if (slurm::IsTerminal(j.state)) t.ended_at = ParseSlurmTime(j.end_time);
    }
    observed.push_back({&t, std::move(new_state), std::move(reason)});
  }

  // Every log's news in one transaction per tick (bench/ingest_bench.cc: a commit per trial cost
  // about a quarter of the rate). Ingest before recording any end: a crash in between re-reads,
  // never skips, the tail.
  struct Before {
    store::TrialRecord* t;
    int64_t log_offset, telemetry_offset;
  };
  std::vector<Before> ingested;
  Status ingest = store_.InTransaction([&]() -> Status {
    for (const Observed& o : observed) {
      if (o.new_state == kTrialNew || o.new_state == "pending" || o.new_state == "unknown") continue;
      if (hold.count(o.t->id)) continue;
      ingested.push_back({o.t, o.t->log_offset, o.t->telemetry_offset});
      auto pre = prefetched.find(o.t->id);
      auto n = Ingest(*o.t, pre == prefetched.end() ? nullptr : &pre->second);
      if (!n.ok()) return n.status();
      report.points += *n;
      // A chunk read before a restart was handled belongs to the old run: read again instead.
      auto tel = telemetry.find(o.t->id);
      if (tel == telemetry.end()) continue;
      bool fresh = tel->second.first == o.t->telemetry_offset;
      auto m = IngestTelemetry(*o.t, fresh ? &tel->second.second : nullptr);
      if (!m.ok()) return m.status();
      report.points += *m;
    }
    return Status::OK();
  });
  if (!ingest.ok()) {
    // Rolled back: forget what was parsed in memory too, so the next tick reads the same bytes again.
    for (auto& [t, offset, telemetry_offset] : ingested) {
      t->log_offset = offset;
      t->telemetry_offset = telemetry_offset;
      parsers_.erase(t->id);
      stopping_.Forget(t->id);
    }
    return ingest;
  }

  for (auto& [tp, new_state, reason] : observed) {
    store::TrialRecord& t = *tp;
    bool ended = IsFinalTrialState(new_state);
    if (ended) SWEEP_RETURN_IF_ERROR(Classify(t, new_state, reason));
    if (new_state == t.state && reason == t.reason) continue;
    if (ended) {
      if (!t.ended_at) t.ended_at = clock_.Now();
      if (!t.started_at) t.started_at = t.ended_at;
      ++report.ended;
    }
    ++report.changed;
    Event(t.id, ended ? "end" : "state",
          fmt::format("job {}: {}{}{}", t.job_id, new_state == t.state ? "" : t.state + " -> ", new_state,
                      reason.empty() ? "" : " (" + reason + ")"));
    t.state = new_state;
    t.reason = reason;
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    if (!ended) continue;
    if (t.state == kTrialCudaOom) SWEEP_RETURN_IF_ERROR(SkipDominatedByOom(t, trials));
    SWEEP_RETURN_IF_ERROR(CalibrateMemory(t, trials));
    auto chained = MaybeChain(t);
    if (!chained.ok()) return chained.status();
    if (!*chained) storm_.Ended(t.id, t.state);
    if (!*chained) SWEEP_RETURN_IF_ERROR(MaybeRetry(t));
  }
  return Status::OK();
}

// Learning from a CUDA OOM: a configuration that needs at least as much memory on every axis
// would fail the same way, so it never reaches the queue.
Status Runner::SkipDominatedByOom(const store::TrialRecord& oom, std::vector<store::TrialRecord>& trials) {
  auto spec = specs_.find(oom.trial_key);
  if (spec == specs_.end()) return Status::OK();
  std::vector<std::string> queued;  // already waiting in the queue (array tasks): cancelled
  for (auto& t : trials) {
    bool waiting = t.state == "pending" && !t.job_id.empty() && t.stop_request.empty();
    if ((t.state != kTrialNew && !waiting) || t.id == oom.id) continue;
    auto candidate = specs_.find(t.trial_key);
    if (candidate == specs_.end() || candidate->second.params.size() != spec->second.params.size()) continue;
    if (!DominatedByOom(candidate->second, spec->second)) continue;
    std::string why = fmt::format("skipped: dominated by the CUDA OOM of trial {} ({})", oom.id, oom.trial_key);
    if (waiting) {
      // Recorded before scancel, so its end is classed skipped even after a crash.
      t.stop_request = why;
      queued.push_back(t.job_id);
    } else {
      t.state = std::string(kTrialSkipped);
      t.reason = why;
    }
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    Event(t.id, "skip", why + (waiting ? fmt::format("; cancelling queued job {}", t.job_id) : ""));
  }
  return client_.Cancel(queued);
}

Result<std::optional<double>> Runner::MeasuredExcess(const store::TrialRecord& done) {
  if (!plan_) return std::optional<double>();
  auto row = plan_rows_.find(done.trial_key);
  if (row == plan_rows_.end() || !row->second->memory) return std::optional<double>();
  // The peak from the store's summary of each metric (its largest finite value): no point is read.
  auto summary = store_.Summary(done.id);
  if (!summary.ok()) return summary.status();
  for (const char* name : {"mem_max_reserved_mb", "mem_max_allocated_mb"}) {
    const store::MetricSummary* m = summary->Find(name);
    if (m && m->finite > 0) return std::optional<double>(m->max * kMiB - row->second->memory->Peak().Total());
  }
  return std::optional<double>();
}

bool Runner::DominatedByOom(const TrialSpec& candidate, const TrialSpec& oom) const {
  if (candidate.params.size() != oom.params.size()) return false;
  TrialSpec c = candidate, o = oom;
  for (const ParamSpec& p : study_.space) {
    if (!p.choices.empty() || p.integer) continue;
    auto named = [&](const auto& kv) { return kv.first == p.name; };
    c.params.erase(std::remove_if(c.params.begin(), c.params.end(), named), c.params.end());
    o.params.erase(std::remove_if(o.params.begin(), o.params.end(), named), o.params.end());
  }
  return NeedsAtLeastAsMuchMemory(c, o);
}

Status Runner::CalibrateMemory(const store::TrialRecord& done, std::vector<store::TrialRecord>& trials) {
  auto excess = MeasuredExcess(done);
  if (!excess.ok()) return excess.status();
  if (!*excess || **excess <= headroom_bytes_) return Status::OK();
  headroom_bytes_ = **excess;
  double predicted = plan_rows_[done.trial_key]->memory->Peak().Total();
  double observed = predicted + headroom_bytes_;
  Event(done.id, "calibrate",
        fmt::format("memory plan recalibrated: trial {} ({}) peaked at {:.1f} GiB, {:.1f} GiB more than the {:.1f} GiB "
                    "predicted; headroom is now {:.1f} GiB",
                    done.id, done.trial_key, observed / kGiB, headroom_bytes_ / kGiB, predicted / kGiB,
                    headroom_bytes_ / kGiB));
  double capacity = plan_->gpu_mem_gib * kGiB;
  for (auto& t : trials) {
    if (t.state != kTrialNew) continue;
    auto r = plan_rows_.find(t.trial_key);
    if (r == plan_rows_.end() || !r->second->memory) continue;
    double need = r->second->memory->Peak().Total() + headroom_bytes_;
    if (need <= capacity) continue;
    t.state = std::string(kTrialSkipped);
    t.reason = fmt::format("skipped: memory plan calibrated on trial {}: needs {:.1f} GiB > {:.1f} GiB", done.id,
                           need / kGiB, plan_->gpu_mem_gib);
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    Event(t.id, "skip", t.reason);
  }
  return Status::OK();
}

// A job that stopped at its time limit after saving a checkpoint continues in a new job. Unlike
// a retry, the metrics are kept and the time axis goes on: the chain is one curve.
Result<bool> Runner::MaybeChain(store::TrialRecord& t) {
  const JobSpec& job = study_.job;
  if (job.max_chain <= 0 || (t.state != "completed" && t.state != "timeout")) return false;
  auto tail = LogTail(t);
  if (!tail.ok()) return tail.status();
  if (tail->find(job.resume_marker) == std::string::npos) return false;
  if (t.attempt >= job.max_chain) {
    t.state = "timeout";
    t.reason = fmt::format("stopped after {} chained jobs (max_chain) with training unfinished", t.attempt);
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    Event(t.id, "chain_end", t.reason);
    return true;
  }
  Event(t.id, "chain",
        fmt::format("job {} saved a checkpoint and stopped ({}); continuing in a new job ({} of at most {})", t.job_id,
                    t.state, t.attempt + 1, job.max_chain));
  t.reason = fmt::format("continuing from checkpoint (job {} of at most {})", t.attempt + 1, job.max_chain);
  t.state = std::string(kTrialNew);
  t.job_id.clear();
  t.slurm_state.clear();
  t.exit_code.clear();
  t.ended_at.reset();  // started_at stays: the chain's wall time runs from its first job
  t.array_name.clear();
  t.array_index = -1;
  SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
  // The next job logs to a new file: read it from its start, keep every point and the parser's
  // time axis.
  SWEEP_RETURN_IF_ERROR(store_.AppendMetrics(t.id, {}, 0));
  t.log_offset = 0;
  if (study_.job.monitor) {
    SWEEP_RETURN_IF_ERROR(store_.AppendTelemetry(t.id, {}, 0));
    t.telemetry_offset = 0;
  }
  return true;
}

Result<std::string> Runner::LogTail(const store::TrialRecord& t) {
  if (t.log_path.empty()) return std::string();
  constexpr int64_t kTail = 64 << 10;
  int64_t from = std::max<int64_t>(0, t.log_offset - kTail);
  auto tail = transport_.ReadFrom(t.log_path, static_cast<uint64_t>(from), 2 * kTail);
  if (!tail.ok()) return tail.status().IsNotFound() ? Result<std::string>(std::string()) : tail.status();
  return tail;
}

// Slurm says how a job ended; the log often says why (logs/classify.h). The classes decide the
// retry policy.
Status Runner::Classify(const store::TrialRecord& t, std::string& state, std::string& reason) {
  if (state == "cancelled") {
    ClassifyCancelled(t.stop_request, t.slurm_state, state, reason);
    return Status::OK();
  }
  if (!EndReadsLog(state)) return Status::OK();
  auto tail = LogTail(t);
  if (!tail.ok()) return tail.status();
  std::optional<ObjectiveAtEnd> last;
  if (state == "failed" || state == "completed") {
    auto row = store_.LastMetric(t.id, study_.objective.metric);
    if (!row.ok()) return row.status();
    if (row->has_value()) last = ObjectiveAtEnd{study_.objective.metric, (*row)->step, (*row)->value};
  }
  ClassifyFromLog(*tail, last, state, reason);
  // A rule stopped it, but the job ended on its own before the scancel landed: completed it is,
  // and its reason keeps the decision the log announced.
  if (state == "completed" && reason.empty() && t.stop_request.rfind("pruned", 0) == 0) {
    reason = "completed before the stop took effect (" + t.stop_request + ")";
  }
  return Status::OK();
}

// Policy per class ([retry] in the study): retries start from scratch with a new attempt number.
Status Runner::MaybeRetry(store::TrialRecord& t) {
  auto policy = study_.retry.find(t.state);
  int allowed = policy == study_.retry.end() ? 0 : policy->second;
  if (t.attempt > allowed) return Status::OK();
  Event(t.id, "retry",
        fmt::format("attempt {} ended {} ({}); retrying ({} of {})", t.attempt, t.state, t.reason, t.attempt, allowed));
  return StartOver(t, fmt::format("retry after {} in attempt {}: {}", t.state, t.attempt, t.reason));
}

Status Runner::StartOver(store::TrialRecord& t, std::string reason) {
  t.reason = std::move(reason);
  // The attempt's run time is spent whatever comes next: the report's cost counts it.
  if (t.started_at && t.ended_at) t.prior_run_s += std::max(0.0, *t.ended_at - *t.started_at);
  t.state = std::string(kTrialNew);
  t.job_id.clear();
  t.slurm_state.clear();
  t.exit_code.clear();
  t.stop_request.clear();
  t.started_at.reset();
  t.ended_at.reset();
  t.array_name.clear();
  t.array_index = -1;
  SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
  SWEEP_RETURN_IF_ERROR(store_.ResetMetrics(t.id));
  t.log_offset = 0;
  t.telemetry_offset = 0;
  parsers_.erase(t.id);
  stopping_.Forget(t.id);
  yield_.Forget(t.id);
  return Status::OK();
}

Result<int> Runner::Resubmit(const std::set<std::string>& states) {
  auto id = store_.UpsertStudy(study_.name, study_.path, study_.hash, clock_.Now());
  if (!id.ok()) return id.status();
  study_id_ = *id;
  auto trials = store_.ListTrials(study_id_);
  if (!trials.ok()) return trials.status();
  int n = 0;
  Status st = store_.InTransaction([&]() -> Status {
    for (auto& t : *trials) {
      if (!states.count(t.state)) continue;
      std::string was = t.state;
      SWEEP_RETURN_IF_ERROR(StartOver(t, fmt::format("resubmitted by the user after {}", was)));
      Event(t.id, "resubmit",
            fmt::format("{} was {}: submitted again from scratch (run --resubmit)", t.trial_key, was));
      ++n;
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return n;
}

Status Runner::PrepareTpe() {
  auto trials = store_.ListTrials(study_id_);
  if (!trials.ok()) return trials.status();
  auto checker = ConstraintChecker::Make(study_);
  if (!checker.ok()) return checker.status();
  // A trial is this study's when its values are a point of the file's [space] that maps back to
  // its key: after an edit to [space], older trials stay history, as for a grid.
  for (const auto& t : *trials) {
    auto x = PointOf(study_, t.params_json);
    if (!x) continue;
    auto spec = checker->Check(ParamsOf(study_, *x));
    if (!spec.ok()) return spec.status();
    if (Seeded(study_)) *spec = RepeatTrials(study_, *spec, SeedOf(study_, t.params_json), 1).front();
    if (spec->key == t.trial_key) specs_[spec->key] = std::move(*spec);
  }
  std::vector<TrialSpec> own;
  for (const auto& [key, spec] : specs_) own.push_back(spec);
  SWEEP_RETURN_IF_ERROR(PlanProposed(own));
  // The headroom as the trials that ended so far calibrated it, so that a resumed run rules out
  // what an uninterrupted one would (their skip and calibrate events are in the store already).
  for (const auto& t : *trials) {
    if (!IsFinalTrialState(t.state) || !specs_.count(t.trial_key)) continue;
    auto excess = MeasuredExcess(t);
    if (!excess.ok()) return excess.status();
    if (*excess) headroom_bytes_ = std::max(headroom_bytes_, **excess);
  }
  auto warm = WarmStartObservations(study_);
  if (!warm.ok()) return warm.status();
  warm_ = std::move(*warm);
  if (!warm_.empty()) {
    Event(std::nullopt, "warm_start",
          fmt::format("tpe starts from {} ended trial(s) of {}", warm_.size(), study_.warm_start->study_path));
  }
  return Status::OK();
}

Status Runner::PlanProposed(const std::vector<TrialSpec>& specs) {
  if (!plan_ || specs.empty()) return Status::OK();
  auto plan = PlanTrials(study_, specs);
  if (!plan.ok()) return plan.status();
  for (auto& row : plan->rows) {
    std::string key = row.trial.key;
    plan_rows_[key] = &(tpe_rows_[key] = std::move(row));
  }
  return Status::OK();
}

bool Runner::TpeFeasible(const TrialSpec& spec, const std::vector<const TrialSpec*>& ooms) {
  if (!spec.dropped_reason.empty()) return false;
  for (const TrialSpec* oom : ooms) {
    if (DominatedByOom(spec, *oom)) return false;
  }
  if (!study_.job.vars.count("model")) return true;
  // The planner's verdict, as Prepare applies it to a grid: parallelism rules always, the memory
  // plan unless --submit-predicted-oom.
  auto plan = PlanTrials(study_, {spec});
  if (!plan.ok() || plan->rows.size() != 1) return false;
  auto verdict = plan->rows.front().verdict;
  if (verdict == PlanRow::Verdict::kRule || verdict == PlanRow::Verdict::kConstraint) return false;
  if (verdict == PlanRow::Verdict::kOom && !submit_predicted_oom_) return false;
  if (plan->rows.front().memory && headroom_bytes_ > plan->headroom_gib * kGiB) {
    // The plan's headroom, grown by what finished trials measured (CalibrateMemory).
    double need = plan->rows.front().memory->Peak().Total() + headroom_bytes_;
    if (need > plan->gpu_mem_gib * kGiB && !submit_predicted_oom_) return false;
  }
  return true;
}

Status Runner::ProposeTrials(std::vector<store::TrialRecord>& trials, int free_slots) {
  if (tpe_exhausted_) return Status::OK();
  int waiting = 0;
  std::vector<sampler::Observation> history = warm_;
  std::vector<const TrialSpec*> ooms;
  // A configuration's repeats are one point with its noise (config_groups.h); the budget counts configurations.
  std::vector<std::pair<std::string, sampler::Observation>> observed;
  std::set<std::string> own_configs;
  for (const auto& t : trials) {  // in id order: the order they were proposed
    auto spec = specs_.find(t.trial_key);
    if (spec == specs_.end()) continue;
    own_configs.insert(ConfigIdentity(study_, t.params_json));
    if (t.state == kTrialNew) ++waiting;
    if (t.state == kTrialCudaOom) ooms.push_back(&spec->second);
    auto o = ObserveTrial(store_, study_, t);
    if (!o.ok()) return o.status();
    if (*o) observed.emplace_back(ConfigIdentity(study_, t.params_json), std::move(**o));
  }
  for (auto& o : MergeRepeats(observed)) history.push_back(std::move(o));
  int own = static_cast<int>(own_configs.size());
  int k = std::min(ConfigsForSlots(free_slots - waiting, study_.repeats), study_.trials - own);
  if (k <= 0) return Status::OK();
  auto checker = ConstraintChecker::Make(study_);
  if (!checker.ok()) return checker.status();
  Status error;
  auto feasible = [&](const sampler::Point& x) {
    auto spec = checker->Check(ParamsOf(study_, x));
    if (!spec.ok()) {
      if (error.ok()) error = spec.status();
      return false;
    }
    return TpeFeasible(*spec, ooms);
  };
  sampler::Options options;
  options.seed = study_.seed;
  // Optuna's ten random trials first, fewer in a small budget so the model gets its turn.
  options.startup = std::clamp(study_.trials / 4, 2, 10);
  auto space = SamplerSpace(study_);
  // [[search.enqueue]] first: evaluated before the sampler's own, which count them as pending.
  auto points = PendingEnqueued(study_, own_configs, k);
  for (const auto& x : points) history.push_back({x, sampler::Outcome::kPending, 0, 0});
  auto proposed = sampler::Propose(space, history, k - static_cast<int>(points.size()), options, feasible);
  points.insert(points.end(), proposed.begin(), proposed.end());
  SWEEP_RETURN_IF_ERROR(error);
  if (static_cast<int>(points.size()) < k) {
    tpe_exhausted_ = true;
    Event(std::nullopt, "exhausted",
          fmt::format("tpe: no configuration left that constraints and the plan allow and no trial has tried; "
                      "the study ends with {} of {} trials",
                      own + static_cast<int>(points.size()), study_.trials));
  }
  if (points.empty()) return Status::OK();
  std::vector<TrialSpec> specs;
  std::vector<store::TrialRecord> records;
  for (const auto& x : points) {
    auto config = checker->Check(ParamsOf(study_, x));
    if (!config.ok()) return config.status();
    for (auto& spec : RepeatTrials(study_, *config, 0, study_.repeats)) {
      store::TrialRecord r;
      r.trial_key = spec.key;
      r.params_json = spec.params_json;
      r.state = std::string(kTrialNew);
      records.push_back(std::move(r));
      specs.push_back(std::move(spec));
    }
  }
  // Rendered before anything is stored, as a grid's trials are in Prepare.
  if (auto refused = RenderRefusals(study_, specs); !refused.empty()) {
    return Status::InvalidArgument(fmt::format("tpe proposed trial {} that its template cannot carry: {}",
                                               refused.begin()->first, refused.begin()->second));
  }
  SWEEP_RETURN_IF_ERROR(store_.InsertTrialsIfAbsent(study_id_, records));
  SWEEP_RETURN_IF_ERROR(PlanProposed(specs));
  int ended = static_cast<int>(std::count_if(history.begin(), history.end(), [](const sampler::Observation& o) {
    return o.source == 0 && o.outcome != sampler::Outcome::kPending;
  }));
  for (size_t i = 0; i < records.size(); ++i) {
    specs_[specs[i].key] = specs[i];
    Event(
        records[i].id, "propose",
        fmt::format("tpe proposed {} {} (from {} ended trial(s))", records[i].trial_key, specs[i].params_json, ended));
    trials.push_back(std::move(records[i]));
  }
  return Status::OK();
}

// Fills the free slots: every new trial up to max_concurrent + queue_ahead. Trials whose
// scripts carry the same #SBATCH directives go as one job array throttled so that at most
// max_concurrent trials run at once; the rest, or every trial with arrays off, one job each.
Status Runner::SubmitNew(std::vector<store::TrialRecord>& trials, TickReport& report) {
  const ClusterSpec& c = study_.cluster;
  if (clock_.Now() < submit_paused_until_) return Status::OK();
  int live = 0;
  for (const auto& t : trials) {
    if (!IsFinalTrialState(t.state) && t.state != kTrialNew) ++live;
  }
  // Every live trial runs at most one job at a time, so throttles summing to the free slots keep
  // the study within max_concurrent however the queue starts them.
  int free_slots = c.max_concurrent - live;
  if (free_slots <= 0) return Status::OK();
  // A tpe study proposes only what can run now (one array of K = free slots), so every result
  // shapes the next proposals.
  if (study_.sampler == "tpe") SWEEP_RETURN_IF_ERROR(ProposeTrials(trials, free_slots));
  int64_t room = c.queue_ahead < 0 ? INT64_MAX : int64_t{free_slots} + c.queue_ahead;
  std::vector<std::pair<std::optional<std::vector<std::string>>, std::vector<store::TrialRecord*>>> groups;
  int64_t taken = 0;
  for (auto& t : trials) {
    if (taken >= room) break;
    if (t.state != kTrialNew || !specs_.count(t.trial_key)) continue;
    ++taken;
    std::optional<std::vector<std::string>> directives;
    if (c.arrays) {
      auto next = NextDirectives(t);
      if (!next.ok()) return next.status();
      directives = std::move(*next);
    }
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& x) { return x.first == directives; });
    if (g == groups.end() || !directives) g = groups.insert(groups.end(), {directives, {}});
    g->second.push_back(&t);
  }
  int max_chunk = c.arrays ? c.max_array_size : 1;
  if (submit_chunk_ > 0) max_chunk = std::min(max_chunk, submit_chunk_);
  for (auto& [directives, members] : groups) {
    for (size_t i = 0; i < members.size() && free_slots > 0; i += max_chunk) {
      std::vector<store::TrialRecord*> batch(members.begin() + i,
                                             members.begin() + std::min(members.size(), i + max_chunk));
      int throttle = std::min<int>(free_slots, static_cast<int>(batch.size()));
      SWEEP_RETURN_IF_ERROR(SubmitBatch(batch, throttle, report));
      if (clock_.Now() < submit_paused_until_) return Status::OK();
      free_slots -= throttle;
    }
  }
  return Status::OK();
}

void Runner::UndoSubmission(store::TrialRecord& t) {
  t.state = std::string(kTrialNew);
  t.attempt -= 1;  // the attempt that never reached Slurm is reused
  t.array_name.clear();
  t.array_index = -1;
}

Status Runner::SubmitBatch(std::vector<store::TrialRecord*>& batch, int throttle, TickReport& report) {
  bool array = batch.size() > 1;
  std::string array_name =
      array ? fmt::format("ss-{}-arr{}-{}", study_.name, batch.front()->id, batch.front()->attempt + 1) : "";
  std::vector<slurm::ArrayTask> tasks;  // the array's dispatch: task index -> that trial's script
  std::vector<std::string> directives;
  for (size_t i = 0; i < batch.size(); ++i) {
    store::TrialRecord& t = *batch[i];
    t.attempt += 1;
    t.array_name = array_name;
    t.array_index = array ? static_cast<int>(i) : -1;
    std::string own_log = files_.TrialLog(t.trial_key, t.attempt);
    t.log_path = array ? files_.ArrayLog(array_name, std::to_string(i)) : own_log;
    // Rendered once for this attempt: the script and the array's shared directives come from it.
    auto body = RenderBody(t);
    if (!body.ok()) return body.status();
    auto script = RenderScript(t, *body);
    if (!script.ok()) return script.status();
    std::string script_path = files_.TrialScript(t.trial_key, t.attempt);
    SWEEP_RETURN_IF_ERROR(transport_.WriteFile(script_path, *script, 0755));
    if (!array) continue;
    // The array shares its first task's directives; every task must carry the same ones (a
    // {{raw:}} value could add a line NextDirectives did not see): refused rather than guessed.
    std::vector<std::string> own = slurm::SbatchDirectives(*body);
    if (i == 0) directives = std::move(own);
    else if (own != directives) {
      return Status::InvalidArgument(fmt::format(
          "{}: the #SBATCH lines rendered for trial {} differ from those it was grouped by into a job array; "
          "nothing was submitted. Keep [space] values out of {{{{raw:}}}} placeholders in the #SBATCH block",
          study_.job.template_path, t.trial_key));
    }
    tasks.push_back({t.log_path, own_log, script_path});
  }
  std::string submit_path =
      array ? files_.ArrayScript(array_name) : files_.TrialScript(batch.front()->trial_key, batch.front()->attempt);
  if (array) {
    std::string body = slurm::ArrayDispatchBody(study_.name, directives, tasks);
    slurm::SbatchHeader h = Header();
    h.job_name = array_name;
    h.output = files_.ArrayLog(array_name, "%a");
    h.comment = ArrayTag(array_name);
    h.array = fmt::format("0-{}%{}", batch.size() - 1, throttle);
    auto script = slurm::AddSbatchHeader(body, h);
    if (!script.ok()) return script.status();
    SWEEP_RETURN_IF_ERROR(transport_.WriteFile(submit_path, *script, 0644));
  }
  // Record the intent first: if we die after sbatch but before storing the id, Reconcile finds
  // the job by name instead of submitting a second one.
  SWEEP_RETURN_IF_ERROR(store_.InTransaction([&]() -> Status {
    for (store::TrialRecord* t : batch) {
      t->state = std::string(kTrialSubmitting);
      SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(*t));
    }
    return Status::OK();
  }));
  auto job = client_.Submit(submit_path);
  if (!job.ok() && job.status().IsUnavailable()) return job.status();  // stays "submitting"; reconciled next tick
  if (!job.ok() && job.status().IsResourceExhausted()) {
    // A full submit quota: wait and retry with smaller arrays; the rest of the loop goes on.
    submit_pause_s_ = std::clamp(submit_pause_s_ * 2, 60.0, 900.0);
    submit_paused_until_ = clock_.Now() + submit_pause_s_;
    submit_chunk_ = std::max<int>(1, static_cast<int>(batch.size()) / 2);
    Event(std::nullopt, "submit_paused",
          fmt::format(
              "the cluster refuses more jobs now ({}); {} trial(s) wait {:.0f} s, then go in arrays of at most {}",
              job.status().message(), batch.size(), submit_pause_s_, submit_chunk_));
  }
  if (!job.ok() && job.status().IsResourceExhausted()) {
    // Left "submitting": an sbatch stopped by its timeout may have got through just before, so
    // Reconcile looks for the job by name before anything is submitted again.
    return Status::OK();
  }
  if (!job.ok() && slurm::IsStudyWideRefusal(job.status().message())) {
    // No job of the study can go in until the study file is fixed: the trials are not to blame,
    // so they stay new and the run stops with the reason.
    SWEEP_RETURN_IF_ERROR(store_.InTransaction([&]() -> Status {
      for (store::TrialRecord* t : batch) {
        t->state = std::string(kTrialNew);
        SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(*t));
      }
      return Status::OK();
    }));
    Event(std::nullopt, "submit_refused", job.status().message());
    return Status::InvalidArgument(fmt::format(
        "{}: sbatch refused the study's jobs: {}. Check [cluster] partition, account and qos and [job] time_limit, "
        "gpus_per_node in the study file; no trial was marked, so the next run submits them",
        study_.path, job.status().message()));
  }
  return store_.InTransaction([&]() -> Status {
    for (size_t i = 0; i < batch.size(); ++i) {
      store::TrialRecord& t = *batch[i];
      if (!job.ok()) {
        t.state = std::string(slurm::JobStateName(slurm::JobState::kFailed));
        t.reason = "sbatch refused the job: " + job.status().message();
        t.ended_at = clock_.Now();
        Event(t.id, "submit_failed", t.reason);
      } else {
        t.job_id = array ? fmt::format("{}_{}", *job, i) : *job;
        t.state = std::string(slurm::JobStateName(slurm::JobState::kPending));
        t.submitted_at = clock_.Now();
        Event(t.id, "submit", fmt::format("submitted {} as job {}", t.trial_key, t.job_id));
        ++report.submitted;
      }
      SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    }
    if (job.ok()) {
      submit_pause_s_ = 0;
      if (submit_chunk_ > 0) submit_chunk_ = std::min(study_.cluster.max_array_size, submit_chunk_ * 2);
    }
    return Status::OK();
  });
}

Result<TickReport> Runner::Tick() {
  if (!prepared_) SWEEP_RETURN_IF_ERROR(Prepare());
  ++tick_;
  TickReport report;
  int64_t calls_before = transport_.counts().total();
  auto trials = store_.ListTrials(study_id_);
  if (!trials.ok()) return trials.status();

  Status st = Reconcile(*trials);
  if (st.ok() && !reread_checked_) st = RereadEmptyLogs(*trials);
  if (st.ok()) st = QueryAndIngest(*trials, report);
  if (st.ok()) st = ApplyStopping(*trials, report);
  if (st.ok()) SWEEP_RETURN_IF_ERROR(CheckObjectiveLogged(*trials));
  if (st.ok()) SWEEP_RETURN_IF_ERROR(CheckLogsYield(*trials));
  if (st.ok()) SWEEP_RETURN_IF_ERROR(StopFailureStorm(*trials));
  // Never submit while the state of the cluster is unknown: that is how duplicates happen.
  if (st.ok()) st = SubmitNew(*trials, report);
  if (!st.ok()) {
    if (!st.IsUnavailable()) return st;
    report.unavailable = true;
    Event(std::nullopt, "unavailable",
          std::string(store::IsDatabaseBusy(st) ? "database busy" : "cluster unreachable") +
              ", will retry: " + st.message());
  }
  bool to_propose = false;  // tpe: budget left and configurations left to propose
  if (study_.sampler == "tpe" && !tpe_exhausted_) {
    auto own = std::count_if(trials->begin(), trials->end(),
                             [&](const store::TrialRecord& t) { return specs_.count(t.trial_key) > 0; });
    to_propose = own < study_.trials;
  }
  report.done = st.ok() && !to_propose && std::all_of(trials->begin(), trials->end(), [&](const store::TrialRecord& t) {
                  return IsFinalTrialState(t.state) || !specs_.count(t.trial_key);
                });
  report.cluster_calls = transport_.counts().total() - calls_before;
  for (const auto& t : *trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    if (t.state == slurm::JobStateName(slurm::JobState::kRunning)) ++report.running;
    else ++report.queued;
  }
  if (!tick_lines_) return report;
  log_ << fmt::format(
      "[{}] tick {}: {} running, {} queued, {} submitted, {} ended, {} points, {} squeue/sacct call(s), "
      "{} cluster call(s)\n",
      FormatUtc(clock_.Now()), tick_, report.running, report.queued, report.submitted, report.ended, report.points,
      report.slurm_queries, report.cluster_calls);
  log_.flush();
  return report;
}

Status Runner::Run(int max_ticks) {
  PollSchedule schedule(study_.cluster.poll_interval_s, study_.cluster.max_poll_interval_s, rng_());
  // Prepare needs the cluster too (work dir, staged files): wait for it like any tick would.
  for (int failures = 0;; ++failures) {
    Status st = Prepare();
    if (st.ok()) break;
    if (!st.IsUnavailable() || (max_ticks > 0 && failures >= max_ticks)) return st;
    if (StopRequested()) return Status::OK();
    Event(std::nullopt, "unavailable", "cluster unreachable, will retry: " + st.message());
    clock_.SleepFor(schedule.Next(false, true));
  }
  // One pace for all of this user's studies on this cluster: wait for our slot before each tick.
  auto budget = QueryBudget::Open(QueryBudget::DefaultPath(transport_.Describe()), study_.cluster.query_gap_s);
  if (!budget.ok()) return budget.status();
  for (int i = 0; max_ticks == 0 || i < max_ticks; ++i) {
    if (StopRequested()) return Status::OK();
    // The wall clock, not clock_: the pace file's slots are shared with other processes, and a
    // test clock that fast-forwards would book slots in their future.
    auto wait = budget->Reserve(SystemClock().Now());
    if (!wait.ok()) return wait.status();
    if (*wait > 0) clock_.SleepFor(*wait);
    auto r = Tick();
    if (!r.ok()) return r.status();
    if (on_tick_) on_tick_(*r);
    if (r->done) {
      Event(std::nullopt, "done", "every trial has ended");
      RefreshReports(/*final=*/true);
      return Status::OK();
    }
    if (clock_.Now() - last_report_ >= study_.report.refresh_minutes * 60) RefreshReports(/*final=*/false);
    clock_.SleepFor(schedule.Next(r->submitted + r->ended + r->changed > 0, r->unavailable));
  }
  return Status::OK();
}

Status Runner::CheckObjectiveLogged(const std::vector<store::TrialRecord>& trials) {
  if (!watch_primed_) {
    watch_primed_ = true;
    for (const auto& t : trials) {
      if (t.log_offset == 0) continue;
      auto row = store_.LastMetric(t.id, study_.objective.metric);
      if (!row.ok()) return row.status();
      if (row->has_value()) {
        watch_.ObjectiveStored();
        break;
      }
    }
  }
  for (const auto& t : trials) {
    if (IsFinalTrialState(t.state)) watch_.Ended(t.id);
  }
  if (std::string why = watch_.TakeNoTimeAxisWarning(); !why.empty()) Event(std::nullopt, "warning", "warning: " + why);
  std::string missing = watch_.MissingObjective();
  if (missing.empty()) return Status::OK();
  int live = static_cast<int>(std::count_if(trials.begin(), trials.end(), [](const store::TrialRecord& t) {
    return !t.job_id.empty() && !IsFinalTrialState(t.state);
  }));
  Event(std::nullopt, "objective_missing", missing);
  std::string on_slurm =
      live == 0
          ? "No job of the study is on Slurm"
          : fmt::format("The {} job(s) already on Slurm go on (`slurmsweep cancel {}` stops them)", live, study_.path);
  // Named as a load error names a key (file:line: key '...'); the default lm_loss has no line in the file.
  std::string where = study_.objective.metric_line > 0
                          ? fmt::format("{}:{}: key 'objective.metric'", study_.path, study_.objective.metric_line)
                          : fmt::format("{}: [objective] metric (the default, lm_loss)", study_.path);
  return Status::InvalidArgument(fmt::format(
      "{}: {}. Submission stopped. {}; every metric the logs have is stored, so nothing is "
      "lost: fix [objective] metric (or what the trainer logs; `slurmsweep metrics LOG --study {}` checks a log) and "
      "`slurmsweep run {}` goes on. An objective logged only at the end: [objective] logged_within = 0",
      where, missing, on_slurm, study_.path, study_.path));
}

bool Runner::StopRequested() {
  if (!interrupted_ || !interrupted_()) return false;
  if (prepared_) Event(std::nullopt, "interrupted", "stopped by a signal; the jobs stay on Slurm");
  return true;
}

// The objective's curve (and Megatron's NaN-iteration counts) of a trial, read from the store
// once into stopping_'s series, which Ingest then extends, so the rules cost no database scan and
// no copy per tick.
Status Runner::LoadCurve(int64_t trial_id) {
  if (stopping_.Has(trial_id)) return Status::OK();
  std::vector<CurvePoint> curves[2];
  const std::string names[2] = {study_.objective.metric, "nan_iters"};
  for (int k = 0; k < 2; ++k) {
    auto rows = store_.MetricSeries(trial_id, names[k]);
    if (!rows.ok()) return rows.status();
    curves[k].reserve(rows->size());
    for (const auto& m : *rows) curves[k].push_back({m.step, m.time_s, m.value});
  }
  stopping_.Append(trial_id, Gpus(), curves[0], curves[1]);
  return Status::OK();
}

// Early stopping: the rules see every trial's stored curve; the losers get their reason recorded
// first (so the end is classed "pruned" even after a crash), then one scancel for all of them.
Status Runner::ApplyStopping(std::vector<store::TrialRecord>& trials, TickReport& report) {
  const StoppingConfig& cfg = study_.stopping;
  if (!cfg.AnyRule()) return Status::OK();
  std::vector<TrialProgress> progress;
  std::vector<std::string> config_of;  // of each progress entry
  std::map<int64_t, store::TrialRecord*> by_id;
  for (auto& t : trials) {
    bool live = t.state == "running" && t.stop_request.empty();
    bool done = t.state == "completed";
    // Being cancelled (stop requested, job not gone yet) or ended early: still evidence, never
    // stopped twice.
    bool stopping = t.state == "running" && !t.stop_request.empty();
    bool stopped = stopping || (!live && !done && IsFinalTrialState(t.state) && t.state != kTrialDropped &&
                                t.state != kTrialSkipped);
    if (!live && !done && !stopped) continue;
    auto spec = specs_.find(t.trial_key);
    if (spec == specs_.end()) continue;
    TrialProgress p;
    p.id = t.id;
    p.name = t.trial_key;
    p.phase = live ? TrialPhase::kRunning : done ? TrialPhase::kCompleted : TrialPhase::kStopped;
    p.gpus = Gpus();
    for (const auto& [name, v] : spec->second.params) {
      if (name != study_.seed_var) p.params.emplace_back(name, ParamToString(v));  // repeats: one configuration
    }
    SWEEP_RETURN_IF_ERROR(LoadCurve(t.id));  // its curves are stopping_'s: not copied
    by_id[t.id] = &t;
    progress.push_back(std::move(p));
    config_of.push_back(ConfigIdentity(study_, t.params_json));
  }
  std::vector<std::string> jobs;
  // A repeat is never judged against its siblings (config_groups.h).
  for (const StopDecision& d : EvaluateApartFromSiblings(stopping_, std::move(progress), config_of)) {
    store::TrialRecord& t = *by_id.at(d.trial_id);
    t.stop_request = fmt::format("pruned by the {} rule: {}", d.rule, d.reason);
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    Event(t.id, "prune", t.stop_request);
    jobs.push_back(t.job_id);
    ++report.changed;
  }
  return client_.Cancel(jobs);
}

// The latest report is always on disk during a multi-day study: the HTML every few minutes,
// the CSV files (which can be large) at the end. A report that cannot be written is logged;
// it never stops the sweep.
void Runner::RefreshReports(bool final) {
  last_report_ = clock_.Now();
  if (!final) {
    LogBackgroundReport();
    if (report_running_) return;  // the previous refresh is still being written
    if (report_thread_.joinable()) report_thread_.join();
    report_running_ = true;
    report_thread_ = std::thread([this, now = clock_.Now(), options = ReportOptionsFor(study_)] {
      // A connection of its own: a Store is used by one thread (store.h), and WAL lets it read
      // while the loop writes.
      Status st;
      auto db = store::Store::OpenReadOnly(study_.database);
      if (!db.ok()) st = db.status();
      else if (report_writer_) st = report_writer_(**db, now);
      else st = WriteReports(**db, study_, study_id_, study_.report.html, "", now, options);
      {
        std::lock_guard<std::mutex> lock(report_mu_);
        report_result_ = std::move(st);
      }
      report_running_ = false;
    });
    return;
  }
  if (report_thread_.joinable()) report_thread_.join();
  LogBackgroundReport();
  Status st = WriteReports(store_, study_, study_id_, study_.report.html, study_.report.csv_dir, clock_.Now(),
                           ReportOptionsFor(study_));
  if (!st.ok()) {
    Event(std::nullopt, "report_failed", "could not write the report: " + st.ToString());
  } else {
    Event(std::nullopt, "report", fmt::format("report: {} and {}/", study_.report.html, study_.report.csv_dir));
  }
}

void Runner::LogBackgroundReport() {
  std::optional<Status> result;
  {
    std::lock_guard<std::mutex> lock(report_mu_);
    result = std::exchange(report_result_, std::nullopt);
  }
  if (result && !result->ok()) {
    Event(std::nullopt, "report_failed", "could not write the report: " + result->ToString());
  }
}

Result<int> Runner::CancelAll() {
  auto id = store_.UpsertStudy(study_.name, study_.path, study_.hash, clock_.Now());
  if (!id.ok()) return id.status();
  study_id_ = *id;
  auto trials = store_.ListTrials(study_id_);
  if (!trials.ok()) return trials.status();
  // A job array is cancelled by its id (every task of it is this study's): the scancel command
  // stays short however many thousand tasks are queued.
  std::vector<std::string> ids;
  int live = 0;
  for (auto& t : *trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    ++live;
    std::string id = t.array_name.empty() ? t.job_id : slurm::ArrayBaseId(t.job_id);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    // Recorded before scancel, so the end is classed as ours even if we die right after.
    t.stop_request = "cancelled by the user (slurmsweep cancel)";
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
  }
  SWEEP_RETURN_IF_ERROR(client_.Cancel(ids));
  int unsubmitted = 0;
  for (auto& t : *trials) {
    if (t.state != kTrialNew) continue;
    t.state = std::string(slurm::JobStateName(slurm::JobState::kCancelled));
    t.reason = "cancelled by the user before submission";
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    ++unsubmitted;
  }
  Event(std::nullopt, "cancel",
        fmt::format("cancel requested: scancel of {} live trial(s) in {} job(s) or array(s), {} unsubmitted trial(s) "
                    "cancelled",
                    live, ids.size(), unsubmitted));
  return live + unsubmitted;
}

Result<int> Runner::AwaitEnds(double max_wait_s, double poll_s) {
  double deadline = clock_.Now() + max_wait_s;
  for (;;) {
    auto trials = store_.ListTrials(study_id_);
    if (!trials.ok()) return trials.status();
    TickReport report;
    SWEEP_RETURN_IF_ERROR(Reconcile(*trials));
    SWEEP_RETURN_IF_ERROR(QueryAndIngest(*trials, report));
    int open = static_cast<int>(std::count_if(trials->begin(), trials->end(), [](const store::TrialRecord& t) {
      return !t.job_id.empty() && !IsFinalTrialState(t.state);
    }));
    if (open == 0 || clock_.Now() >= deadline) return open;
    clock_.SleepFor(std::min(poll_s, deadline - clock_.Now()));
  }
}

}  // namespace sweep
