// A study's file names on the cluster and its claim on them; see study_files.h.
#include "run/study_files.h"

#include <fmt/format.h>

#include <unistd.h>

#include <filesystem>

#include "slurm/sbatch_script.h"

namespace sweep::run {

std::string StudyFiles::ScriptsDir() const { return workdir + "/scripts" + (legacy ? "" : "/" + study); }
std::string StudyFiles::LogsDir() const { return workdir + "/logs" + (legacy ? "" : "/" + study); }

std::string StudyFiles::TrialLog(const std::string& trial_key, int attempt) const {
  return fmt::format("{}/{}.{}.out", LogsDir(), trial_key, attempt);
}

std::string StudyFiles::TrialScript(const std::string& trial_key, int attempt) const {
  return fmt::format("{}/{}.{}.sbatch", ScriptsDir(), trial_key, attempt);
}

std::string StudyFiles::ArrayLog(const std::string& array_name, const std::string& index) const {
  return fmt::format("{}/{}_{}.out", LogsDir(), array_name, index);
}

std::string StudyFiles::ArrayScript(const std::string& array_name) const {
  return fmt::format("{}/{}.sbatch", ScriptsDir(), array_name);
}

std::string StudyFiles::TrialDir(const std::string& trial_key) const {
  return workdir + "/trials/" + (legacy ? "" : study + "/") + trial_key;
}

std::string StudyFiles::ClaimPath() const { return workdir + "/.slurmsweep/studies/" + study; }

StudyFiles FilesOf(const std::string& workdir, const std::string& study,
                   const std::vector<store::TrialRecord>& trials) {
  StudyFiles files{workdir, study, false};
  std::string own = files.LogsDir() + "/";
  for (const auto& t : trials) {
    if (!t.log_path.empty() && t.log_path.rfind(own, 0) != 0) files.legacy = true;
  }
  return files;
}

std::string LocalHostName() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

std::string ClaimToken(const store::StudyRecord& record, const std::string& host, const std::string& database) {
  return fmt::format("slurmsweep-study created={:.6f} host={} database={}", record.created_at, host, database);
}

namespace {

// The value of `key=` in a claim token ("database" runs to the end: a path may hold spaces).
std::string Field(std::string_view token, std::string_view key) {
  size_t p = token.find(std::string(key) + "=");
  if (p == std::string_view::npos) return "";
  p += key.size() + 1;
  size_t end = key == "database" ? std::string_view::npos : token.find(' ', p);
  return std::string(token.substr(p, end == std::string_view::npos ? std::string_view::npos : end - p));
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// mkdir the study's directories, make the claim (`ln -s`, or replace it: `ln -sfn`), print it.
std::string ClaimCommand(const StudyFiles& f, const std::string& token, bool replace) {
  using slurm::ShellQuote;
  std::string claim = f.ClaimPath();
  std::string trials = f.workdir + "/trials" + (f.legacy ? "" : "/" + f.study);
  std::string dirs;
  for (const std::string& d : {f.workdir, f.workdir + "/scripts", f.workdir + "/logs", f.workdir + "/trials",
                               f.ScriptsDir(), f.LogsDir(), trials, claim.substr(0, claim.rfind('/'))}) {
    dirs += " " + ShellQuote(d);
  }
  // The study's own folders hold its values (scripts carry [job.vars], logs print them, trial
  // folders keep checkpoints): 0700 whatever the cluster's umask, also when made by an older run.
  std::string own;
  for (const std::string& d : {f.ScriptsDir(), f.LogsDir(), trials}) own += " " + ShellQuote(d);
  return fmt::format("umask 077 && mkdir -p{} && chmod 700{} && {{ ln -s{} {} {} 2>/dev/null; readlink {}; }}", dirs,
                     own, replace ? "fn" : "", ShellQuote(token), ShellQuote(claim), ShellQuote(claim));
}

}  // namespace

Status ClaimStudyFiles(slurm::Transport& transport, const StudyFiles& f, const std::string& token,
                       const std::string& host, const std::string& study_path, std::string* note,
                       const std::function<Status()>& before_takeover) {
  for (bool replace : {false, true}) {
    auto out = transport.Run(ClaimCommand(f, token, replace));
    if (!out.ok()) return out.status().WithContext("creating the work directory on the cluster");
    if (out->exit_code != 0) {
      return Status::InvalidArgument(
          fmt::format("{}: cannot create [cluster] workdir {} on the cluster (check workdir and user): {}", study_path,
                      f.workdir, out->err));
    }
    std::string claim = Trimmed(out->out);
    if (claim.empty()) {
      return Status::InvalidArgument(
          fmt::format("{}: cannot claim {} for study '{}' on the cluster (check that [cluster] workdir is writable)",
                      study_path, f.ClaimPath(), f.study));
    }
    if (Field(claim, "created") == Field(token, "created")) return Status::OK();
    std::string other_db = Field(claim, "database");
    bool here = !replace && Field(claim, "host") == host && !other_db.empty();
    bool deleted = here && !std::filesystem::exists(other_db);
    // The same path holds a database created since: the one the claim names was deleted.
    bool recreated = here && !deleted && other_db == Field(token, "database");
    if (deleted || recreated) {
      if (before_takeover) SWEEP_RETURN_IF_ERROR(before_takeover());
      *note = fmt::format("the claim on study name '{}' in {} named database {} on this machine, which {}: taken over",
                          f.study, f.workdir, other_db,
                          deleted ? "no longer exists" : "was deleted and created again since");
      continue;
    }
    return Status::FailedPrecondition(fmt::format(
        "{}: [cluster] workdir {} already holds another study named '{}' (database {} on {}; claim {}), whose "
        "scripts and logs would mix with this one's; nothing was submitted. Give this study another [study] name "
        "or another [cluster] workdir (or remove {} if that study is gone)",
        study_path, f.workdir, f.study, other_db.empty() ? claim : other_db, Field(claim, "host"), f.ClaimPath(),
        f.ClaimPath()));
  }
  return Status::Internal("unreachable");
}

}  // namespace sweep::run
