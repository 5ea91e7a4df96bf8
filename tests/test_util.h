// Helpers shared by tests: temp dirs, and the test cluster's environment file.
#pragma once

#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace sweep::testing {

// A fresh directory under /tmp, removed when the object dies.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sweeptest-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Runs `cmd` through the shell: its exit status (-1 if killed by a signal) and its standard output.
inline std::pair<int, std::string> RunShell(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void WriteAll(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

// A study run with the local transport, in `dir`: its template (`command` after the shebang) and
// study.toml with `tables` (TOML tables after [job], e.g. "[job.vars]\n..." and "[space]\n...").
// Returns the study file's path. For tests that need no cluster (status, report, Prepare).
inline std::string WriteLocalStudyFile(const TempDir& dir, const std::string& name, const std::string& command,
                                       const std::string& tables) {
  WriteAll(dir.file("job.sbatch"), "#!/bin/bash\n" + command + "\n");
  WriteAll(dir.file("study.toml"), "[study]\nname = \"" + name +
                                       "\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"" + dir.file("work") +
                                       "\"\n\n[job]\ntemplate = \"job.sbatch\"\n\n" + tables);
  return dir.file("study.toml");
}

// Recorded real outputs live in tests/data/.
inline std::string TestData(const std::string& name) {
  return ReadAll(std::string(SLURMSWEEP_SOURCE_DIR) + "/tests/data/" + name);
}

// KEY=VALUE pairs from the running test cluster's env file ($SLURMSWEEP_LAB/env, default
// /tmp/slurmsweep-lab/env). Empty if the cluster is not running.
inline std::map<std::string, std::string> ClusterEnv() {
  const char* lab = std::getenv("SLURMSWEEP_LAB");
  std::string path = std::string(lab ? lab : "/tmp/slurmsweep-lab") + "/env";
  std::map<std::string, std::string> env;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) == 0) line = line.substr(7);
    auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string value = line.substr(eq + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'')) value = value.substr(1, value.size() - 2);
    env[line.substr(0, eq)] = value;
  }
  return env;
}

// Splits one CSV line that has no quoted fields (what tests write or expect); a trailing comma
// gives a last empty cell.
inline std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

// A file someone wants overwritten through a planted link (another user's 0600 file, say): known
// bytes, mode 0600. The tests that plant links where slurmsweep writes check it stays as planted.
struct Victim {
  std::string path;
  explicit Victim(std::string p) : path(std::move(p)) {
    WriteAll(path, "precious\n");
    ::chmod(path.c_str(), 0600);
  }
  // Its bytes and its mode are as planted.
  bool Untouched() const {
    struct stat st;
    return ReadAll(path) == "precious\n" && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 07777) == 0600;
  }
};

}  // namespace sweep::testing
