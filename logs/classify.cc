// Failure classification from Slurm's end state and the log's tail; see classify.h.
#include "logs/classify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>

namespace sweep::logs {

void ClassifyCancelled(std::string_view stop_request, std::string_view slurm_state, std::string& state,
                       std::string& reason) {
  if (stop_request.rfind("pruned", 0) == 0) state = "pruned";
  if (stop_request.rfind("skipped", 0) == 0) state = "skipped";
  reason = stop_request.empty() ? "cancelled outside slurmsweep (" + std::string(slurm_state) + ")"
                                : std::string(stop_request);
}

bool EndReadsLog(std::string_view state) {
  return state == "failed" || state == "completed" || state == "out_of_memory";
}

void ClassifyFromLog(std::string_view log_tail, const std::optional<ObjectiveAtEnd>& last, std::string& state,
                     std::string& reason) {
  if (!EndReadsLog(state)) return;
  const std::string_view tail = log_tail;
  auto line_with = [&](std::initializer_list<std::string_view> needles) -> std::string {
    for (std::string_view n : needles) {
      size_t p = tail.rfind(n);
      if (p == std::string_view::npos) continue;
      size_t b = tail.rfind('\n', p);
      b = b == std::string_view::npos ? 0 : b + 1;
      size_t e = tail.find('\n', p);
      return std::string(tail.substr(b, std::min<size_t>(e == std::string_view::npos ? tail.size() - b : e - b, 200)));
    }
    return "";
  };
  if (auto l = line_with({"CUDA out of memory", "OutOfMemoryError", "CUBLAS_STATUS_ALLOC_FAILED"}); !l.empty()) {
    state = "cuda_oom";
    reason = "CUDA out of memory: " + l;
  } else if (auto l2 = line_with({"exceeded memory limit", "oom-kill", "oom_kill", "Out Of Memory"});
             !l2.empty() || state == "out_of_memory") {
    state = "out_of_memory";
    reason = "host out of memory" + (l2.empty() ? std::string() : ": " + l2);
  } else if (state == "failed" || state == "completed") {
    // A run that exits 0 with a NaN/Inf objective diverged all the same.
    bool nan_loss = last && !std::isfinite(last->value);
    // What trainers print when they give up on a NaN, not the bare word: a usage text that
    // documents a "diverged" exit code is no divergence.
    if (auto l3 = line_with(
            {"training diverged", "found NaN in local grad norm", "Loss is NaN", "loss is nan", "NaN or Inf found"});
        nan_loss || !l3.empty()) {
      state = "diverged";
      reason = nan_loss ? fmt::format("{} is {} at step {}", last->metric, last->value, last->step) : l3;
    } else if (state == "failed") {
      // The log's last words say more than an exit code: its last line (a Python exception's
      // message, a script's "missing file"), after its last error line when that is another one.
      auto slurms = [](std::string_view l) { return l.starts_with("srun: ") || l.starts_with("slurmstepd: "); };
      std::string l4 = line_with({"Error", "ERROR", "error:", "invalid"});
      if (slurms(l4)) l4.clear();
      std::string last_line;
      for (const std::string& l : LastLogLines(tail, 8)) {
        if (!slurms(l)) last_line = l;
      }
      std::string said = l4;
      if (!last_line.empty() && last_line != l4) said += (l4.empty() ? "" : "; last line: ") + last_line;
      if (!said.empty()) reason += (reason.empty() ? "" : ": ") + said;
    }
  }
}

std::vector<std::string> LastLogLines(std::string_view tail, size_t n) {
  std::vector<std::string> out;
  size_t end = tail.size();
  while (end > 0 && out.size() < n) {
    size_t nl = tail.rfind('\n', end - 1);
    size_t begin = nl == std::string_view::npos ? 0 : nl + 1;
    std::string_view line = tail.substr(begin, end - begin);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    if (!line.empty()) out.emplace_back(line.substr(0, 200));
    if (nl == std::string_view::npos) break;
    end = nl;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace sweep::logs
