// Where a template placeholder stands in the shell grammar, as bash will read the rendered
// script. Used by RenderTemplate (sbatch_script.h) to quote each value for its place, and to
// refuse every place it cannot prove safe: this reader fails closed. It accepts a placeholder
// only as (part of) an unquoted word that is an argument, inside '...', inside "..." (also
// within $( )), in a here-document body outside any expansion, or in a comment; it refuses the
// rest (backquotes, arithmetic, ${...}, $'...', array subscripts, a command's name, a
// here-document's delimiter, arguments that become code: eval, trap, let, `sh -c`, ssh, ...)
// and everything after a construct it cannot follow. In an #SBATCH line, which sbatch reads as
// options, a placeholder may only be a long option's value (`#SBATCH --constraint={{v}}`).
//
// Depends on nothing but the standard library; no I/O. Which commands run their arguments as code
// is shell_commands.h.
// Internal to slurm/ (its public headers: transport.h, slurm_client.h, sbatch_script.h).
// Module slurm/ (namespace sweep::slurm): reaching the cluster and speaking Slurm; uses base/ only.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sweep::slurm {

enum class ShellContext {
  kWord,           // unquoted: the value becomes one single-quoted word
  kSingle,         // inside '...': single quotes in the value are closed, escaped and reopened
  kDouble,         // inside "...": \ $ ` " are backslash-escaped
  kHeredoc,        // in an unquoted here-document body: \ $ ` are backslash-escaped
  kQuotedHeredoc,  // in a here-document whose delimiter is quoted: nothing is expanded
  kComment,        // after #: not run (#SBATCH lines: sbatch reads the single-quoted word)
  kRefused,        // none of the above: `refusal` says where it stands
};

struct PlaceholderSite {
  ShellContext context = ShellContext::kRefused;
  std::string refusal;  // kRefused: the place, e.g. "inside backquote command substitution"
  // kHeredoc / kQuotedHeredoc: the body's delimiter word and whether <<- strips leading tabs.
  std::string delimiter;
  bool strip_tabs = false;
  // Where no program reads the value as code: the value of a plain assignment (`X={{v}}`,
  // `X="a {{v}}"`, `export X={{v}}`; not declare's other forms, whose -n reads it as a name) or a
  // comment. The only places a value declared as text (outside the safe alphabet, base/params.h)
  // may stand: an argument or a here-document line is read by a program that may run it.
  bool data_only = false;
  // Where no program reads the value as an option: after `--` in its command (past wrappers such
  // as env or exec), as a long option's own value (`--flag={{v}}`, also in an array element), after
  // a prefix that does not begin with '-' (`./{{v}}`), or in a comment. The only places a value
  // declared an option (one that may begin with '-', base/params.h) may stand.
  bool option_value = false;
};

// One site per placeholder; `holders` are the byte ranges [begin, end) of the placeholders in
// `tmpl`, in order and not overlapping.
std::vector<PlaceholderSite> AnalyzeShell(std::string_view tmpl, const std::vector<std::pair<size_t, size_t>>& holders);

// A short name of a context for messages ("an unquoted word", "a here-document", ...).
std::string_view ShellContextName(ShellContext context);

}  // namespace sweep::slurm
