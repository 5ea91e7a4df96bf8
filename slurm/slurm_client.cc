// Submitting, querying and cancelling Slurm jobs; parsers for squeue, sacct, scontrol, sbatch.
#include "slurm/slurm_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <unordered_set>

#include "base/terminal.h"
#include "slurm/sbatch_script.h"

namespace sweep::slurm {
namespace {

// squeue --Format fields, each ended by '|'; Comment next to last so a '|' inside it survives, and
// the restart count (digits only) after it, split off at the line's last '|'.
constexpr std::string_view kSqueueFormat =
    "JobArrayID:|,State:|,Reason:|,exit_code:|,Name:|,StartTime:|,EndTime:|,Comment:|,restartcnt:";
constexpr int kSbatchTimeoutS = 60;
constexpr int kTimeoutExit = 124;  // timeout(1)'s exit status when it killed the command
constexpr std::string_view kSacctFields = "JobID,State,ExitCode,Reason,JobName,Start,End,Comment";

std::vector<std::string_view> Split(std::string_view line, char sep, size_t max_fields) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < max_fields) {
    size_t p = line.find(sep);
    if (p == std::string_view::npos) break;
    out.push_back(line.substr(0, p));
    line.remove_prefix(p + 1);
  }
  out.push_back(line);
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

template <class Fn>
void ForEachLine(std::string_view text, Fn fn) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!Trim(line).empty()) fn(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

// squeue -O exit_code prints the raw wait status (exit << 8 | signal); show it as sacct does.
std::string WaitStatusToExitCode(std::string_view raw) {
  int status = 0;
  auto [p, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), status);
  if (ec != std::errc() || p != raw.data() + raw.size()) return std::string(raw);
  return fmt::format("{}:{}", (status >> 8) & 0xff, status & 0x7f);
}

// Digits, and for array jobs "10_3" or a pending range "10_[1-3%1]".
bool IsJobIdChar(char c) {
  return (c >= '0' && c <= '9') || c == '_' || c == '[' || c == ']' || c == '-' || c == '%' || c == ',';
}

// What we pass on a command line: "123" or "123_4", nothing a shell would read.
bool IsPlainJobId(std::string_view id) {
  return !id.empty() && id.front() != '_' &&
         std::all_of(id.begin(), id.end(), [](char c) { return (c >= '0' && c <= '9') || c == '_'; });
}

std::string JoinIds(const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) {
    if (!out.empty()) out.push_back(',');
    out += id;
  }
  return out;
}

}  // namespace

