// libFuzzer target for what slurmsweep reads from Slurm and writes for the shell: the squeue,
// sacct, scontrol and sbatch parsers (slurm/slurm_client.h) and template rendering and shell
// quoting (slurm/sbatch_script.h). Every input goes through all of them.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "slurm/sbatch_script.h"
#include "slurm/slurm_client.h"

namespace {

namespace slurm = sweep::slurm;
using sweep::Status;

constexpr std::string_view kTemplateName = "fuzz.sbatch";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "slurm_fuzz: %s\n", what.c_str());
  std::abort();
}

// The parsers skip lines that are blank after trimming these (slurm_client.cc's Trim).
size_t NonBlankLines(std::string_view text) {
  size_t n = 0;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (line.find_first_not_of(" \t\r") != std::string_view::npos) ++n;
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return n;
}

bool HasNewline(const slurm::JobInfo& j) {
  for (const std::string* f :
       {&j.job_id, &j.slurm_state, &j.reason, &j.exit_code, &j.name, &j.start_time, &j.end_time, &j.comment}) {
    if (f->find('\n') != std::string::npos) return true;
  }
  return false;
}

void CheckSlurmParsers(std::string_view in) {
  const size_t lines = NonBlankLines(in);

  size_t bad = 0;
  auto squeue = slurm::ParseSqueue(in, &bad);
  // Every line is either a job or counted: a silently dropped squeue line would be a job the
  // run loop thinks has vanished.
  if (squeue.size() + bad != lines) Die("squeue: jobs + malformed != lines");
  for (const auto& j : squeue) {
    if (j.job_id.empty() || j.job_id.find_first_not_of("0123456789_[]-%,") != std::string::npos) {
      Die("squeue: bad job id '" + j.job_id + "'");
    }
    if (HasNewline(j)) Die("squeue: a field holds a newline");
  }

  bad = 0;
  auto sacct = slurm::ParseSacct(in, &bad);
  if (sacct.size() + bad > lines) Die("sacct: more jobs + malformed than lines");
  for (const auto& j : sacct) {
    if (j.job_id.empty() || j.job_id.find('.') != std::string::npos) Die("sacct: bad job id '" + j.job_id + "'");
    if (HasNewline(j)) Die("sacct: a field holds a newline");
  }

  auto scontrol = slurm::ParseScontrolShowJob(in);
  if (scontrol.size() > lines) Die("scontrol: more jobs than lines");
  for (const auto& j : scontrol) {
    if (j.job_id.empty()) Die("scontrol: empty job id");
    if (HasNewline(j)) Die("scontrol: a field holds a newline");
  }

  auto id = slurm::ParseSbatchParsable(in);
  if (id.ok()) {
    // The id goes onto squeue/scancel command lines unquoted, so digits only.
    if (id->empty() || id->find_first_not_of("0123456789") != std::string::npos) Die("sbatch: bad id '" + *id + "'");
  } else if (id.status().code() != Status::Code::kInternal) {
    Die("sbatch: unexpected error kind " + id.status().ToString());
  }
}

// POSIX sh reading of a word made only of '...' runs and backslash escapes, the two forms
// ShellQuote may emit; anything else outside quotes would be shell syntax, so it is refused.
std::optional<std::string> PosixUnquote(std::string_view q) {
  std::string out;
  size_t i = 0;
  while (i < q.size()) {
    if (q[i] == '\'') {
      size_t end = q.find('\'', i + 1);
      if (end == std::string_view::npos) return std::nullopt;
      out.append(q.substr(i + 1, end - i - 1));
      i = end + 1;
    } else if (q[i] == '\\' && i + 1 < q.size() && q[i + 1] != '\n') {  // backslash-newline is removed by sh
      out.push_back(q[i + 1]);
      i += 2;
    } else {
      return std::nullopt;
    }
  }
  return out;
}

