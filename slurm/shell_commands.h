// What bash does with a simple command's words, as the template reader (shell_context.cc) needs
// it: which word names the command (past assignments, reserved words and wrappers such as exec),
// and which commands run or name code with their arguments (eval, `sh -c`, ssh, find -exec, ...).
// Pure functions of the words; no I/O.
// Internal to slurm/ (its public headers: transport.h, slurm_client.h, sbatch_script.h).
// Module slurm/ (namespace sweep::slurm): reaching the cluster and speaking Slurm; uses base/ only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sweep::slurm {

// A word as the shell reads it for its name: quotes and backslashes removed.
std::string StripQuotes(std::string_view w);
// StripQuotes(w) past its last '/': "/usr/bin/env" -> "env".
std::string Basename(std::string_view w);
// NAME=..., NAME+=... or NAME[...]=...: an assignment, not a command word.
bool IsAssignment(std::string_view w);
// A reserved word that may stand before a command's name ("if", "!", "time", ...).
bool IsReserved(std::string_view w);
// A command that runs the command named by its next non-option word (exec, env, nohup, ...).
bool IsWrapper(std::string_view w);

// Whether a word of `words` after the command's name (past assignments, reserved words and
// wrappers) is `--`: the command reads no option from the words that follow.
bool OptionsEnded(const std::vector<std::string>& words);

// Why a placeholder in the word that begins with `prefix` (the word's text before it) would run
// or name code with its value, given the command's `words` before that word, or "" when it would
// not. `word_ends_here`: the word ends with the placeholder (so, standing alone, it would be the
// command's name).
std::string CommandRefusal(const std::vector<std::string>& words, std::string_view prefix, bool word_ends_here);

}  // namespace sweep::slurm