std::vector<JobInfo> ParseSqueue(std::string_view out, size_t* malformed) {
  std::vector<JobInfo> jobs;
  size_t bad = 0;
  ForEachLine(out, [&](std::string_view line) {
    auto f = Split(line, '|', 8);
    if (f.size() != 8 || Trim(f[0]).empty() || !std::all_of(Trim(f[0]).begin(), Trim(f[0]).end(), IsJobIdChar)) {
      ++bad;
      return;
    }
    JobInfo j;
    j.job_id = Trim(f[0]);
    j.slurm_state = Trim(f[1]);
    j.state = FromSlurmState(j.slurm_state);
    j.reason = Trim(f[2]);
    j.exit_code = WaitStatusToExitCode(Trim(f[3]));
    j.name = Trim(f[4]);
    j.start_time = Trim(f[5]);
    j.end_time = Trim(f[6]);
    std::string_view comment = Trim(f[7]);
    // "COMMENT|RESTARTS"; lines without the count (earlier slurmsweep versions' recordings) end
    // with the comment.
    if (size_t bar = comment.rfind('|'); bar != std::string_view::npos) {
      std::string_view count = Trim(comment.substr(bar + 1));
      int n = 0;
      auto [p, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
      if (!count.empty() && ec == std::errc() && p == count.data() + count.size()) {
        j.restarts = n;
        comment = Trim(comment.substr(0, bar));
      }
    }
    j.comment = comment == "(null)" ? "" : std::string(comment);
    jobs.push_back(std::move(j));
  });
  if (malformed) *malformed = bad;
  return jobs;
}

std::vector<JobInfo> ParseSacct(std::string_view out, size_t* malformed) {
  std::vector<JobInfo> jobs;
  size_t bad = 0;
  ForEachLine(out, [&](std::string_view line) {
    auto f = Split(line, '|', 8);
    if (f.size() != 8 || Trim(f[0]).empty()) {
      ++bad;
      return;
    }
    std::string_view id = Trim(f[0]);
    if (id.find('.') != std::string_view::npos) return;  // a step (123.batch), not the job
    JobInfo j;
    j.job_id = id;
    j.slurm_state = Trim(f[1]);
    j.state = FromSlurmState(j.slurm_state);
    j.exit_code = Trim(f[2]);
    // sacct's Reason is the last reason the job waited (Priority, JobArrayTaskLimit, ...), kept
    // after it ran: of an ended job it says nothing about the end.
    if (!IsTerminal(j.state)) j.reason = Trim(f[3]);
    j.name = Trim(f[4]);
    j.start_time = Trim(f[5]);
    j.end_time = Trim(f[6]);
    j.comment = Trim(f[7]);
    jobs.push_back(std::move(j));
  });
  if (malformed) *malformed = bad;
  return jobs;
}

std::vector<JobInfo> ParseScontrolShowJob(std::string_view out) {
  std::vector<JobInfo> jobs;
  ForEachLine(out, [&](std::string_view line) {
    // Key=Value pairs separated by spaces; values of Comment/Command may hold spaces, so a
    // token without '=' belongs to the previous value.
    std::map<std::string, std::string, std::less<>> kv;
    std::string last;
    for (std::string_view tok : Split(line, ' ', SIZE_MAX)) {
      if (tok.empty()) continue;
      size_t eq = tok.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        if (!last.empty()) kv[last] += " " + std::string(tok);
        continue;
      }
      last = tok.substr(0, eq);
      kv[last] = tok.substr(eq + 1);
    }
    auto get = [&](std::string_view k) {
      auto it = kv.find(k);
      return it == kv.end() ? std::string() : it->second;
    };
    JobInfo j;
    j.job_id = get("JobId");
    if (j.job_id.empty()) return;
    if (std::string task = get("ArrayTaskId"); !task.empty() && !get("ArrayJobId").empty()) {
      j.job_id = get("ArrayJobId") + "_" + task;
    }
    j.slurm_state = get("JobState");
    j.state = FromSlurmState(j.slurm_state);
    j.reason = get("Reason");
    j.exit_code = get("ExitCode");
    j.name = get("JobName");
    j.start_time = get("StartTime");
    j.end_time = get("EndTime");
    j.comment = get("Comment");
    if (j.comment == "(null)") j.comment.clear();
    if (std::string r = get("Restarts"); !r.empty() && std::all_of(r.begin(), r.end(), ::isdigit)) {
      j.restarts = std::stoi(r);
    }
    jobs.push_back(std::move(j));
  });
  return jobs;
}

