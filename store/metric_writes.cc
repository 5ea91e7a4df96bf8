// SqliteStore, metrics in: appending a trial's rows exactly once, and the summaries kept with them.
#include "store/sqlite_store.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>

#include "store/sql.h"

namespace sweep::store {

Status SqliteStore::AppendMetrics(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) {
  return Append(trial_id, rows, new_offset, stmts_.set_log_offset, "log");
}

Status SqliteStore::AppendTelemetry(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) {
  return Append(trial_id, rows, new_offset, stmts_.set_telemetry_offset, "telemetry");
}

Status SqliteStore::Append(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset,
                           const StmtPtr& set_offset, const char* source) {
  std::string what = std::string("append ") + source + " metrics of trial " + std::to_string(trial_id);
  SWEEP_RETURN_IF_ERROR(CheckWritable(what));
  if (new_offset < 0) {
    return Status::InvalidArgument(path_ + ": " + what + ": negative offset " + std::to_string(new_offset));
  }
  return InTransaction([&]() -> Status {
    // The offset first: it also tells us whether the trial exists before any row is written.
    {
      Query q = Use(set_offset, what);
      q.BindInt(1, trial_id);
      q.BindInt(2, new_offset);
      SWEEP_RETURN_IF_ERROR(q.Run());
      if (sqlite3_changes(db_.get()) == 0) return Status::NotFound(path_ + ": trial " + std::to_string(trial_id));
    }
    if (rows.empty()) return Status::OK();
    auto cache = CachedSummaries(trial_id);
    if (!cache.ok()) return cache.status();
    // Metrics this call changed (written once at the end), and those to rebuild from their rows.
    struct Touched {
      MetricSummary* summary;
      int64_t first_new_bucket;  // complete buckets before this call (or after a merge)
      std::vector<SeriesBucket> completed;
      bool rebuild = false;
    };
    std::vector<std::pair<int64_t, Touched>> touched;  // a handful: a line's metrics
    Query insert = Use(stmts_.insert_metric, what);
    for (const MetricRow& m : rows) {
      auto name_id = MetricNameId(m.name);  // from memory after a name's first use
      if (!name_id.ok()) return name_id.status();
      insert.BindInt(1, trial_id);
      insert.BindInt(2, *name_id);
      insert.BindInt(3, m.step);
      insert.BindReal(4, m.time_s);
      insert.BindReal(5, m.value);
      SWEEP_RETURN_IF_ERROR(insert.Run());
      insert.Rewind();
      if (sqlite3_changes(db_.get()) == 0) continue;  // a replayed row: already counted
      auto t = std::find_if(touched.begin(), touched.end(), [&](const auto& x) { return x.first == *name_id; });
      if (t == touched.end()) {
        MetricSummary& s = (**cache)[*name_id];
        if (s.points == 0) s.name = m.name;
        t = touched.insert(touched.end(), {*name_id, Touched{&s, s.complete, {}}});
      }
      Touched& u = t->second;
      MetricSummary& s = *u.summary;
      if (u.rebuild) continue;
      if (s.points > 0 && m.step <= s.last_step) {
        // Before the last point (a gap filled): the buckets would no longer be consecutive
        // points, so this metric is recomputed from its rows after the loop.
        u.rebuild = true;
        continue;
      }
      if (s.NeedsMerge()) {
        // Every complete bucket: those stored before this call, then this call's.
        std::vector<SeriesBucket> all;
        all.reserve(static_cast<size_t>(s.complete));
        {
          Query q = Use(stmts_.buckets, what);
          SWEEP_RETURN_IF_ERROR(ReadBuckets(q, trial_id, *name_id, all));
        }
        all.resize(static_cast<size_t>(u.first_new_bucket));
        all.insert(all.end(), u.completed.begin(), u.completed.end());
        {
          Query q = Use(stmts_.delete_buckets_of, what);
          q.BindInt(1, trial_id);
          q.BindInt(2, *name_id);
          SWEEP_RETURN_IF_ERROR(q.Run());
        }
        u.completed = s.MergeAll(all);
        u.first_new_bucket = 0;
      }
      s.Add(m.step, m.time_s, m.value, u.completed);
    }
    Query bucket = Use(stmts_.write_bucket, what);
    Query summary = Use(stmts_.write_summary, what);
    for (auto& [name_id, u] : touched) {
      if (u.rebuild) {
        SWEEP_RETURN_IF_ERROR(RebuildSummary(trial_id, name_id, *u.summary));
        continue;
      }
      for (size_t i = 0; i < u.completed.size(); ++i) {
        SWEEP_RETURN_IF_ERROR(
            WriteBucketRow(bucket, trial_id, name_id, u.first_new_bucket + static_cast<int64_t>(i), u.completed[i]));
      }
      SWEEP_RETURN_IF_ERROR(WriteSummaryRow(summary, trial_id, name_id, *u.summary));
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
