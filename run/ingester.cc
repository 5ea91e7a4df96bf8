// Reading the trials' logs and telemetry into the store; see ingester.h. The checks of what the
// logs yield are in ingester_checks.cc.
#include "run/ingester.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "base/telemetry.h"
#include "base/trial_state.h"
#include "logs/telemetry_parser.h"
#include "run/job_marks.h"
#include "slurm/job_state.h"

namespace sweep::run {
namespace {

constexpr size_t kReadChunk = 4 << 20;  // per trial per read; a busy log is read in several
// Trials starting to be read in one tick from which the store reads the study's summaries in one statement
// instead of one each (a run's first tick: 10,000 of them cost 1.1 s one by one).
constexpr size_t kKeepSummariesFrom = 32;

// Rules that compare trials at equal training time (all but divergence).
bool TimeRulesOn(const StoppingConfig& c) {
  return c.race.enabled || c.halving.enabled || c.median.enabled || c.patience.enabled || c.throughput.enabled;
}

}  // namespace

Ingester::Ingester(RunContext& ctx, stopping::StoppingState& stopping)
    : ctx_(ctx),
      stopping_(stopping),
      watch_(ctx.study.objective.metric, TimeRulesOn(ctx.study.stopping), ctx.study.objective.LoggedWithin()),
      yield_(ctx.study.metric_format.format) {}

void Ingester::ForgetRead(int64_t id) {
  parsers_.erase(id);
  stopping_.Forget(id);
}

void Ingester::Forget(int64_t id) {
  ForgetRead(id);
  yield_.Forget(id);
}

Ingester::Reads Ingester::Read(const std::vector<store::TrialRecord>& trials,
                               const std::map<std::string, slurm::JobInfo>& jobs) {
  std::vector<slurm::ReadRequest> reads, telemetry_reads, marks_reads;
  std::vector<int64_t> read_ids, read_offsets, marks_ids;
  for (const auto& t : trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state) || t.log_path.empty()) continue;
    auto it = jobs.find(t.job_id);
    if (it != jobs.end() &&
        (it->second.state == slurm::JobState::kPending || it->second.state == slurm::JobState::kUnknown)) {
      continue;
    }
    // From one byte before the offset: a log shorter than what was read of it was rewritten by a
    // new run of the job (Reconciler::HandleRestarts).
    reads.push_back({t.log_path, static_cast<uint64_t>(std::max<int64_t>(0, t.log_offset - 1)), kReadChunk});
    read_ids.push_back(t.id);
    read_offsets.push_back(t.log_offset);
    if (ctx_.study.job.monitor) {
      telemetry_reads.push_back({TelemetryPath(t), static_cast<uint64_t>(t.telemetry_offset), kReadChunk});
    }
    // A log read from its start is checked against its start marks (HoldForeignLogs, and after a
    // restart, whether the new run has begun): read after the log, so a mark of whatever run wrote
    // the bytes read is there.
    if (t.log_offset == 0) {
      marks_reads.push_back(MarksRequest(t));
      marks_ids.push_back(t.id);
    }
  }
  Reads out;
  if (reads.empty()) return out;
  // The telemetry files of the same trials, in the same call, after the logs; then the marks.
  size_t logs_read = reads.size(), telemetry_read = telemetry_reads.size();
  reads.insert(reads.end(), std::make_move_iterator(telemetry_reads.begin()),
               std::make_move_iterator(telemetry_reads.end()));
  reads.insert(reads.end(), std::make_move_iterator(marks_reads.begin()), std::make_move_iterator(marks_reads.end()));
  auto chunks = ctx_.transport.ReadMany(reads);
  for (size_t i = logs_read; i < std::min(chunks.size(), logs_read + telemetry_read); ++i) {
    out.telemetry.emplace(read_ids[i - logs_read],
                          std::make_pair(static_cast<int64_t>(reads[i].offset), std::move(chunks[i])));
  }
  for (size_t i = logs_read + telemetry_read; i < chunks.size(); ++i) {
    out.marks.emplace(marks_ids[i - logs_read - telemetry_read], std::move(chunks[i]));
  }
  for (size_t i = 0; i < std::min(chunks.size(), logs_read); ++i) {
    if (read_offsets[i] > 0 && chunks[i].ok()) {
      if (chunks[i]->empty()) {
        out.rewritten.insert(read_ids[i]);
        continue;
      }
      chunks[i]->erase(0, 1);
    }
    out.logs.emplace(read_ids[i], std::move(chunks[i]));
  }
  return out;
}