Result<std::string> ParseSbatchParsable(std::string_view out) {
  std::string_view id = Trim(out.substr(0, out.find('\n')));
  id = id.substr(0, id.find(';'));
  if (id.empty() || !std::all_of(id.begin(), id.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return Status::Internal(fmt::format("sbatch --parsable printed '{}', expected a job id", Trim(out)));
  }
  return std::string(id);
}

bool IsSubmitLimit(std::string_view err) {
  for (std::string_view needle :
       // The reason sbatch prints before the generic "Job violates accounting/QOS policy", which
       // also covers permanent refusals (a time limit above the QOS maximum).
       // "temporarily unable": slurmctld's MaxJobCount is reached (sbatch retries on its own, for
       // minutes, until Submit's timeout stops it).
       {"MaxSubmitJob", "GrpSubmitJobsLimit", "temporarily unable to accept job"}) {
    if (err.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

bool IsStudyWideRefusal(std::string_view err) {
  for (std::string_view needle : {"invalid partition", "Invalid partition", "Invalid account", "Invalid qos",
                                  "Requested time limit is invalid", "Invalid generic resource", "Invalid wckey"}) {
    if (err.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

std::string ArrayBaseId(std::string_view job_id) { return std::string(job_id.substr(0, job_id.find('_'))); }

bool IsSchedulerUnavailable(std::string_view err) {
  for (std::string_view needle :
       {"Socket timed out", "Unable to contact slurm controller", "Connection refused", "Zero Bytes were transmitted",
        "Communication connection failure", "slurm_persist_conn_open", "Resource temporarily unavailable",
        "Transport endpoint is not connected"}) {
    if (err.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

Result<CommandOutput> SlurmClient::RunSlurm(const std::string& command, int* counter) {
  ++*counter;
  auto r = transport_.Run(command);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0 && IsSchedulerUnavailable(r->err)) {
    return Status::Unavailable(fmt::format("'{}': {}", command.substr(0, command.find(' ')), Trim(r->err)));
  }
  return r;
}

Result<std::string> SlurmClient::Submit(const std::string& script_path) {
  // sbatch waits and retries by itself while slurmctld holds MaxJobCount jobs; bounded here so the
  // run loop goes on tracking (the caller then treats the submission as in doubt).
  auto r = RunSlurm(fmt::format("timeout {} sbatch --parsable {}", kSbatchTimeoutS, ShellQuote(script_path)),
                    &stats_.sbatch);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    std::string msg = fmt::format("sbatch refused {} (exit {}): {}", script_path, r->exit_code, Trim(r->err));
    if (IsSubmitLimit(r->err)) return Status::ResourceExhausted(msg);
    // `timeout` killed a silent sbatch: slurmctld may have taken the job without telling us, so
    // the submission is in doubt (the run loop looks for the job by name), not refused.
    if (r->exit_code == kTimeoutExit) {
      return Status::Unavailable(fmt::format("sbatch {} gave no answer within {} s", script_path, kSbatchTimeoutS));
    }
    if (IsStudyWideRefusal(r->err)) return Status::InvalidArgument(msg).WithCause(Status::Cause::kStudyWideRefusal);
    return Status::InvalidArgument(msg);
  }
  return ParseSbatchParsable(r->out);
}

Result<std::map<std::string, JobInfo>> SlurmClient::Query(const std::vector<std::string>& job_ids) {
  std::map<std::string, JobInfo> found;
  if (job_ids.empty()) return found;
  for (const auto& id : job_ids) {
    if (!IsPlainJobId(id)) {
      return Status::InvalidArgument(fmt::format("'{}' is not a Slurm job id", id));
    }
  }
  // Array tasks are asked for by their array's id, one line per task (-r): the command stays short
  // however many tasks an array has.
  std::vector<std::string> bases;        // in the order first asked for
  std::unordered_set<std::string> seen;  // a lookup per id, not a scan of the bases (10,000 jobs a tick)
  for (const auto& id : job_ids) {
    std::string base = ArrayBaseId(id);
    if (seen.insert(base).second) bases.push_back(std::move(base));
  }
  auto sq = RunSlurm(fmt::format("squeue -h -r -t all -j {} -O {}", JoinIds(bases), ShellQuote(kSqueueFormat)),
                     &stats_.squeue);
  if (!sq.ok()) return sq.status();
  // "Invalid job id specified" (exit 1) only when none of the ids is known any more.
  bool none_known = sq->exit_code != 0 && sq->err.find("Invalid job id") != std::string::npos;
  if (sq->exit_code != 0 && !none_known) {
    return Status::Unavailable(fmt::format("squeue exited {}: {}", sq->exit_code, Trim(sq->err)));
  }
  for (auto& j : ParseSqueue(sq->out)) found[j.job_id] = std::move(j);

  std::vector<std::string> missing;
  for (const auto& id : job_ids) {
    if (!found.count(id)) missing.push_back(id);
  }
  if (missing.empty() || sacct_unavailable_) return found;
  auto sa = RunSlurm(fmt::format("sacct -X -n -P -j {} -o {}", JoinIds(missing), kSacctFields), &stats_.sacct);
  if (!sa.ok()) return sa.status();
  if (sa->exit_code != 0) {
    // "accounting storage is disabled": the cluster has no slurmdbd; never ask again.
    if (sa->err.find("disabled") != std::string::npos) sacct_unavailable_ = true;
    return found;
  }
  std::unordered_set<std::string> asked(missing.begin(), missing.end());
  for (auto& j : ParseSacct(sa->out)) {
    if (asked.count(j.job_id)) found[j.job_id] = std::move(j);
  }
  return found;
}

Result<std::string> SlurmClient::NodeState(const std::string& node) {
  if (node.empty() || !std::all_of(node.begin(), node.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
      })) {
    return Status::InvalidArgument(fmt::format("'{}' is not a node name", node));
  }
  auto r = RunSlurm("scontrol -o show node " + node, &stats_.scontrol);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::NotFound(fmt::format("scontrol show node {}: {}", node, Trim(r->err)));
  size_t p = r->out.find("State=");
  if (p == std::string::npos) return std::string();
  p += 6;
  return r->out.substr(p, r->out.find(' ', p) - p);
}

Result<std::vector<JobInfo>> SlurmClient::LiveJobsNamed(const std::string& prefix, const std::string& comment_prefix) {
  auto sq = RunSlurm(fmt::format("squeue -h -r --me -t PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED,REQUEUED -O {}",
                                 ShellQuote(kSqueueFormat)),
                     &stats_.squeue);
  if (!sq.ok()) return sq.status();
  if (sq->exit_code != 0) return Status::Unavailable(fmt::format("squeue exited {}: {}", sq->exit_code, Trim(sq->err)));
  std::vector<JobInfo> live;
  for (auto& j : ParseSqueue(sq->out)) {
    if (j.name.rfind(prefix, 0) == 0 && j.comment.rfind(comment_prefix, 0) == 0) live.push_back(std::move(j));
  }
  return live;
}

Result<int> SlurmClient::CountMyJobs() {
  auto sq = RunSlurm("squeue -h -r --me -t all -o %i", &stats_.squeue);
  if (!sq.ok()) return sq.status();
  if (sq->exit_code != 0) {
    return Status::FailedPrecondition(fmt::format("squeue exited {}: {}", sq->exit_code, Trim(sq->err)));
  }
  // Every line a job id, or the count is not one: a line of anything else (a warning on stdout, another
  // format) refuses it rather than be counted or skipped.
  int jobs = 0;
  std::string_view bad;
  ForEachLine(sq->out, [&](std::string_view line) {
    std::string_view id = Trim(line);
    if (std::all_of(id.begin(), id.end(), IsJobIdChar)) ++jobs;
    else if (bad.empty()) bad = id;
  });
  if (!bad.empty()) {
    return Status::FailedPrecondition(fmt::format("squeue --me printed '{}', not a job id", TerminalSafe(bad)));
  }
  return jobs;
}

SiteLimits ParseSiteLimits(std::string_view config) {
  SiteLimits limits;
  // "Name = value" lines; MinJobAge's value reads "300 sec". A line that does not parse keeps the default.
  auto value = [&](std::string_view name, int* out) {
    for (size_t at = config.find(name); at != std::string_view::npos; at = config.find(name, at + 1)) {
      if (at > 0 && config[at - 1] != '\n') continue;
      std::string_view line = config.substr(at, config.find('\n', at) - at);
      size_t eq = line.find('=');
      if (eq == std::string_view::npos || Trim(line.substr(name.size(), eq - name.size())) != "") continue;
      std::string_view v = Trim(line.substr(eq + 1));
      v = v.substr(0, v.find(' '));
      int n = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec == std::errc() && p == v.data() + v.size() && n >= 0) *out = n;
      return;
    }
  };
  value("MaxArraySize", &limits.max_array_size);
  value("MaxJobCount", &limits.max_job_count);
  value("MinJobAge", &limits.min_job_age_s);
  return limits;
}

Result<SiteLimits> SlurmClient::ReadSiteLimits() {
  auto r = RunSlurm("scontrol show config", &stats_.scontrol);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    SiteLimits none;
    none.unread = fmt::format("scontrol show config exited {}: {}", r->exit_code, Trim(r->err));
    return none;
  }
  return ParseSiteLimits(r->out);
}

Result<std::vector<std::string>> SlurmClient::UnknownRequestedNodes(const std::string& job_id) {
  if (!IsPlainJobId(job_id)) return Status::InvalidArgument(fmt::format("'{}' is not a Slurm job id", job_id));
  auto r = RunSlurm("scontrol -o show job " + job_id, &stats_.scontrol);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return std::vector<std::string>{};  // gone meanwhile: nothing to judge
  std::string_view out = r->out;
  size_t at = out.find(" ReqNodeList=");
  if (at == std::string_view::npos) return std::vector<std::string>{};
  at += 13;
  std::string list(Trim(out.substr(at, out.find_first_of(" \n", at) - at)));
  if (list.empty() || list == "(null)") return std::vector<std::string>{};
  // The list as Slurm compresses it ("n[3-4],gpu7"): expanded by scontrol itself (no controller call).
  auto names = RunSlurm("scontrol show hostnames " + ShellQuote(list), &stats_.scontrol);
  if (!names.ok()) return names.status();
  std::vector<std::string> unknown;
  std::string_view rest = names->out;
  constexpr int kMaxNodesAsked = 64;  // a job that names more nodes is judged by its first ones
  for (int asked = 0; !rest.empty() && asked < kMaxNodesAsked; ++asked) {
    size_t nl = rest.find('\n');
    std::string node(Trim(rest.substr(0, nl)));
    rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
    if (node.empty()) continue;
    auto state = NodeState(node);
    if (!state.ok() && state.status().IsNotFound()) unknown.push_back(node);
    else if (!state.ok()) return state.status();
  }
  return unknown;
}

Result<std::vector<JobInfo>> SlurmClient::FindByName(const std::vector<std::string>& names) {
  if (names.empty()) return std::vector<JobInfo>{};
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ",") + n;
  auto sq = RunSlurm(fmt::format("squeue -h -r -t all --name={} -O {}", ShellQuote(list), ShellQuote(kSqueueFormat)),
                     &stats_.squeue);
  if (!sq.ok()) return sq.status();
  if (sq->exit_code != 0) return Status::Unavailable(fmt::format("squeue exited {}: {}", sq->exit_code, Trim(sq->err)));
  std::vector<JobInfo> jobs = ParseSqueue(sq->out);
  // Jobs that ended more than MinJobAge ago are gone from squeue; accounting, where there is one,
  // still has them (with their --comment when AccountingStoreFlags=job_comment).
  std::string missing;
  for (const auto& n : names) {
    if (std::none_of(jobs.begin(), jobs.end(), [&](const JobInfo& j) { return j.name == n; })) {
      missing += (missing.empty() ? "" : ",") + n;
    }
  }
  if (missing.empty() || sacct_unavailable_) return jobs;
  auto sa = RunSlurm(fmt::format("sacct -X -n -P -S now-30days --name={} -o {}", ShellQuote(missing), kSacctFields),
                     &stats_.sacct);
  if (!sa.ok()) return sa.status();
  if (sa->exit_code != 0) {
    if (sa->err.find("disabled") != std::string::npos) {
      sacct_unavailable_ = true;
      return jobs;
    }
    return Status::Unavailable(fmt::format("sacct exited {}: {}", sa->exit_code, Trim(sa->err)));
  }
  for (auto& j : ParseSacct(sa->out)) jobs.push_back(std::move(j));
  return jobs;
}

Status SlurmClient::Cancel(const std::vector<std::string>& job_ids, bool pending_only) {
  if (job_ids.empty()) return Status::OK();
  for (const auto& id : job_ids) {
    if (!IsPlainJobId(id)) {
      return Status::InvalidArgument(fmt::format("'{}' is not a Slurm job id", id));
    }
  }
  std::string cmd = pending_only ? "scancel --state=PENDING" : "scancel";
  for (const auto& id : job_ids) cmd += " " + id;
  auto r = RunSlurm(cmd, &stats_.scancel);
  if (!r.ok()) return r.status();
  // scancel of an already-finished job prints a warning and may exit 1: the goal is met.
  if (r->exit_code != 0 && r->err.find("already completing or completed") == std::string::npos &&
      r->err.find("Invalid job id") == std::string::npos) {
    return Status::Unavailable(fmt::format("scancel exited {}: {}", r->exit_code, Trim(r->err)));
  }
  return Status::OK();
}

}  // namespace sweep::slurm
