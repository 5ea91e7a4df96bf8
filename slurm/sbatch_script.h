// sbatch scripts: rendering a template with trial values, every value shell-quoted, and the
// #SBATCH header slurmsweep owns (job name, output file, comment tag, resources).
//
// Template syntax (version 1): `{{name}}` is replaced by the value quoted for the shell context
// it stands in (unquoted: one single-quoted word; inside '...', "..." or a here-document: escaped
// there), so the shell reads back the value literally; a place no quoting can be proven safe for is
// refused (shell_context.h, CheckTemplateContexts); `{{raw:name}}` inserts the text verbatim for
// templates that need it (e.g. a flag list built by the study) — the study author takes
// responsibility. A placeholder that names no known variable, or an unbalanced `{{`, is an
// error naming the template and line, reported before anything is submitted.
// Also the job array's dispatch script and the telemetry sampler a trial's script may carry.
// Module slurm/ (namespace sweep::slurm): reaching the cluster and speaking Slurm; uses base/ only.
// One of its three public headers (transport.h, slurm_client.h with job_state.h, sbatch_script.h);
// the rest is internal.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace sweep::slurm {

// POSIX shell single-quoting: 'it'\''s'. Safe for any byte string except NUL, which a shell
// cannot carry; values with NUL are rejected earlier (RenderTemplate).
std::string ShellQuote(std::string_view value);

// Names used by the placeholders in `tmpl` (without the raw: prefix), in order of appearance,
// or an error for unbalanced braces or an empty name.
Result<std::vector<std::string>> TemplatePlaceholders(std::string_view tmpl, std::string_view template_name);

// The variables whose values a study declared outside the default invariant (base/params.h).
struct DeclaredValues {
  // May lie outside the safe alphabet; each placeholder must stand where no program reads it as
  // code (PlaceholderSite::data_only), and never as {{raw:name}}.
  std::set<std::string> text;
  // May begin with '-' though not a number; each placeholder must stand where no program reads it
  // as an option (PlaceholderSite::option_value: after `--`, or `--flag={{v}}`).
  std::set<std::string> option;
  // May be absolute or climb with '..' (the built-ins workdir, trial_dir and log are).
  std::set<std::string> path;
};

// Refuses a template with a placeholder in a place RenderTemplate cannot quote for, whatever the
// values (see shell_context.h): the error names the file, line, the place and the safe rewrite.
// A declared text or option variable's placeholders must stand in the places above.
Status CheckTemplateContexts(std::string_view tmpl, std::string_view template_name,
                             const DeclaredValues& declared = {});

// Every value is checked before it is quoted: one outside the safe alphabet is refused unless
// declared text and its place is data_only (as CheckTemplateContexts); one that reads as an option
// or a path leaving its place (base/params.h: ValueShapeProblem) unless declared so. This holds
// whatever program the script hands the text to, which the reader cannot know.
Result<std::string> RenderTemplate(std::string_view tmpl, std::string_view template_name,
                                   const std::map<std::string, std::string>& vars, const DeclaredValues& declared = {});

// The #SBATCH lines slurmsweep itself sets. Values are checked to hold only characters that
// sbatch reads literally in a directive (no spaces, quotes or shell syntax), because #SBATCH
// lines are not shell-parsed and cannot be quoted.
struct SbatchHeader {
  std::string job_name;
  std::string output;   // per-trial log file, absolute path on the cluster ("%a": array task index);
                        // with it, --open-mode=truncate
  std::string comment;  // "slurmsweep:study=NAME:trial=KEY:attempt=N"
  std::string workdir;  // --chdir
  std::string partition, account, qos;
  int nodes = 1;
  int gpus_per_node = 0;
  int cpus_per_task = 0;
  std::string mem;         // e.g. "2G"
  std::string time_limit;  // e.g. "00:10:00"
  std::string array;       // "0-49%8": a job array of 50 tasks, at most 8 running at once
};

// Where a script's first command begins: past the shebang, blank lines and comments (the
// #SBATCH lines among them). Code inserted here runs first and hides no directive from sbatch.
size_t DirectivesEnd(std::string_view script);

// The #SBATCH lines a script carries before its first command (sbatch reads no further), in
// order. Two trials whose rendered scripts carry the same directives can share a job array.
std::vector<std::string> SbatchDirectives(std::string_view script);

// Refuses a template whose own #SBATCH lines set what the header owns: --output, --open-mode,
// --job-name, --comment, --array, --chdir (or their short forms or prefixes, anywhere on the line),
// naming file and line. Run on the template at load and on each rendered script ({{raw:...}} could
// add such an option).
Status CheckOwnDirectives(std::string_view tmpl, std::string_view template_name);

// Inserts the header after the template's first line if it is a shebang, else prepends
// "#!/bin/bash" and the header.
Result<std::string> AddSbatchHeader(std::string_view script, const SbatchHeader& header);

// The job array's own script (array_script.cc): each task execs the script of the trial it stands
// for, so every trial keeps its own rendered script (and #SBATCH header tag) while Slurm sees one
// sbatch.

// One task of an array, by index: where Slurm writes its log, the trial's usual log name (a
// symbolic link to the task's log, for people browsing logs/), and the trial's own script.
struct ArrayTask {
  std::string task_log;     // absolute; only its base name is linked
  std::string trial_log;    // absolute
  std::string script_path;  // absolute, executable
};

// The array script's body, before AddSbatchHeader adds slurmsweep's header: a shebang, the
// template's own #SBATCH `directives` (shared by every task), and a case statement from
// SLURM_ARRAY_TASK_ID to the task's trial script; an index with no task exits 2. Every path is
// shell-quoted.
std::string ArrayDispatchBody(std::string_view study_name, const std::vector<std::string>& directives,
                              const std::vector<ArrayTask>& tasks);

// Scripts that carry the same #SBATCH directives (SbatchDirectives) can share a job array: the
// indices of `keys` grouped by equal key, groups in order of their first member; an empty key
// (std::nullopt: a script that must not share, e.g. one whose directives name its own log) is a
// group of its own.
std::vector<std::vector<size_t>> GroupByDirectives(const std::vector<std::optional<std::vector<std::string>>>& keys);

// The telemetry sampler slurmsweep puts in a trial's sbatch script when the study asks for it
// ([job] monitor = true; telemetry_script.cc): a few lines of POSIX sh, so nothing is installed on
// the cluster. It runs in the background beside the trainer on the batch host and appends one line
// per sample to a file beside the trial's log, in the format base/telemetry.h describes.

// Refuses a template the sampler cannot go into: its first line names an interpreter that is not
// a POSIX shell (python, perl, ...). `where` names the study's key asking for it (file:line: key).
Status CheckTelemetryShell(std::string_view tmpl, std::string_view template_name, std::string_view where);

// `script` with the sampler inserted where its first command begins (after the shebang and the
// #SBATCH block, so sbatch still reads every directive), writing to `file` every `interval_s`
// seconds. With nvidia-smi on the PATH it also runs nvidia-smi's query loop over the job's GPUs
// (CUDA_VISIBLE_DEVICES) every interval. The sampler ends within one interval of the script's
// own process (the trainer too, when the script execs it: same pid), and Slurm ends what is left
// with the job. It never stops the job: a file that cannot be written ends the sampler only.
std::string WithTelemetrySampler(std::string_view script, const std::string& file, int interval_s);

}  // namespace sweep::slurm
