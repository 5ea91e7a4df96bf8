// SqliteStore, metrics in: appending a trial's rows exactly once, and the summaries kept with them.
#include "store/sqlite_store.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <string>
#include <unordered_map>
#include <utility>

#include "store/sql.h"

namespace sweep::store {

Status SqliteStore::AppendMetrics(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) {
  return Append({{trial_id, &rows, new_offset}}, stmts_.set_log_offset, "log");
}

Status SqliteStore::AppendTelemetry(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) {
  return Append({{trial_id, &rows, new_offset}}, stmts_.set_telemetry_offset, "telemetry");
}

Status SqliteStore::AppendMetricsMany(const std::vector<LogAppend>& appends) {
  // A run's ticks: each commits tens of thousands of WAL frames at 10,000 trials, so the checkpoint that
  // follows goes to a thread of its own (checkpointer.h). Not with a rollback journal (journal_note_).
  if (!checkpointer_ && !read_only_ && journal_note_.empty()) {
    auto started = Checkpointer::Start(path_);
    if (!started.ok()) return started.status();
    checkpointer_ = std::move(*started);
    sqlite3_wal_hook(db_.get(), &Checkpointer::OnCommit, checkpointer_.get());
  }
  std::vector<AppendRef> refs;
  refs.reserve(appends.size());
  for (const LogAppend& a : appends) refs.push_back({a.trial_id, &a.rows, a.new_offset});
  return Append(refs, stmts_.set_log_offset, "log");
}

// Each append's offset, then its rows; the summaries of the metrics they touched are written once at the end.
// A row after its metric's last stored point is new for certain (nothing is stored at or after its step): it
// waits, with the other trials' new rows, for an insert of kRowsPerInsert rows, and its summary is extended.
// Any other row is inserted alone, after the waiting ones, as it always was: a replay (dropped by the key, not
// counted) or a gap filled (the metric's summary rebuilt from its rows). So the tables end as one insert a row
// in order leaves them.
Status SqliteStore::Append(const std::vector<AppendRef>& appends, const StmtPtr& set_offset, const char* source) {
  std::string what =
      appends.size() == 1
          ? std::string("append ") + source + " metrics of trial " + std::to_string(appends[0].trial_id)
          : std::string("append ") + source + " metrics of " + std::to_string(appends.size()) + " appends";
  SWEEP_RETURN_IF_ERROR(CheckWritable(what));
  for (const AppendRef& a : appends) {
    if (a.new_offset < 0) {
      return Status::InvalidArgument(path_ + ": " + what + ": negative offset " + std::to_string(a.new_offset) +
                                     " for trial " + std::to_string(a.trial_id));
    }
  }
  return InTransaction([&]() -> Status {
    // Metrics the rows changed (written once at the end), and those to rebuild from their rows.
    struct Touched {
      int64_t trial_id, name_id;
      MetricSummary* summary;
      int64_t first_new_bucket;  // complete buckets before this call (or after a merge)
      std::vector<SeriesBucket> completed;
      bool rebuild = false;
    };
    std::vector<Touched> touched;
    std::unordered_map<int64_t, std::vector<size_t>> touched_of;  // by trial: indexes into `touched`
    struct Waiting {
      int64_t trial_id, name_id;
      const MetricRow* row;
    };
    std::vector<Waiting> waiting;
    Query one = Use(stmts_.insert_metric, what);
    auto bind_row = [](Query& q, int first, int64_t trial_id, int64_t name_id, const MetricRow& m) {
      q.BindInt(first, trial_id);
      q.BindInt(first + 1, name_id);
      q.BindInt(first + 2, m.step);
      q.BindReal(first + 3, m.time_s);
      q.BindReal(first + 4, m.value);
    };
    // Inserts the waiting rows; every one of them must be new.
    auto flush = [&]() -> Status {
      size_t done = 0;
      int64_t inserted = 0;
      if (waiting.size() >= static_cast<size_t>(kRowsPerInsert)) {
        Query many = Use(stmts_.insert_metrics, what);
        for (; done + kRowsPerInsert <= waiting.size(); done += kRowsPerInsert) {
          for (int k = 0; k < kRowsPerInsert; ++k) {
            const Waiting& w = waiting[done + static_cast<size_t>(k)];
            bind_row(many, 5 * k + 1, w.trial_id, w.name_id, *w.row);
          }
          SWEEP_RETURN_IF_ERROR(many.Run());
          many.Rewind();
          inserted += sqlite3_changes(db_.get());
        }
      }
      for (; done < waiting.size(); ++done) {
        bind_row(one, 1, waiting[done].trial_id, waiting[done].name_id, *waiting[done].row);
        SWEEP_RETURN_IF_ERROR(one.Run());
        one.Rewind();
        inserted += sqlite3_changes(db_.get());
      }
      if (inserted != static_cast<int64_t>(waiting.size())) {
        // The summaries said these steps were after every stored point: another writer, or a damaged summary.
        return Status::Internal(path_ + ": " + what + ": " + std::to_string(waiting.size() - inserted) + " of " +
                                std::to_string(waiting.size()) +
                                " rows after their metric's last summarized point were already stored; nothing of "
                                "this tick is kept");
      }
      waiting.clear();
      return Status::OK();
    };
    for (const AppendRef& a : appends) {
      // The offset first: it also tells us whether the trial exists before any row is written.
      {
        Query q = Use(set_offset, what);
        q.BindInt(1, a.trial_id);
        q.BindInt(2, a.new_offset);
        SWEEP_RETURN_IF_ERROR(q.Run());
        if (sqlite3_changes(db_.get()) == 0) return Status::NotFound(path_ + ": trial " + std::to_string(a.trial_id));
      }
      if (a.rows->empty()) continue;
      auto cache = CachedSummaries(a.trial_id);
      if (!cache.ok()) return cache.status();
      std::vector<size_t>& mine = touched_of[a.trial_id];
      for (const MetricRow& m : *a.rows) {
        auto name_id = MetricNameId(m.name);  // from memory after a name's first use
        if (!name_id.ok()) return name_id.status();
        auto t = std::find_if(mine.begin(), mine.end(), [&](size_t k) { return touched[k].name_id == *name_id; });
        Touched* u = t == mine.end() ? nullptr : &touched[*t];
        auto touch = [&] {
          if (u) return;
          MetricSummary& s = (**cache)[*name_id];
          if (s.points == 0) s.name = m.name;
          mine.push_back(touched.size());
          u = &touched.emplace_back(Touched{a.trial_id, *name_id, &s, s.complete, {}});
        };
        const MetricSummary* s = u ? u->summary : nullptr;
        if (!s) {
          auto found = (*cache)->find(*name_id);
          if (found != (*cache)->end()) s = &found->second;
        }
        bool after_last = !s || s->points == 0 || m.step > s->last_step;
        if (!after_last || (u && u->rebuild)) {
          // At or before the metric's last point: alone, after the rows waiting (which of two rows of one key
          // is kept is the order of the rows).
          SWEEP_RETURN_IF_ERROR(flush());
          bind_row(one, 1, a.trial_id, *name_id, m);
          SWEEP_RETURN_IF_ERROR(one.Run());
          one.Rewind();
          if (sqlite3_changes(db_.get()) == 0) continue;  // a replayed row: already counted
          // A gap filled: the buckets would no longer be consecutive points, so this metric is
          // recomputed from its rows at the end.
          touch();
          u->rebuild = true;
          continue;
        }
        touch();
        waiting.push_back({a.trial_id, *name_id, &m});
        MetricSummary& sum = *u->summary;
        if (sum.NeedsMerge()) {
          // Every complete bucket: those stored before this call, then this call's.
          std::vector<SeriesBucket> all;
          all.reserve(static_cast<size_t>(sum.complete));
          {
            Query q = Use(stmts_.buckets, what);
            SWEEP_RETURN_IF_ERROR(ReadBuckets(q, a.trial_id, *name_id, all));
          }
          all.resize(static_cast<size_t>(u->first_new_bucket));
          all.insert(all.end(), u->completed.begin(), u->completed.end());
          {
            Query q = Use(stmts_.delete_buckets_of, what);
            q.BindInt(1, a.trial_id);
            q.BindInt(2, *name_id);
            SWEEP_RETURN_IF_ERROR(q.Run());
          }
          u->completed = sum.MergeAll(all);
          u->first_new_bucket = 0;
        }
        sum.Add(m.step, m.time_s, m.value, u->completed);
      }
    }
    SWEEP_RETURN_IF_ERROR(flush());
    Query bucket = Use(stmts_.write_bucket, what);
    Query summary = Use(stmts_.write_summary, what);
    std::vector<const Touched*> to_write;  // summaries, kSummariesPerWrite at a time
    to_write.reserve(touched.size());
    for (Touched& u : touched) {
      if (u.rebuild) {
        SWEEP_RETURN_IF_ERROR(RebuildSummary(u.trial_id, u.name_id, *u.summary));
        continue;
      }
      for (size_t i = 0; i < u.completed.size(); ++i) {
        SWEEP_RETURN_IF_ERROR(WriteBucketRow(bucket, u.trial_id, u.name_id,
                                             u.first_new_bucket + static_cast<int64_t>(i), u.completed[i]));
      }
      to_write.push_back(&u);
    }
    size_t done = 0;
    if (to_write.size() >= static_cast<size_t>(kSummariesPerWrite)) {
      Query many = Use(stmts_.write_summaries, what);
      for (; done + kSummariesPerWrite <= to_write.size(); done += kSummariesPerWrite) {
        for (int k = 0; k < kSummariesPerWrite; ++k) {
          const Touched& u = *to_write[done + static_cast<size_t>(k)];
          BindSummaryRow(many, 25 * k + 1, u.trial_id, u.name_id, *u.summary);
        }
        SWEEP_RETURN_IF_ERROR(many.Run());
        many.Rewind();
      }
    }
    for (; done < to_write.size(); ++done) {
      const Touched& u = *to_write[done];
      SWEEP_RETURN_IF_ERROR(WriteSummaryRow(summary, u.trial_id, u.name_id, *u.summary));
    }
    return Status::OK();
  });
}

Result<SqliteStore::SummaryCache*> SqliteStore::CachedSummaries(int64_t trial_id) {
  if (auto it = summaries_.find(trial_id); it != summaries_.end()) return &it->second;
  SummaryCache cache;
  Query q = Use(stmts_.trial_summary, "read metric summaries of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { ReadSummary(q, 1, cache[q.Int(0)]); }));
  return &summaries_.emplace(trial_id, std::move(cache)).first->second;
}

Status SqliteStore::KeepSummaries(int64_t study_id, const std::vector<int64_t>& trial_ids) {
  std::string what = "read metric summaries of study " + std::to_string(study_id);
  SWEEP_RETURN_IF_ERROR(CheckWritable(what));
  std::unordered_map<int64_t, SummaryCache> read;
  read.reserve(trial_ids.size());
  for (int64_t id : trial_ids) {
    if (!summaries_.count(id)) read[id];  // those kept already are as current
  }
  if (read.empty()) return Status::OK();
  {
    Query q = Use(stmts_.study_summaries, what);
    q.BindInt(1, study_id);
    SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] {
      auto it = read.find(q.Int(0));
      if (it != read.end()) ReadSummary(q, 2, it->second[q.Int(1)]);
    }));
  }
  for (auto& [id, cache] : read) summaries_.emplace(id, std::move(cache));
  return Status::OK();
}

