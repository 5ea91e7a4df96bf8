// libFuzzer target for the study loader: any bytes as a study file must give a Study or an
// InvalidArgument/NotFound that starts with the file's path, never a crash. The constraints of
// a loaded study are also evaluated, as space expansion would, on its first configuration.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <unistd.h>

#include "study/expr.h"
#include "study/loader.h"

namespace {

constexpr const char* kDir = "/tmp/fuzz";
constexpr const char* kStudyPath = "/tmp/fuzz/study.toml";

// Seeds name these files in [job] template / stage; without them the loader would stop at
// "cannot read" and never reach template rendering.
struct FixtureFile {
  const char* name;
  const char* text;
};
constexpr FixtureFile kFixtures[] = {
    {"job.sbatch",
     "#!/bin/bash\necho {{study}} {{trial}} {{attempt}} {{workdir}} {{trial_dir}} {{log}}\n"
     "srun -N {{nodes}} --gpus={{gpus}} --cpus={{cpus_per_task}} {{raw:gpus_per_node}}\n"},
    {"params.sbatch", "#!/bin/bash\ntrain --lr {{lr}} --opt {{ opt }} {{raw:extra}} --trial {{trial}}\n"},
    {"bad.sbatch", "#!/bin/bash\necho {{nope}}\necho {{lr\n"},
    {"stage.bin", "payload\n"},
};

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "study_fuzz: %s\n", what.c_str());
  std::abort();
}

// Write-then-rename: a concurrent run (CTest next to a manual run) never reads half a file.
void WriteFixture(const FixtureFile& f) {
  std::string path = std::string(kDir) + "/" + f.name;
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << f.text;
    if (!out) Die("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

// ExpandSpace's conversion of a parameter value. space.cc itself is left out: clang 14 cannot
// compile it (a lambda capturing a structured binding, C++20 that clang supports from 16).
sweep::study::ExprValue ToExpr(const sweep::ParamValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  if (auto* str = std::get_if<std::string>(&v)) return *str;
  return std::get<bool>(v);
}

void CheckLoaded(const sweep::study::Study& s) {
  if (s.name.empty() || s.name.size() > 64) Die("accepted a study name of bad length");
  if (s.space.empty()) Die("accepted an empty [space]");
  if (s.cluster.workdir.empty() || s.cluster.workdir.front() != '/') Die("accepted a relative workdir");
  std::map<std::string, sweep::study::ExprValue> vars = {
      {"nodes", static_cast<double>(s.job.nodes)},
      {"gpus_per_node", static_cast<double>(s.job.gpus_per_node)},
      {"gpus", static_cast<double>(s.job.nodes) * s.job.gpus_per_node},
  };
  for (const auto& p : s.space)
    vars[p.name] = p.choices.empty() ? sweep::study::ExprValue(*p.min) : ToExpr(p.choices[0]);
  for (const auto& c : s.constraints) {
    auto e = sweep::study::Expr::Parse(c.expr);
    if (!e.ok()) Die("accepted a constraint that does not parse: " + c.expr);
    // Type errors only show with values; they must still be input errors, not crashes.
    auto ok = e->EvalBool(vars);
    if (!ok.ok() && ok.status().code() != sweep::Status::Code::kInvalidArgument) {
      Die("constraint evaluation failed oddly: " + ok.status().ToString());
    }
    if (!ok.ok() && ok.status().message().find("unknown name") != std::string::npos) {
      Die("the loader accepted a constraint with an unknown name: " + c.expr);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  std::filesystem::create_directories(kDir);
  for (const auto& f : kFixtures) WriteFixture(f);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto study = sweep::study::ParseStudy(text, kStudyPath);
  if (study.ok()) {
    CheckLoaded(*study);
    return 0;
  }
  const sweep::Status& st = study.status();
  if (st.code() != sweep::Status::Code::kInvalidArgument && st.code() != sweep::Status::Code::kNotFound) {
    Die("unexpected error kind: " + st.ToString());
  }
  // The CLI prints this message as is; without the path the user cannot tell which file is wrong.
  if (st.message().rfind(kStudyPath, 0) != 0) Die("error does not start with the study path: " + st.message());
  return 0;
}
