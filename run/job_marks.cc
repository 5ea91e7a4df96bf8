// Start marks written by the job and read back by the run loop; see job_marks.h.
#include "run/job_marks.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "slurm/sbatch_script.h"

namespace sweep::run {
namespace {

std::string_view TrimLine(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

std::string MarksPath(const std::string& log_path) { return log_path + ".marks"; }

std::string WithStartMark(std::string_view script, const std::string& marks_path, const MarkIdentity& who) {
  // POSIX sh, so any template shell runs it; SLURM_RESTART_COUNT is set by Slurm from the first
  // restart on. An array task records "ARRAYID_TASK", the id slurmsweep stores for it.
  std::string block =
      "# slurmsweep: record this start of the job (Slurm may run it again under the same id).\n"
      "printf 'start job=%s restart=%s host=%s time=%s study=%s trial=%s attempt=%s\\n' "
      "\"${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-}}${SLURM_ARRAY_JOB_ID:+_${SLURM_ARRAY_TASK_ID:-}}\" "
      "\"${SLURM_RESTART_COUNT:-0}\" \"$(hostname 2>/dev/null)\" \"$(date +%s)\" " +
      slurm::ShellQuote(who.study) + " " + slurm::ShellQuote(who.trial) + " " + std::to_string(who.attempt) + " >>" +
      slurm::ShellQuote(marks_path) + " 2>/dev/null || :\n";
  size_t pos = slurm::DirectivesEnd(script);
  std::string out(script.substr(0, pos));
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  out += block;
  out.append(script.substr(pos));
  return out;
}

std::vector<JobStart> ParseStartMarks(std::string_view text) {
  std::vector<JobStart> starts;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    // Only whole lines: the last one may still be being written.
    if (nl == std::string_view::npos) break;
    std::string_view line = TrimLine(text.substr(0, nl));
    text.remove_prefix(nl + 1);
    if (line.substr(0, 6) != "start ") continue;
    std::map<std::string, std::string, std::less<>> kv;
    line.remove_prefix(6);
    while (!line.empty()) {
      size_t sp = line.find(' ');
      std::string_view tok = line.substr(0, sp);
      line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
      size_t eq = tok.find('=');
      if (eq != std::string_view::npos) kv[std::string(tok.substr(0, eq))] = std::string(tok.substr(eq + 1));
    }
    JobStart s;
    s.job_id = kv["job"];
    s.host = kv["host"];
    const std::string& r = kv["restart"];
    const std::string& t = kv["time"];
    auto [rp, rec] = std::from_chars(r.data(), r.data() + r.size(), s.restart);
    int64_t secs = 0;
    auto [tp, tec] = std::from_chars(t.data(), t.data() + t.size(), secs);
    if (s.job_id.empty() || rec != std::errc() || rp != r.data() + r.size() || tec != std::errc() ||
        tp != t.data() + t.size()) {
      continue;
    }
    s.time = static_cast<double>(secs);
    s.study = kv["study"];
    s.trial = kv["trial"];
    const std::string& a = kv["attempt"];
    int attempt = -1;
    auto [ap, aec] = std::from_chars(a.data(), a.data() + a.size(), attempt);
    s.attempt = !a.empty() && aec == std::errc() && ap == a.data() + a.size() ? attempt : -1;
    starts.push_back(std::move(s));
  }
  return starts;
}

std::string ForeignLogOwner(const std::vector<JobStart>& starts, const std::string& job_id, const MarkIdentity& trial,
                            int job_restarts) {
  if (starts.empty()) return "";
  const JobStart& last = starts.back();
  bool same_job = last.job_id == job_id;
  if (last.study.empty()) return same_job ? "" : "job " + last.job_id;
  bool attempt_ok = last.attempt <= trial.attempt && last.attempt >= trial.attempt - std::max(0, job_restarts);
  if (same_job && last.study == trial.study && last.trial == trial.trial && attempt_ok) return "";
  return fmt::format("job {} of study {}, trial {}, attempt {}", last.job_id, last.study, last.trial, last.attempt);
}

}  // namespace sweep::run