Result<std::optional<TrialSummary>> SqliteStore::SummaryFromCache(int64_t trial_id) {
  auto it = summaries_.find(trial_id);
  if (it == summaries_.end()) return std::optional<TrialSummary>();
  TrialSummary out;
  out.trial_id = trial_id;
  out.metrics.reserve(it->second.size());
  for (const auto& [name_id, m] : it->second) {
    auto name = MetricName(name_id);
    if (!name.ok()) return name.status();
    MetricSummary& copy = out.metrics.emplace_back(m);
    copy.name = **name;
  }
  std::sort(out.metrics.begin(), out.metrics.end(),
            [](const MetricSummary& a, const MetricSummary& b) { return a.name < b.name; });
  return std::optional<TrialSummary>(std::move(out));
}

Status SqliteStore::RebuildSummary(int64_t trial_id, int64_t name_id, MetricSummary& m) {
  std::string what =
      "rebuild the summary of metric " + std::to_string(name_id) + " of trial " + std::to_string(trial_id);
  std::vector<CurvePoint> points;
  points.reserve(static_cast<size_t>(m.points) + 16);
  {
    Query q = Use(stmts_.series_by_id, what);
    q.BindInt(1, trial_id);
    q.BindInt(2, name_id);
    SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { points.push_back({q.Int(0), q.Real(1), q.Real(2)}); }));
  }
  std::string name = std::move(m.name);
  m = SummarizeSeries(std::move(name), points);
  {
    Query q = Use(stmts_.delete_buckets_of, what);
    q.BindInt(1, trial_id);
    q.BindInt(2, name_id);
    SWEEP_RETURN_IF_ERROR(q.Run());
  }
  Query bucket = Use(stmts_.write_bucket, what);
  for (size_t i = 0; i < m.buckets.size(); ++i) {
    SWEEP_RETURN_IF_ERROR(WriteBucketRow(bucket, trial_id, name_id, static_cast<int64_t>(i), m.buckets[i]));
  }
  m.buckets.clear();  // the cache keeps no series
  Query summary = Use(stmts_.write_summary, what);
  return WriteSummaryRow(summary, trial_id, name_id, m);
}

