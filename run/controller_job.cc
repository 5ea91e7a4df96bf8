// The controller as a Slurm job; see controller_job.h.
#include "run/controller_job.h"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "slurm/sbatch_script.h"
#include "slurm/transport.h"

namespace sweep::run {

bool InsideControllerJob() {
  const char* job = std::getenv("SLURM_JOB_ID");
  const char* mark = std::getenv("SLURMSWEEP_CONTROLLER_JOB");
  return job && *job && mark && std::string(mark) == "1";
}

Result<std::string> SubmitControllerJob(const study::Study& study, const std::string& study_path,
                                        const ControllerJobOptions& o, const std::string& after) {
  // Both go into #SBATCH lines, which have no quoting.
  if (o.time.empty() || o.time.find_first_not_of("0123456789:-") != std::string::npos) {
    return Status::InvalidArgument("--job-time: use Slurm's time syntax (minutes, MM:SS, HH:MM:SS, D-HH:MM), got '" +
                                   o.time + "'");
  }
  if (study.database.find_first_of(" \t\n'\"\\%") != std::string::npos) {
    return Status::InvalidArgument("--as-job: the database path " + study.database +
                                   " has characters an #SBATCH --output line cannot hold");
  }
  std::error_code ec;
  std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) return Status::Internal("cannot find this program's path: " + ec.message());
  std::string study_abs = std::filesystem::absolute(study_path).string();
  std::string script = fmt::format(
      "#!/bin/sh\n"
      "# Written by `slurmsweep run --as-job`: the controller of study {name}.\n"
      "#SBATCH --job-name=slurmsweep-ctl-{name}\n"
      "#SBATCH --time={time}\n"
      "#SBATCH --signal=B:USR1@{sig}\n"
      "#SBATCH --ntasks=1\n"
      "#SBATCH --cpus-per-task=1\n"
      "#SBATCH --mem=500M\n"
      "#SBATCH --output={db}.controller-%j.log\n"
      "{partition}{account}"
      "export SLURMSWEEP_CONTROLLER_JOB=1\n"
      "exec {exe} run --as-job --job-time {time} --job-signal {sig} {study}\n",
      fmt::arg("name", study.name), fmt::arg("time", o.time), fmt::arg("sig", o.signal_s),
      fmt::arg("db", study.database),
      fmt::arg("partition",
               study.cluster.partition.empty() ? "" : "#SBATCH --partition=" + study.cluster.partition + "\n"),
      fmt::arg("account", study.cluster.account.empty() ? "" : "#SBATCH --account=" + study.cluster.account + "\n"),
      fmt::arg("exe", slurm::ShellQuote(exe)), fmt::arg("study", slurm::ShellQuote(study_abs)));
  auto local = slurm::NewLocalTransport();
  std::string path = study.database + ".controller.sbatch";
  SWEEP_RETURN_IF_ERROR(local->WriteFile(path, script, 0755));
  std::string dep = after.empty() ? "" : " --dependency=afterany:" + after;
  auto r = local->Run("sbatch --parsable" + dep + " " + slurm::ShellQuote(path));
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status::Unavailable(fmt::format("sbatch refused the controller job {}: {}", path, r->err));
  }
  std::string id = r->out.substr(0, r->out.find_first_of(";\n"));
  std::ofstream(study.database + ".controller", std::ios::trunc) << id << "\n";
  return id;
}

std::string ControllerJobOf(const study::Study& study) {
  std::ifstream in(study.database + ".controller");
  std::string id;
  in >> id;
  return id;
}

}  // namespace sweep::run
