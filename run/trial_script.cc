// A trial's template variables and the render-every-trial check; see trial_script.h.
#include "run/trial_script.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/telemetry.h"
#include "run/job_marks.h"
#include "run/study_files.h"
#include "slurm/sbatch_script.h"
#include "study/loader.h"
#include "study/repeats.h"
#include "study/template_vars.h"

namespace sweep::run {

Status CheckStudyTemplate(study::Study& study) {
  const study::JobSpec& job = study.job;
  const std::string context = study.path + ": job.template";
  std::map<std::string, std::string> known = job.vars;
  for (const auto& p : study.space) known[p.name] = "";
  for (const auto& b : study::BuiltinTemplateVars()) known[b] = "";
  if (study::Seeded(study)) known[study.seed_var] = "";
  // Phase 2 of a two-phase study: phase 1's parameters reach the template too.
  if (study.seed_from) {
    auto phase1 = study::LoadStudy(study.seed_from->study_path);
    if (!phase1.ok()) {
      return phase1.status().WithContext(fmt::format("{}:{}: search.seed_from", study.path, study.seed_from->line));
    }
    for (const auto& p : phase1->space) known[p.name] = "";
  }
  // Placeholders where no quoting can be proven safe are refused whatever the values.
  // A value declared text may stand only where no program reads it as code.
  SWEEP_RETURN_IF_ERROR(
      slurm::CheckTemplateContexts(job.template_text, job.template_path, Declared(study)).WithContext(context));
  SWEEP_RETURN_IF_ERROR(slurm::CheckOwnDirectives(job.template_text, job.template_path).WithContext(context));
  if (job.monitor) {
    SWEEP_RETURN_IF_ERROR(slurm::CheckTelemetryShell(
        job.template_text, job.template_path, fmt::format("{}:{}: key 'job.monitor'", study.path, job.monitor_line)));
  }
  // Rendered once with every known name, an unknown placeholder is reported with the template's
  // own file and line.
  auto rendered = slurm::RenderTemplate(job.template_text, job.template_path, known, Declared(study));
  if (!rendered.ok()) return rendered.status().WithContext(context);
  auto used = slurm::TemplatePlaceholders(job.template_text, job.template_path);
  if (!used.ok()) return used.status();
  // Repeats that the template cannot tell apart would run the same job N times: nothing silently off.
  if (study::Seeded(study) && std::find(used->begin(), used->end(), study.seed_var) == used->end()) {
    return Status::InvalidArgument(fmt::format(
        "{}:{}: key 'search.{}': the trials of a configuration differ only in {{{{{}}}}}, which {} never uses; "
        "pass it to the program (--seed {{{{{}}}}})",
        study.path, study.repeats_line, study.repeats > 1 ? "repeats" : "seed_var", study.seed_var, job.template_path,
        study.seed_var));
  }
  for (const auto& p : study.space) {
    if (std::find(used->begin(), used->end(), p.name) != used->end()) continue;
    study.warnings.push_back(
        fmt::format("{}:{}: [space] parameter '{}' is not used by {}: trials that differ only in it run the same job",
                    study.path, p.line, p.name, job.template_path));
  }
  return Status::OK();
}

std::map<std::string, std::string> TrialTemplateVars(const study::Study& study, const TrialSpec& spec, int attempt,
                                                     const std::string& log_path, const std::string& trial_dir) {
  const std::string& w = study.cluster.workdir;
  std::map<std::string, std::string> vars = study.job.vars;
  for (const auto& [name, v] : spec.params) vars[name] = ParamToString(v);
  vars["study"] = study.name;
  vars["trial"] = spec.key;
  vars["attempt"] = std::to_string(attempt);
  vars["workdir"] = w;
  vars["trial_dir"] = trial_dir.empty() ? StudyFiles{w, study.name}.TrialDir(spec.key) : trial_dir;
  vars["log"] = log_path;
  vars["nodes"] = std::to_string(study.job.nodes);
  vars["gpus_per_node"] = std::to_string(study.job.gpus_per_node);
  vars["gpus"] = std::to_string(study.job.nodes * study.job.gpus_per_node);
  vars["cpus_per_task"] = std::to_string(study.job.cpus_per_task);
  return vars;
}

slurm::DeclaredValues Declared(const study::Study& study) {
  slurm::DeclaredValues d{study.job.text_vars, study.job.option_vars, study.job.path_vars};
  for (const study::ParamSpec& p : study.space) {
    if (p.text) d.text.insert(p.name);
    if (p.option) d.option.insert(p.name);
    if (p.path) d.path.insert(p.name);
  }
  for (const std::string& b : study::BuiltinPathVars()) d.path.insert(b);
  return d;
}

namespace {

// The template rendered with `vars`, and its #SBATCH lines checked again as rendered: a
// {{raw:...}} value could add an option the header owns (the log's above all).
Result<std::string> RenderChecked(const study::Study& study, const std::map<std::string, std::string>& vars) {
  auto r = slurm::RenderTemplate(study.job.template_text, study.job.template_path, vars, Declared(study));
  if (!r.ok()) return r;
  SWEEP_RETURN_IF_ERROR(slurm::CheckOwnDirectives(*r, study.job.template_path + " (rendered)"));
  return r;
}

}  // namespace

std::map<std::string, std::string> ValueRefusals(const study::Study& study) {
  auto first = [](const study::ParamSpec& p) -> ParamValue {
    if (!p.choices.empty()) return p.choices.front();
    if (p.integer) return static_cast<int64_t>(std::ceil(*p.min));
    return *p.min;
  };
  std::map<std::string, std::string> out;
  for (const study::ParamSpec& varied : study.space) {
    for (const ParamValue& value : varied.choices) {
      TrialSpec spec;
      spec.key = "t-000000000000";
      for (const study::ParamSpec& p : study.space) spec.params.emplace_back(p.name, &p == &varied ? value : first(p));
      if (study::Seeded(study)) spec.params.emplace_back(study.seed_var, int64_t{0});
      auto refused = RenderRefusals(study, {spec});
      if (!refused.empty()) {
        out[fmt::format("space.{} = {}", varied.name, ParamToString(value))] = refused.begin()->second;
      }
    }
  }
  return out;
}

std::map<std::string, std::string> RenderRefusals(const study::Study& study, const std::vector<TrialSpec>& specs) {
  std::map<std::string, std::string> out;
  for (const TrialSpec& spec : specs) {
    if (!spec.dropped_reason.empty()) continue;
    std::string log = StudyFiles{study.cluster.workdir, study.name}.TrialLog(spec.key, 1);
    auto r = RenderChecked(study, TrialTemplateVars(study, spec, 1, log));
    if (!r.ok()) out[spec.key] = r.status().message();
  }
  return out;
}

std::string TrialJobName(const study::Study& study, const std::string& trial_key) {
  return "ss-" + study.name + "-" + trial_key;
}

std::string TrialCommentTag(const study::Study& study, const store::TrialRecord& trial) {
  return fmt::format("slurmsweep:study={}:trial={}:attempt={}", study.name, trial.trial_key, trial.attempt);
}

slurm::SbatchHeader StudyHeader(const study::Study& study) {
  slurm::SbatchHeader h;
  h.workdir = study.cluster.workdir;
  h.partition = study.cluster.partition;
  h.account = study.cluster.account;
  h.qos = study.cluster.qos;
  h.nodes = study.job.nodes;
  h.gpus_per_node = study.job.gpus_per_node;
  h.cpus_per_task = study.job.cpus_per_task;
  h.mem = study.job.mem;
  h.time_limit = study.job.time_limit;
  return h;
}

Result<std::string> RenderTrialBody(const study::Study& study, const TrialSpec& spec, const store::TrialRecord& trial,
                                    const std::string& trial_dir) {
  return RenderChecked(study, TrialTemplateVars(study, spec, trial.attempt, trial.log_path, trial_dir));
}

Result<std::string> AddTrialHeader(const study::Study& study, const store::TrialRecord& trial, std::string_view body) {
  slurm::SbatchHeader h = StudyHeader(study);
  h.job_name = TrialJobName(study, trial.trial_key);
  h.output = trial.log_path;
  h.comment = TrialCommentTag(study, trial);
  auto script = slurm::AddSbatchHeader(body, h);
  if (!script.ok()) return script.status();
  // The sampler first: the start mark, inserted at the same place, then goes before it.
  if (study.job.monitor) {
    *script = slurm::WithTelemetrySampler(*script, trial.log_path + std::string(kTelemetrySuffix),
                                          study.job.monitor_interval_s);
  }
  // Each run of the job leaves a start mark beside its log: it finds a job Slurm has purged
  // (Reconcile) and tells one run from the next when Slurm requeues it (HandleRestarts).
  return WithStartMark(*script, MarksPath(trial.log_path), {study.name, trial.trial_key, trial.attempt});
}

}  // namespace sweep::run
