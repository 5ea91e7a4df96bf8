// Start marks written by the job and read back by the run loop; see job_marks.h.
#include "orchestrator/job_marks.h"

#include <charconv>
#include <cstdlib>
#include <map>

#include "slurm/sbatch_script.h"

namespace sweep {
namespace {

std::string_view TrimLine(std::string_view s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  return s;
}

}  // namespace

std::string MarksPath(const std::string& log_path) { return log_path + ".marks"; }

std::string WithStartMark(std::string_view script, const std::string& marks_path) {
  // POSIX sh, so any template shell runs it; SLURM_RESTART_COUNT is set by Slurm from the first
  // restart on. An array task records "ARRAYID_TASK", the id slurmsweep stores for it.
  std::string block =
      "# slurmsweep: record this start of the job (Slurm may run it again under the same id).\n"
      "printf 'start job=%s restart=%s host=%s time=%s\\n' "
      "\"${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-}}${SLURM_ARRAY_JOB_ID:+_${SLURM_ARRAY_TASK_ID:-}}\" "
      "\"${SLURM_RESTART_COUNT:-0}\" \"$(hostname 2>/dev/null)\" \"$(date +%s)\" >>" +
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
    starts.push_back(std::move(s));
  }
  return starts;
}

}  // namespace sweep
