// transport_bench: what one run-loop tick costs over transport = "openssh" (a process of the system's ssh per
// call, through a ControlMaster) against transport = "ssh" (libssh, one session held open), on the same
// running lab sshd and the same jobs: the tick's one batched squeue (SlurmClient::Query), and that plus the
// tick's one read of every running trial's new log bytes (ReadMany). Paired rounds, the two transports in
// turn; the medians and their ratio (target: openssh at most 1.5x libssh). Not a test: it prints.
//
//   SLURMSWEEP_LAB=/tmp/slurmsweep-lab build/bin/transport_bench [--rounds N] [--jobs N]
//
// Needs a running lab (tests/cluster/start.sh): it submits N sleeping jobs and cancels them at the end.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "slurm/slurm_client.h"
#include "slurm/transport.h"

namespace {

using namespace sweep;

std::map<std::string, std::string> LabEnv() {
  const char* lab = std::getenv("SLURMSWEEP_LAB");
  std::ifstream in(std::string(lab ? lab : "/tmp/slurmsweep-lab") + "/env");
  std::map<std::string, std::string> env;
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    auto eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

template <class F>
double Seconds(F&& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 40, njobs = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else if (a == "--jobs") njobs = std::atoi(argv[i + 1]);
  }
  auto env = LabEnv();
  if (env["SLURMSWEEP_SSH_PORT"].empty()) {
    std::cerr << "transport_bench: no lab (set SLURMSWEEP_LAB; start it with tests/cluster/start.sh)\n";
    return 1;
  }
  std::string dir = fmt::format("/tmp/transport_bench.{}", ::getpid());
  std::filesystem::create_directories(dir);

  slurm::SshOptions so;
  so.host = env["SLURMSWEEP_SSH_HOST"];
  so.port = std::stoi(env["SLURMSWEEP_SSH_PORT"]);
  so.user = env["SLURMSWEEP_SSH_USER"];
  so.identity_file = env["SLURMSWEEP_SSH_KEY"];
  so.known_hosts_file = env["SLURMSWEEP_SSH_KNOWN_HOSTS"];
  so.process_ssh_config = false;
  auto libssh = slurm::ConnectSsh(so);
  if (!libssh.ok()) return std::cerr << libssh.status().ToString() << "\n", 1;

  slurm::OpensshOptions oo;
  oo.host = so.host;
  oo.port = so.port;
  oo.user = so.user;
  oo.identity_file = so.identity_file;
  oo.known_hosts_file = so.known_hosts_file;
  oo.ssh_config = "/dev/null";  // hermetic: none of this machine's ~/.ssh/config
  oo.control_path = dir + "/master";
  oo.persist_s = 60;
  auto openssh = slurm::ConnectOpenssh(oo);
  if (!openssh.ok()) return std::cerr << openssh.status().ToString() << "\n", 1;

  // Jobs that stay in the queue for the whole bench, each with a log of a few KiB to read.
  std::vector<std::string> ids;
  std::vector<slurm::ReadRequest> logs;
  for (int i = 0; i < njobs; ++i) {
    std::string log = fmt::format("{}/job{}.out", dir, i);
    auto r = (*libssh)->Run(
        fmt::format("SLURM_CONF={} sbatch --parsable -p {} -c 1 --mem 50M -t 10 -o {} --wrap 'seq 1 2000; sleep 600'",
                    env["SLURM_CONF"], env["SLURMSWEEP_PARTITION"], log));
    if (!r.ok() || r->exit_code != 0) return std::cerr << "sbatch failed: " << (r.ok() ? r->err : "") << "\n", 1;
    ids.push_back(r->out.substr(0, r->out.find_first_of(";\n")));
    logs.push_back({log, 0, 64 * 1024});
  }
  ::sleep(2);  // the jobs start and write their logs

  std::vector<double> query[2], tick[2];
  slurm::Transport* transports[2] = {libssh->get(), openssh->get()};
  for (int round = 0; round < rounds; ++round) {
    for (int k = 0; k < 2; ++k) {
      int t = (round % 2) ? 1 - k : k;  // alternate which goes first
      slurm::SlurmClient client(*transports[t]);
      query[t].push_back(Seconds([&] {
        auto q = client.Query(ids);
        if (!q.ok()) std::cerr << q.status().ToString() << "\n";
      }));
      tick[t].push_back(Seconds([&] {
        auto q = client.Query(ids);
        auto r = transports[t]->ReadMany(logs);
        if (!q.ok() || r.empty()) std::cerr << "tick failed\n";
      }));
      if (client.stats().squeue + client.stats().sacct != 2) std::cerr << "more than one squeue call per tick\n";
    }
  }
  (void)(*libssh)->Run(fmt::format("SLURM_CONF={} scancel {}", env["SLURM_CONF"], fmt::join(ids, " ")));
  std::filesystem::remove_all(dir);

  double lq = Median(query[0]), oq = Median(query[1]), lt = Median(tick[0]), ot = Median(tick[1]);
  fmt::print("transport_bench: {} rounds, {} jobs, via {} and {}\n", rounds, njobs, (*libssh)->Describe(),
             (*openssh)->Describe());
  fmt::print("{:<44} {:>10} {:>10} {:>8}\n", "per tick (median)", "libssh", "openssh", "ratio");
  fmt::print("{:<44} {:>9.1f}ms {:>9.1f}ms {:>7.2f}x\n", "one squeue (SlurmClient::Query)", lq * 1e3, oq * 1e3,
             oq / lq);
  fmt::print("{:<44} {:>9.1f}ms {:>9.1f}ms {:>7.2f}x\n", fmt::format("one squeue + ReadMany of {} logs", njobs),
             lt * 1e3, ot * 1e3, ot / lt);
  fmt::print("target: openssh at most 1.5x libssh per tick: {}\n",
             ot / lt <= 1.5 && oq / lq <= 1.5 ? "met" : "NOT met");
  return 0;
}