Result<int64_t> SqliteStore::MetricNameId(const std::string& name) {
  if (auto it = name_ids_.find(name); it != name_ids_.end()) return it->second;
  std::string what = "add metric name '" + name + "'";
  {
    Query q = Use(stmts_.insert_metric_name, what);
    q.BindText(1, name);
    SWEEP_RETURN_IF_ERROR(q.Run());
  }
  Query q = Use(stmts_.metric_name_id, what);
  q.BindText(1, name);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(path_ + ": " + what + ": not found after insert");
  return name_ids_[name] = q.Int(0);
}

Status SqliteStore::ResetMetrics(int64_t trial_id) {
  std::string what = "reset metrics of trial " + std::to_string(trial_id);
  SWEEP_RETURN_IF_ERROR(CheckWritable(what));
  return InTransaction([&]() -> Status {
    {
      Query q = Use(stmts_.reset_offsets, what);
      q.BindInt(1, trial_id);
      SWEEP_RETURN_IF_ERROR(q.Run());
      if (sqlite3_changes(db_.get()) == 0) return Status::NotFound(path_ + ": trial " + std::to_string(trial_id));
    }
    summaries_.erase(trial_id);
    for (const StmtPtr* stmt : {&stmts_.delete_metrics, &stmts_.delete_summaries, &stmts_.delete_buckets}) {
      Query q = Use(*stmt, what);
      q.BindInt(1, trial_id);
      SWEEP_RETURN_IF_ERROR(q.Run());
    }
    return Status::OK();
  });
}

}  // namespace sweep::store
