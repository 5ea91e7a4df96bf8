// Submitting new trials, one job or one job array per group of scripts; see submitter.h.
#include "run/submitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "base/params.h"
#include "base/trial_state.h"
#include "run/job_marks.h"
#include "run/trial_script.h"
#include "slurm/job_state.h"

namespace sweep::run {
namespace {

// Stands for a trial's log path until the job array it joins is known: drawn from the safe
// alphabet, as every value the renderer takes, so a safe path replaces it exactly as rendered.
constexpr std::string_view kLogMarker = "slurmsweep-log-marker@@=";

std::string ReplaceAll(std::string text, std::string_view from, std::string_view to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

void UndoSubmission(store::TrialRecord& t) {
  t.state = std::string(kTrialNew);
  t.attempt -= 1;  // the attempt that never reached Slurm is reused
  t.array_name.clear();
  t.array_index = -1;
}

// The names, the header and the rendering are trial_script's: `plan --script` prints what this submits.
std::string Submitter::JobName(const std::string& trial_key) const { return TrialJobName(ctx_.study, trial_key); }

std::string Submitter::CommentTag(const store::TrialRecord& t) const { return TrialCommentTag(ctx_.study, t); }

std::string Submitter::ArrayTag(const std::string& array_name) const {
  return fmt::format("slurmsweep:study={}:array={}", ctx_.study.name, array_name);
}

slurm::SbatchHeader Submitter::Header() const { return StudyHeader(ctx_.study); }

Result<std::string> Submitter::RenderBody(const store::TrialRecord& t, const std::string& log_path, int attempt) const {
  auto spec = ctx_.specs.find(t.trial_key);
  if (spec == ctx_.specs.end()) return Status::Internal("trial " + t.trial_key + " is not in this study file");
  store::TrialRecord at = t;
  at.log_path = log_path;
  at.attempt = attempt;
  return RenderTrialBody(ctx_.study, spec->second, at, ctx_.files.TrialDir(t.trial_key));
}

Result<std::string> Submitter::AddHeader(const store::TrialRecord& t, std::string_view body) const {
  return AddTrialHeader(ctx_.study, t, body);
}

Result<std::string> Submitter::Script(const store::TrialRecord& t) const {
  auto body = RenderBody(t, t.log_path, t.attempt);
  if (!body.ok()) return body.status();
  return AddHeader(t, *body);
}

Result<Submitter::Rendered> Submitter::RenderNext(store::TrialRecord& t) const {
  auto body = RenderBody(t, std::string(kLogMarker), t.attempt + 1);
  if (!body.ok()) return body.status();
  Rendered r{&t, std::move(*body), std::nullopt};
  // A directive that names the log keeps the trial out of every array: its log path depends on the
  // array it would join.
  std::vector<std::string> directives = slurm::SbatchDirectives(r.body);
  bool names_log = std::any_of(directives.begin(), directives.end(),
                               [](const std::string& d) { return d.find(kLogMarker) != std::string::npos; });
  if (!names_log) r.key = std::move(directives);
  return r;
}

Result<std::string> Submitter::WithLog(const Rendered& r) const {
  const store::TrialRecord& t = *r.trial;
  // A path outside the safe alphabet is rendered as such: the renderer's refusal names it.
  if (!IsSafeValue(t.log_path)) return RenderBody(t, t.log_path, t.attempt);
  return ReplaceAll(r.body, kLogMarker, t.log_path);
}

int Submitter::LiveJobs(const std::vector<store::TrialRecord>& trials) {
  int live = 0;
  for (const auto& t : trials) {
    if (!t.job_id.empty() && !IsFinalTrialState(t.state) && t.state != kTrialNew) ++live;
  }
  return live;
}

int Submitter::ControllerJobs(const std::vector<store::TrialRecord>& trials) const {
  // Slurm purges ended jobs older than MinJobAge once a minute (slurmctld's purge interval).
  constexpr double kPurgeIntervalS = 60;
  double forgotten_before = ctx_.clock.Now() - site_->min_job_age_s - kPurgeIntervalS;
  int held = 0;
  for (const auto& t : trials) {
    if (t.state == kTrialNew) continue;
    if (!IsFinalTrialState(t.state)) ++held;  // queued, running, or being submitted
    else if (!t.job_id.empty() && t.ended_at && *t.ended_at >= forgotten_before) ++held;
  }
  return held;
}

Result<int64_t> Submitter::ShareRoom(const std::vector<store::TrialRecord>& trials, int64_t wanting) {
  if (site_->max_job_count <= 0) return wanting;
  int share = std::max(1, static_cast<int>(site_->max_job_count * kMaxJobCountShare));
  int own = ControllerJobs(trials);
  int64_t left = std::max(0, share - own);
  int64_t waiting = std::count_if(trials.begin(), trials.end(), [&](const store::TrialRecord& t) {
    return t.state == kTrialNew && ctx_.specs.count(t.trial_key);
  });
  int64_t want = std::min(wanting, waiting);
  if (want > left && !share_said_) {
    share_said_ = true;
    ctx_.Event(std::nullopt, "submit_throttled",
               fmt::format("the study keeps at most {} of its jobs in the Slurm controller at once ({:.0f}% of the "
                           "site's MaxJobCount {}, the rest left to other users; an ended job counts until Slurm "
                           "forgets it, after MinJobAge {} s): {} trial(s) wait and go in as its jobs end",
                           share, 100 * kMaxJobCountShare, site_->max_job_count, site_->min_job_age_s, want - left));
  }
  return UserRoom(trials, share, own, std::min(want, left));
}

Result<int64_t> Submitter::UserRoom(const std::vector<store::TrialRecord>& trials, int share, int own, int64_t room) {
  int uncounted = std::max(1, static_cast<int>(share * kUncountedShare));
  if (room <= 0) return room;
  int64_t without_count = std::clamp<int64_t>(uncounted - own, 0, room);
  bool fresh = ctx_.clock.Now() - user_counted_at_ < kUserCountIntervalS;
  if (own + room <= uncounted || fresh) {
    // No count now: within the uncounted part (all a small study wants), and within a minute of a
    // count never beyond what it left (it may have found the share full).
    int64_t granted = fresh ? std::min(without_count, counted_left_) : without_count;
    if (fresh) counted_left_ -= granted;
    return granted;
  }
  user_counted_at_ = ctx_.clock.Now();
  counted_left_ = INT64_MAX;  // a count that cannot be read leaves the uncounted part only
  auto mine = ctx_.client.CountMyJobs();
  if (!mine.ok() && mine.status().IsUnavailable()) return mine.status();  // an outage: nothing goes in
  if (!mine.ok()) {
    if (!user_unread_said_) {
      user_unread_said_ = true;
      ctx_.Event(std::nullopt, "user_jobs_unread",
                 fmt::format("the user's jobs in the Slurm controller could not be counted ({}): the study keeps at "
                             "most {} of its own jobs there (the part of the share of MaxJobCount {} a study fills "
                             "without counting) until a count succeeds; it tries again each {:.0f} s",
                             mine.status().message(), uncounted, site_->max_job_count, kUserCountIntervalS));
    }
    return without_count;
  }
  // A trial still "submitting" (sbatch in doubt) may hold a job the count missed: counted as held.
  int in_doubt = static_cast<int>(std::count_if(
      trials.begin(), trials.end(), [](const store::TrialRecord& t) { return t.state == kTrialSubmitting; }));
  int64_t user_left = std::max(0, share - *mine - in_doubt);
  if (user_left < room && !others_said_) {
    others_said_ = true;
    ctx_.Event(std::nullopt, "submit_throttled_user",
               fmt::format("the user's jobs in the Slurm controller ({} counted with squeue --me, {} of them this "
                           "study's) keep at most {} for all of the user's studies ({:.0f}% of the site's MaxJobCount "
                           "{}): the user's other jobs leave this study room for {} more now; {} trial(s) wait, "
                           "counted again at most each {:.0f} s",
                           *mine, std::min(own, *mine), share, 100 * kMaxJobCountShare, site_->max_job_count, user_left,
                           room - user_left, kUserCountIntervalS));
  }
  counted_left_ = user_left - std::min(room, user_left);
  return std::min(room, user_left);
}

bool Submitter::Paused(const std::vector<store::TrialRecord>& trials) const {
  if (ctx_.clock.Now() >= paused_until_) return false;
  return quota_jobs_ <= 0 || LiveJobs(trials) >= quota_jobs_;
}

int Submitter::FreeSlots(const std::vector<store::TrialRecord>& trials) const {
  int live = 0;
  for (const auto& t : trials) {
    if (!IsFinalTrialState(t.state) && t.state != kTrialNew) ++live;
  }
  // Every live trial runs at most one job at a time, so throttles summing to the free slots keep
  // the study within max_concurrent however the queue starts them.
  return ctx_.study.cluster.max_concurrent - live;
}

// Fills the free slots: every new trial up to max_concurrent + queue_ahead. Trials whose
// scripts carry the same #SBATCH directives go as one job array throttled so that at most
// max_concurrent trials run at once; the rest, or every trial with arrays off, one job each.
Status Submitter::SubmitNew(std::vector<store::TrialRecord>& trials, int free_slots, TickReport& report) {
  const study::ClusterSpec& c = ctx_.study.cluster;
  if (Paused(trials) || free_slots <= 0) return Status::OK();
  live_ = LiveJobs(trials);
  refused_ = false;
  int64_t room = c.queue_ahead < 0 ? INT64_MAX : int64_t{free_slots} + c.queue_ahead;
  // Slots the last refusal's quota has freed since (squeue shows fewer of the study's jobs): as many
  // jobs go in, not more, so the next sbatch is not refused again.
  if (ctx_.clock.Now() < paused_until_ && quota_jobs_ > 0) {
    room = std::min<int64_t>(room, quota_jobs_ - LiveJobs(trials));
    free_slots = static_cast<int>(std::min<int64_t>(free_slots, room));
  }
  // The site's limits, once a run, before its first sbatch: the share of MaxJobCount bounds what
  // goes in now (the rest waits for this study's jobs to end), MaxArraySize the arrays below.
  if (!site_ && std::any_of(trials.begin(), trials.end(), [&](const store::TrialRecord& t) {
        return t.state == kTrialNew && ctx_.specs.count(t.trial_key);
      })) {
    auto site = ctx_.client.ReadSiteLimits();
    if (!site.ok()) return site.status();
    site_ = *site;
    if (!site_->unread.empty()) {
      ctx_.Event(std::nullopt, "site_limits_unread",
                 fmt::format("the site's limits could not be read ({}): arrays are not split by MaxArraySize and "
                             "the study's share of MaxJobCount is not kept; a refused sbatch is still waited out",
                             site_->unread));
    }
  }
  if (site_) {
    auto share_room = ShareRoom(trials, room);
    if (!share_room.ok()) return share_room.status();
    room = std::min(room, *share_room);
  }
  std::vector<Rendered> rendered;
  for (auto& t : trials) {
    if (static_cast<int64_t>(rendered.size()) >= room) break;
    if (t.state != kTrialNew || !ctx_.specs.count(t.trial_key)) continue;
    auto r = RenderNext(t);
    if (!r.ok()) return r.status();
    if (!c.arrays) r->key.reset();
    rendered.push_back(std::move(*r));
  }
  std::vector<std::optional<std::vector<std::string>>> keys;
  for (const Rendered& r : rendered) keys.push_back(r.key);
  size_t max_chunk = static_cast<size_t>(c.arrays ? c.max_array_size : 1);
  // An array larger than the site's MaxArraySize is refused whole ("Invalid job array
  // specification"): larger groups go as several arrays, each throttled (MaxArraySize=1: no arrays).
  if (c.arrays && site_ && site_->max_array_size > 0) {
    max_chunk = std::min(max_chunk, static_cast<size_t>(site_->max_array_size));
  }
  if (chunk_ > 0) max_chunk = std::min(max_chunk, static_cast<size_t>(chunk_));
  for (const std::vector<size_t>& group : slurm::GroupByDirectives(keys)) {
    for (size_t i = 0; i < group.size() && free_slots > 0; i += max_chunk) {
      std::vector<Rendered*> batch;
      for (size_t k = i; k < std::min(group.size(), i + max_chunk); ++k) batch.push_back(&rendered[group[k]]);
      int throttle = std::min<int>(free_slots, static_cast<int>(batch.size()));
      SWEEP_RETURN_IF_ERROR(SubmitBatch(batch, rendered[group.front()].key, throttle, report));
      if (refused_) return Status::OK();
      free_slots -= throttle;
    }
  }
  return Status::OK();
}

Status Submitter::SubmitBatch(std::vector<Rendered*>& batch, const std::optional<std::vector<std::string>>& key,
                              int throttle, TickReport& report) {
  const study::Study& study = ctx_.study;
  const StudyFiles& files = ctx_.files;
  bool array = batch.size() > 1;
  store::TrialRecord& first = *batch.front()->trial;
  std::string array_name = array ? fmt::format("ss-{}-arr{}-{}", study.name, first.id, first.attempt + 1) : "";
  std::vector<slurm::ArrayTask> tasks;  // the array's dispatch: task index -> that trial's script
  for (size_t i = 0; i < batch.size(); ++i) {
    store::TrialRecord& t = *batch[i]->trial;
    t.attempt += 1;
    t.array_name = array_name;
    t.array_index = array ? static_cast<int>(i) : -1;
    std::string own_log = files.TrialLog(t.trial_key, t.attempt);
    t.log_path = array ? files.ArrayLog(array_name, std::to_string(i)) : own_log;
    auto body = WithLog(*batch[i]);
    if (!body.ok()) return body.status();
    auto script = AddHeader(t, *body);
    if (!script.ok()) return script.status();
    std::string script_path = files.TrialScript(t.trial_key, t.attempt);
    // Owner only: a script carries the study's values ([job.vars] may hold a token).
    SWEEP_RETURN_IF_ERROR(ctx_.transport.WriteFile(script_path, *script, 0700));
    if (array) tasks.push_back({t.log_path, own_log, script_path});
  }
  std::string submit_path = array ? files.ArrayScript(array_name) : files.TrialScript(first.trial_key, first.attempt);
  if (array) {
    // Every task shares the group's directives, the key it was grouped by.
    std::string body = slurm::ArrayDispatchBody(study.name, key.value_or(std::vector<std::string>()), tasks);
    slurm::SbatchHeader h = Header();
    h.job_name = array_name;
    h.output = files.ArrayLog(array_name, "%a");
    h.comment = ArrayTag(array_name);
    h.array = fmt::format("0-{}%{}", batch.size() - 1, throttle);
    auto script = slurm::AddSbatchHeader(body, h);
    if (!script.ok()) return script.status();
    SWEEP_RETURN_IF_ERROR(ctx_.transport.WriteFile(submit_path, *script, 0600));
  }
  store::Store& store = ctx_.store;
  // Record the intent first: if we die after sbatch but before storing the id, Reconciler finds
  // the job by name instead of submitting a second one.
  SWEEP_RETURN_IF_ERROR(store.InTransaction([&]() -> Status {
    for (Rendered* r : batch) {
      r->trial->state = std::string(kTrialSubmitting);
      SWEEP_RETURN_IF_ERROR(store.UpdateTrial(*r->trial));
    }
    return Status::OK();
  }));
  auto job = ctx_.client.Submit(submit_path);
  if (!job.ok() && job.status().IsUnavailable()) return job.status();  // stays "submitting"; reconciled next tick
  if (!job.ok() && job.status().IsResourceExhausted()) {
    // A full submit quota: wait until the study's own jobs free slots (squeue counts them every
    // tick), and retry with smaller arrays; the rest of the loop goes on. The timer is for a quota
    // the user's other jobs fill: only their end frees it, which this study's squeue does not see.
    pause_s_ = std::clamp(pause_s_ * 2, 60.0, 900.0);
    paused_until_ = ctx_.clock.Now() + pause_s_;
    refused_ = true;
    quota_jobs_ = live_;
    chunk_ = std::max<int>(1, static_cast<int>(batch.size()) / 2);
    std::string until =
        quota_jobs_ > 0
            ? fmt::format("until fewer than {} of this study's jobs are queued or running (at most {:.0f} s)",
                          quota_jobs_, pause_s_)
            : fmt::format("{:.0f} s (the quota is full of jobs of other studies)", pause_s_);
    ctx_.Event(
        std::nullopt, "submit_paused",
        fmt::format("the cluster refuses more jobs now ({}); {} trial(s) wait {}, then go in arrays of at most {}",
                    job.status().message(), batch.size(), until, chunk_));
    // sbatch answered with a refusal: no job went in (an sbatch with no answer is the Unavailable
    // case above, which stays "submitting" and is looked for by name). Back to new, so the next tick
    // does not report an interrupted submission that never was.
    return store.InTransaction([&]() -> Status {
      for (Rendered* r : batch) {
        UndoSubmission(*r->trial);
        SWEEP_RETURN_IF_ERROR(store.UpdateTrial(*r->trial));
      }
      return Status::OK();
    });
  }
  if (!job.ok() && job.status().cause() == Status::Cause::kStudyWideRefusal) {
    // No job of the study can go in until the study file is fixed: the trials are not to blame,
    // so they stay new and the run stops with the reason.
    SWEEP_RETURN_IF_ERROR(store.InTransaction([&]() -> Status {
      for (Rendered* r : batch) {
        r->trial->state = std::string(kTrialNew);
        SWEEP_RETURN_IF_ERROR(store.UpdateTrial(*r->trial));
      }
      return Status::OK();
    }));
    ctx_.Event(std::nullopt, "submit_refused", job.status().message());
    return Status::InvalidArgument(fmt::format(
        "{}: sbatch refused the study's jobs: {}. Check [cluster] partition, account and qos and [job] time_limit, "
        "gpus_per_node in the study file; no trial was marked, so the next run submits them",
        study.path, job.status().message()));
  }
  return store.InTransaction([&]() -> Status {
    for (size_t i = 0; i < batch.size(); ++i) {
      store::TrialRecord& t = *batch[i]->trial;
      if (!job.ok()) {
        t.state = std::string(slurm::JobStateName(slurm::JobState::kFailed));
        t.reason = "sbatch refused the job: " + job.status().message();
        t.ended_at = ctx_.clock.Now();
        ctx_.Event(t.id, "submit_failed", t.reason);
      } else {
        t.job_id = array ? fmt::format("{}_{}", *job, i) : *job;
        t.state = std::string(slurm::JobStateName(slurm::JobState::kPending));
        t.submitted_at = ctx_.clock.Now();
        ctx_.Event(t.id, "submit", fmt::format("submitted {} as job {}", t.trial_key, t.job_id));
        ++report.submitted;
      }
      SWEEP_RETURN_IF_ERROR(store.UpdateTrial(t));
    }
    if (job.ok()) {
      live_ += static_cast<int>(batch.size());
      pause_s_ = 0;
      if (chunk_ > 0) chunk_ = std::min(study.cluster.max_array_size, chunk_ * 2);
    }
    return Status::OK();
  });
}

}  // namespace sweep::run