Status Ingester::HoldForeignLogs(const std::vector<store::TrialRecord>& trials, Reads& reads) {
  // Only a log about to be read from its start, with something in it: once a run's first bytes
  // are its own, the rest are (a run that starts later truncates the log and is a restart).
  std::vector<const store::TrialRecord*> first_reads;
  for (const auto& t : trials) {
    if (t.log_offset != 0 || reads.hold.count(t.id) || t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    auto chunk = reads.logs.find(t.id);
    if (chunk == reads.logs.end() || !chunk->second.ok() || chunk->second->empty()) continue;
    first_reads.push_back(&t);
  }
  if (first_reads.empty()) return Status::OK();
  ReadStartMarks(ctx_.transport, first_reads, reads.marks);  // read with the logs: nothing left to read
  for (const store::TrialRecord* t : first_reads) {
    const Result<std::string>& text = reads.marks.at(t->id);
    if (!text.ok()) {
      if (text.status().IsNotFound()) continue;  // a job from before start marks, or one that could not write them
      return text.status();
    }
    std::string owner = ForeignLogOwner(ParseStartMarks(*text), t->job_id, {ctx_.study.name, t->trial_key, t->attempt},
                                        t->job_restarts);
    if (owner.empty()) continue;
    reads.hold.insert(t->id);
    reads.logs.erase(t->id);
    if (foreign_reported_.insert(t->id).second) {
      ctx_.Event(t->id, "foreign_log",
                 fmt::format("{} was last written by {}, not by this trial's job {}: it is not read (another study "
                             "writes to this study's file names; give each study its own [study] name)",
                             t->log_path, owner, t->job_id));
    }
  }
  return Status::OK();
}

Status Ingester::IngestAll(const std::vector<store::TrialRecord*>& trials, Reads& reads, TickReport& report) {
  // Every log's news in one transaction per tick (bench/ingest_bench.cc: a commit per trial cost
  // about a quarter of the rate).
  struct Before {
    store::TrialRecord* t;
    int64_t log_offset, telemetry_offset;
  };
  std::vector<Before> ingested;
  std::vector<store::Store::LogAppend> batch;  // every log's rows: a few statements for all (issue 42)
  Status st = ctx_.store.InTransaction([&]() -> Status {
    std::vector<int64_t> unread;  // trials whose parser starts from the store's summary
    for (store::TrialRecord* t : trials) {
      if (!reads.hold.count(t->id) && !t->log_path.empty() && !parsers_.count(t->id)) unread.push_back(t->id);
    }
    if (unread.size() >= kKeepSummariesFrom) SWEEP_RETURN_IF_ERROR(ctx_.store.KeepSummaries(ctx_.study_id, unread));
    for (store::TrialRecord* t : trials) {
      if (reads.hold.count(t->id)) continue;
      ingested.push_back({t, t->log_offset, t->telemetry_offset});
      auto pre = reads.logs.find(t->id);
      auto n = Ingest(*t, pre == reads.logs.end() ? nullptr : &pre->second, &batch);
      if (!n.ok()) return n.status();
      report.points += *n;
      // A chunk read before a restart was handled belongs to the old run: read again instead.
      auto tel = reads.telemetry.find(t->id);
      if (tel == reads.telemetry.end()) continue;
      bool fresh = tel->second.first == t->telemetry_offset;
      auto m = IngestTelemetry(*t, fresh ? &tel->second.second : nullptr);
      if (!m.ok()) return m.status();
      report.points += *m;
    }
    return ctx_.store.AppendMetricsMany(batch);
  });
  if (!st.ok()) {
    // Rolled back: forget what was parsed in memory too, so the next tick reads the same bytes again.
    for (auto& [t, offset, telemetry_offset] : ingested) {
      t->log_offset = offset;
      t->telemetry_offset = telemetry_offset;
      ForgetRead(t->id);
    }
  }
  return st;
}

Result<int64_t> Ingester::Ingest(store::TrialRecord& t, const Result<std::string>* first,
                                 std::vector<store::Store::LogAppend>* batch) {
  if (t.log_path.empty()) return int64_t{0};
  const study::Study& study = ctx_.study;
  auto ps = parsers_.find(t.id);
  if (ps == parsers_.end()) {
    // Resume the time axis where the stored metrics end: from the store's summary of the
    // trial's metrics (their last points), not from the points themselves.
    logs::ParserState state;
    auto summary = ctx_.store.Summary(t.id);
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
                       : ctx_.transport.ReadFrom(t.log_path, static_cast<uint64_t>(t.log_offset), kReadChunk);
    if (!chunk.ok()) {
      if (chunk.status().IsNotFound()) return stored;  // not started writing yet
      return chunk.status();
    }
    if (chunk->empty()) return stored;
    logs::ParserState next = ps->second;
    logs::ParseOutput parsed = logs::ParseMetrics(*chunk, study.metric_format, next);
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
    if (!batch) SWEEP_RETURN_IF_ERROR(ctx_.store.AppendMetrics(t.id, rows, new_offset));
    // Only after the write: a failed one leaves offset and parser where they were (and when the
    // caller's transaction rolls back later, or its batch fails, IngestAll puts them back).
    t.log_offset = new_offset;
    ps->second = next;
    if (stopping_.Has(t.id)) {
      std::vector<CurvePoint> loss, nan_iters;
      for (const auto& r : rows) {
        if (r.name == study.objective.metric) loss.push_back({r.step, r.time_s, r.value});
        if (r.name == "nan_iters") nan_iters.push_back({r.step, r.time_s, r.value});
      }
      stopping_.Append(t.id, ctx_.Gpus(), loss, nan_iters);
    }
    stored += static_cast<int64_t>(rows.size());
    if (batch) batch->push_back({t.id, std::move(rows), new_offset});
    if (parsed.malformed > 0) {
      ctx_.Event(t.id, "malformed",
                 fmt::format("{} malformed metric line(s) skipped in {}", parsed.malformed, t.log_path));
    }
    if (reserved > 0) {
      ctx_.Event(t.id, "malformed",
                 fmt::format("{} value(s) in {} named under '{}' not stored: that prefix is slurmsweep's telemetry",
                             reserved, t.log_path, kTelemetryPrefix));
    }
    if (chunk->size() < kReadChunk) return stored;
  }
}

// Whether a telemetry file, from its first byte, is the current run's. After a requeue the old
// run's file stays until the new run's sampler truncates it, which it does in the background,
// after the start mark that lets the log be read: its header says whose it is. A header from a
// sampler before job and restart were written proves nothing after a restart: not read then.
bool Ingester::TelemetryOfThisRun(const store::TrialRecord& t, std::string_view head) {
  auto header = logs::ParseTelemetryHeader(head);
  if (!header) return false;  // being written (the sampler's first line), or not a telemetry file
  if (header->job_id.empty()) return t.job_restarts == 0;
  return header->job_id == t.job_id && header->restart == t.job_restarts;
}

Result<int64_t> Ingester::IngestTelemetry(store::TrialRecord& t, const Result<std::string>* first) {
  if (!ctx_.study.job.monitor || t.log_path.empty()) return int64_t{0};
  std::string path = TelemetryPath(t);
  int64_t stored = 0;
  while (true) {
    auto chunk = first ? *std::exchange(first, nullptr)
                       : ctx_.transport.ReadFrom(path, static_cast<uint64_t>(t.telemetry_offset), kReadChunk);
    if (!chunk.ok()) {
      if (chunk.status().IsNotFound()) return stored;  // the sampler has not started yet
      return chunk.status();
    }
    if (t.telemetry_offset == 0 && !chunk->empty() && !TelemetryOfThisRun(t, *chunk)) return stored;
    logs::TelemetryOutput parsed = logs::ParseTelemetry(*chunk);
    if (parsed.consumed == 0) return stored;
    int64_t new_offset = t.telemetry_offset + static_cast<int64_t>(parsed.consumed);
    SWEEP_RETURN_IF_ERROR(ctx_.store.AppendTelemetry(t.id, parsed.points, new_offset));
    t.telemetry_offset = new_offset;
    stored += static_cast<int64_t>(parsed.points.size());
    if (parsed.malformed > 0) {
      // nvidia-smi prints its failures ("NVIDIA-SMI has failed ...") where its samples would be.
      ctx_.Event(t.id, "malformed", fmt::format("{} line(s) of {} are not telemetry samples", parsed.malformed, path));
    }
    if (chunk->size() < kReadChunk) return stored;
  }
}

Result<std::string> Ingester::LogTail(const store::TrialRecord& t) {
  if (t.log_path.empty()) return std::string();
  constexpr int64_t kTail = 64 << 10;
  int64_t from = std::max<int64_t>(0, t.log_offset - kTail);
  auto tail = ctx_.transport.ReadFrom(t.log_path, static_cast<uint64_t>(from), 2 * kTail);
  if (!tail.ok()) return tail.status().IsNotFound() ? Result<std::string>(std::string()) : tail.status();
  return tail;
}

}  // namespace sweep::run
