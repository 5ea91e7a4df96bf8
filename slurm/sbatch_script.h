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
// Module slurm/: reaching the cluster and speaking Slurm; uses base/ only.
#pragma once

#include <map>
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

// Refuses a template with a placeholder in a place RenderTemplate cannot quote for, whatever the
// values (see shell_context.h): the error names the file, line, the place and the safe rewrite.
// `text_names`: the variables whose values may lie outside the safe alphabet (base/params.h); each
// of their placeholders must stand where no program reads it as code (PlaceholderSite::data_only).
Status CheckTemplateContexts(std::string_view tmpl, std::string_view template_name,
                             const std::set<std::string>& text_names = {});

// Every value is checked before it is quoted: one outside the safe alphabet is refused unless its
// name is in `text_names` and its place is data_only (as CheckTemplateContexts). This holds
// whatever program the script hands the text to, which the reader cannot know.
Result<std::string> RenderTemplate(std::string_view tmpl, std::string_view template_name,
                                   const std::map<std::string, std::string>& vars,
                                   const std::set<std::string>& text_names = {});

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
// --job-name, --comment, --array, --chdir (or their short forms or prefixes), naming file and line.
Status CheckOwnDirectives(std::string_view tmpl, std::string_view template_name);

// Inserts the header after the template's first line if it is a shebang, else prepends
// "#!/bin/bash" and the header.
Result<std::string> AddSbatchHeader(std::string_view script, const SbatchHeader& header);

}  // namespace sweep::slurm
