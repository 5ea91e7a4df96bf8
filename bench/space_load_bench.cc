// Loading a study whose [space] list has 10k, 50k and 100k values: the loader's time per value
// must not grow with the list (it did: a duplicate check scanned the list for every value, 50k
// values took 16 s). Prints, per size, the loader's time, toml++'s parse of the same text alone
// (the floor, measured in the same run) and their ratio, then the growth of the time per value
// from the smallest to the largest size: about 1 when loading is linear, 10 when quadratic.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <toml++/toml.h>
#include <vector>

#include "study/loader.h"

namespace {

double Seconds(auto&& fn) {
  auto start = std::chrono::steady_clock::now();
  fn();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The best of `rounds`: the machine is shared, and the least disturbed round is the cost.
double Best(int rounds, auto&& fn) {
  double best = 1e300;
  for (int i = 0; i < rounds; ++i) best = std::min(best, Seconds(fn));
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 3;
  std::string tmpl = (std::filesystem::temp_directory_path() / "space-bench-XXXXXX").string();
  std::filesystem::path dir = ::mkdtemp(tmpl.data());
  std::ofstream(dir / "job.sbatch") << "#!/bin/bash\ntrain --lr {{lr}} --tag {{tag}}\n";
  std::string path = (dir / "study.toml").string();
  fmt::print("{:>8} {:>12} {:>12} {:>8} {:>16}\n", "values", "loader s", "toml++ s", "ratio", "loader us/value");
  std::vector<std::pair<size_t, double>> per_value;
  for (size_t n : {10000u, 50000u, 100000u}) {
    // A float list and a string list of n values each: both kinds go through the duplicate check.
    std::string text = fmt::format(
        "[study]\nname = \"bench\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/space-bench\"\n\n"
        "[job]\ntemplate = \"job.sbatch\"\n\n[search]\nsampler = \"random\"\ntrials = 10\n\n[space]\nlr = [");
    for (size_t i = 0; i < n; ++i) text += fmt::format("{}{}", i ? ", " : "", 1e-6 * static_cast<double>(i + 1));
    text += "]\ntag = [";
    for (size_t i = 0; i < n; ++i) text += fmt::format("{}\"t{}\"", i ? ", " : "", i);
    text += "]\n";
    bool ok = true;
    std::string error;
    double loader = Best(rounds, [&] {
      auto s = sweep::study::ParseStudy(text, path);
      if (!s.ok()) ok = false, error = s.status().ToString();
    });
    if (!ok) {
      fmt::print(stderr, "space_load_bench: {}\n", error);
      return 1;
    }
    double toml = Best(rounds, [&] { auto t = toml::parse(text, path); });
    per_value.emplace_back(n, loader / static_cast<double>(n));
    fmt::print("{:>8} {:>12.3f} {:>12.3f} {:>8.2f} {:>16.2f}\n", n, loader, toml, loader / toml,
               1e6 * loader / static_cast<double>(n));
  }
  std::filesystem::remove_all(dir);
  fmt::print("growth of time per value, {}k -> {}k values: {:.2f} (1 = linear, {:.0f} = quadratic)\n",
             per_value.front().first / 1000, per_value.back().first / 1000,
             per_value.back().second / per_value.front().second,
             static_cast<double>(per_value.back().first) / static_cast<double>(per_value.front().first));
  return 0;
}