void CheckShellQuote(std::string_view value) {
  std::string q = slurm::ShellQuote(value);
  if (q.size() < 2 || q.front() != '\'' || q.back() != '\'') Die("ShellQuote: not enclosed in single quotes");
  auto back = PosixUnquote(q);
  if (!back) Die("ShellQuote: output has unquoted shell syntax");
  if (*back != value) Die("ShellQuote: sh would read back a different string");
}

void CheckTemplate(std::string_view tmpl) {
  auto names = slurm::TemplatePlaceholders(tmpl, kTemplateName);
  // Values hostile in the ways a study can make them: the template's own head, quotes and all.
  std::string value(tmpl.substr(0, 32));
  std::map<std::string, std::string> vars;
  if (names.ok()) {
    for (const auto& n : *names) {
      if (n.empty() || n.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") !=
                           std::string::npos) {
        Die("TemplatePlaceholders: bad name '" + n + "'");
      }
      if (vars.count(n)) Die("TemplatePlaceholders: duplicate name '" + n + "'");
      vars[n] = value;
    }
  }

  auto rendered = slurm::RenderTemplate(tmpl, kTemplateName, vars);
  if (!names.ok()) {
    // Both scan with the same code; a template one refuses, the other must refuse the same way.
    if (rendered.ok() || rendered.status().message() != names.status().message()) {
      Die("RenderTemplate and TemplatePlaceholders disagree on a bad template");
    }
  } else if (!vars.empty() && value.find('\0') != std::string::npos) {
    if (rendered.ok()) Die("RenderTemplate accepted a value with NUL");
  } else if (!rendered.ok()) {
    // The only refusals of bound values: a place the renderer cannot prove safe (refused by the
    // value-free check too), or a value its place cannot carry (a line break in a comment or a
    // here-document, a here-document line turned into its delimiter, a tab <<- would strip), or a
    // value shaped as an option or a path leaving its place (base/params.h: ValueShapeProblem).
    const std::string& m = rendered.status().message();
    bool place = !slurm::CheckTemplateContexts(tmpl, kTemplateName).ok();
    bool value_refused = m.find("line break") != std::string::npos || m.find("delimiter") != std::string::npos ||
                         m.find("starts with a tab") != std::string::npos || m.find("GBK") != std::string::npos ||
                         m.find("safe alphabet") != std::string::npos ||
                         m.find("is not declared a") != std::string::npos;
    if (!place && !value_refused)
      Die("RenderTemplate failed with every placeholder bound: " + rendered.status().ToString());
  }
  for (const auto& st : {names.status(), rendered.status()}) {
    if (!st.ok() && (st.code() != Status::Code::kInvalidArgument || st.message().rfind(kTemplateName, 0) != 0)) {
      Die("template error without the template's name: " + st.ToString());
    }
  }

  if (names.ok() && !vars.empty()) {
    vars.erase(vars.begin());
    auto missing = slurm::RenderTemplate(tmpl, kTemplateName, vars);
    if (missing.ok()) Die("RenderTemplate accepted an unknown placeholder");
  }
}

void CheckHeader(std::string_view script) {
  slurm::SbatchHeader h;
  h.job_name = "ss-fuzz-t-000000000000";
  h.output = "/w/logs/t-000000000000.1.out";
  h.comment = "slurmsweep:study=fuzz:trial=t-000000000000:attempt=1";
  h.workdir = "/w";
  auto out = slurm::AddSbatchHeader(script, h);
  if (!out.ok()) Die("AddSbatchHeader refused a safe header: " + out.status().ToString());
  // sbatch stops reading #SBATCH lines at the first command, so the header must come first.
  size_t header_at = out->find('\n') + 1;
  if (out->rfind("#!", 0) != 0 || out->compare(header_at, 19, "#SBATCH --job-name=") != 0) {
    Die("AddSbatchHeader: header not right after the shebang");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  CheckSlurmParsers(in);
  CheckShellQuote(in);
  CheckTemplate(in);
  CheckHeader(in);
  return 0;
}
