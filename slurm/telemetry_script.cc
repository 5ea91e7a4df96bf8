// The telemetry sampler's shell lines; see sbatch_script.h.
#include <fmt/format.h>

#include "base/telemetry.h"
#include "slurm/sbatch_script.h"

namespace sweep::slurm {
namespace {

// The interpreter a script's first line names ("#!/usr/bin/env bash" -> "bash"), or "" without one.
std::string Interpreter(std::string_view tmpl) {
  if (tmpl.substr(0, 2) != "#!") return "";
  std::string_view line =
      tmpl.substr(2, tmpl.find('\n') == std::string_view::npos ? tmpl.size() - 2 : tmpl.find('\n') - 2);
  auto word = [&line]() {
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    size_t end = line.find_first_of(" \t\r");
    std::string_view w = line.substr(0, end);
    line = end == std::string_view::npos ? std::string_view() : line.substr(end);
    return w;
  };
  std::string_view path = word();
  std::string_view base =
      path.substr(path.find_last_of('/') == std::string_view::npos ? 0 : path.find_last_of('/') + 1);
  if (base == "env") {
    std::string_view next = word();
    while (next.substr(0, 1) == "-") next = word();  // env -S, -i
    return std::string(next);
  }
  return std::string(base);
}

}  // namespace

Status CheckTelemetryShell(std::string_view tmpl, std::string_view template_name, std::string_view where) {
  std::string interp = Interpreter(tmpl);
  // No shebang: slurmsweep's header adds #!/bin/bash.
  static constexpr std::string_view kShells[] = {"", "sh", "bash", "dash", "ksh", "mksh", "zsh", "ash"};
  for (std::string_view s : kShells) {
    if (interp == s) return Status::OK();
  }
  return Status::InvalidArgument(fmt::format(
      "{}: the telemetry sampler is POSIX shell, but {}:1 runs the script with '{}'; set monitor = false, or "
      "make the template a shell script that starts the trainer",
      where, template_name, interp));
}

std::string WithTelemetrySampler(std::string_view script, const std::string& file, int interval_s) {
  // The first line is a command, not a comment: code inserted later at DirectivesEnd (the start
  // mark) then goes before it. The header names the run (job id as the store keeps it, array
  // tasks as ARRAY_TASK, and Slurm's restart count) so that the run loop never takes a requeued
  // job's old file, not yet truncated by the new run's sampler, for the new run's. $$ in the subshell is the script's
  // pid, which the trainer keeps when the script execs it; no EXIT trap, which exec would drop and a template's own
  // would replace. Counters from /proc/stat: user nice system idle iowait irq softirq steal.
  std::string block = fmt::format(
      "__slurmsweep_telemetry={file}  # slurmsweep: [job] monitor = true, sampled beside the job\n"
      "(\n"
      "  set +e +u\n"
      "  f=$__slurmsweep_telemetry; main=$$; iv={iv}; g=\n"
      "  {{ : >\"$f\"; }} 2>/dev/null || exit 0\n"
      "  printf 'slurmsweep-telemetry 1 host=%s interval=%s job=%s restart=%s\\n' \"$(hostname 2>/dev/null)\" "
      "\"$iv\" \"${{SLURM_ARRAY_JOB_ID:-${{SLURM_JOB_ID:-}}}}${{SLURM_ARRAY_JOB_ID:+_${{SLURM_ARRAY_TASK_ID:-}}}}\" "
      "\"${{SLURM_RESTART_COUNT:-0}}\" >>\"$f\"\n"
      "  if command -v nvidia-smi >/dev/null 2>&1; then\n"
      "    if [ -n \"${{CUDA_VISIBLE_DEVICES:-}}\" ]; then set -- --id=\"$CUDA_VISIBLE_DEVICES\"; else set --; fi\n"
      "    nvidia-smi --query-gpu={query} --format=csv,noheader,nounits -l \"$iv\" \"$@\" 2>/dev/null |\n"
      "      while IFS= read -r l; do printf 'gpu %s %s\\n' \"$(date +%s)\" \"$l\"; done >>\"$f\" &\n"
      "    g=$!\n"
      "  fi\n"
      "  pb=; pt=\n"
      "  while kill -0 \"$main\" 2>/dev/null; do\n"
      "    mt=; ma=; u=; n=; s=; i=; w=; q=; sq=; st=\n"
      "    while read -r k v _; do case $k in MemTotal:) mt=$v ;; MemAvailable:) ma=$v ;; esac; done </proc/meminfo\n"
      "    read -r _ u n s i w q sq st _ </proc/stat\n"
      "    b=$((${{u:-0}} + ${{n:-0}} + ${{s:-0}} + ${{q:-0}} + ${{sq:-0}} + ${{st:-0}})); t=$((b + ${{i:-0}} + "
      "${{w:-0}}))\n"
      "    c=\n"
      "    if [ -n \"$pt\" ] && [ \"$t\" -gt \"$pt\" ]; then c=\" cpu_permille=$(((b - pb) * 1000 / (t - pt)))\"; fi\n"
      "    pb=$b; pt=$t\n"
      "    printf 'node %s%s mem_total_kib=%s mem_avail_kib=%s\\n' \"$(date +%s)\" \"$c\" \"$mt\" \"$ma\" >>\"$f\"\n"
      "    sleep \"$iv\"\n"
      "  done\n"
      "  # The reader gone, nvidia-smi ends at its next line (SIGPIPE).\n"
      "  [ -z \"$g\" ] || kill \"$g\" 2>/dev/null\n"
      ") </dev/null >/dev/null 2>&1 &\n",
      fmt::arg("file", ShellQuote(file)), fmt::arg("iv", interval_s), fmt::arg("query", ShellQuote(kGpuQuery)));
  size_t pos = DirectivesEnd(script);
  std::string out(script.substr(0, pos));
  if (!out.empty() && out.back() != '\n') out.push_back('\n');
  out += block;
  out.append(script.substr(pos));
  return out;
}

}  // namespace sweep::slurm
