// Tests of the telemetry parser: nvidia-smi's CSV lines as recorded on real GPUs
// (tests/data/nvidia-smi/, provenance in its SOURCE.md) and the sampler's file format.
#include "logs/telemetry_parser.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <map>
#include <string>

namespace sweep::logs {
namespace {

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(SLURMSWEEP_SOURCE_DIR) + "/tests/data/nvidia-smi/" + name, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::map<std::string, double> ByName(const std::vector<MetricPoint>& points) {
  std::map<std::string, double> m;
  for (const auto& p : points) m[p.name] = p.value;
  return m;
}

// The query the A5000 recording was made with (its gpu_mem.sh).
constexpr const char* kA5000Query =
    "timestamp,index,name,utilization.gpu,memory.total,memory.used,memory.free,temperature.gpu";

TEST_CASE("telemetry: recorded nvidia-smi lines (noheader, nounits) give utilization and memory per GPU") {
  std::string text = ReadData("a5000-noheader-nounits.csv");
  std::vector<MetricPoint> points;
  int64_t t = 1748131999;
  size_t lines = 0;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    std::string_view line(text.data() + start, nl - start);
    REQUIRE(ParseNvidiaSmiLine(line, kA5000Query, t + static_cast<int64_t>(lines), points));
    ++lines;
    start = nl + 1;
  }
  REQUIRE(lines == 10);
  // Three metrics a line (no power in this query); the temperature and free memory are not kept.
  REQUIRE(points.size() == 30);
  auto first = ByName({points.begin(), points.begin() + 3});
  CHECK(first.at("system/gpu0/util_pct") == 10);
  CHECK(first.at("system/gpu0/mem_used_gib") == Approx(11325 / 1024.0));
  CHECK(first.at("system/gpu0/mem_total_gib") == Approx(24564 / 1024.0));
  CHECK(points.back().name == "system/gpu0/mem_used_gib");
  CHECK(points.back().value == Approx(13002 / 1024.0));
  CHECK(points.back().step == t + 9);
  CHECK(points.back().time_s == t + 9);
}

TEST_CASE("telemetry: nvidia-smi lines without an index field are refused, not guessed") {
  // With units and a header, as `--format=csv` prints it: the names carry units too.
  std::string text = ReadData("gtx1050-header-units.csv");
  std::string header = text.substr(0, text.find('\n'));
  std::string line = text.substr(header.size() + 1, text.find('\n', header.size() + 1) - header.size() - 1);
  std::vector<MetricPoint> points;
  CHECK_FALSE(ParseNvidiaSmiLine(line, header, 1, points));
  CHECK(points.empty());
  // The same line read as if GPU 3 had printed it (index prepended) parses, units and all.
  CHECK(ParseNvidiaSmiLine("3, " + line, "index, " + header, 1, points));
  auto m = ByName(points);
  CHECK(m.at("system/gpu3/util_pct") == 0);
  CHECK(m.at("system/gpu3/mem_used_gib") == Approx(2 / 1024.0));
  CHECK(m.at("system/gpu3/mem_total_gib") == Approx(4040 / 1024.0));
}

TEST_CASE("telemetry: the sampler's file gives node and GPU points keyed by the sample's time") {
  std::string file =
      "slurmsweep-telemetry 1 host=n1 interval=10\n"
      "node 1764790000 mem_total_kib=16777216 mem_avail_kib=8388608\n"
      "gpu 1764790000 2026/12/03 18:00:00.123, 0, 87, 30000, 81559, 350.12\n"
      "gpu 1764790000 2026/12/03 18:00:00.124, 1, 85, 29000, 81559, [N/A]\n"
      "node 1764790010 cpu_permille=125 mem_total_kib=16777216 mem_avail_kib=4194304\n"
      "gpu 1764790010 NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n"
      "node 17647900";  // being written
  TelemetryOutput o = ParseTelemetry(file);
  CHECK(o.consumed == file.rfind('\n') + 1);
  CHECK(o.malformed == 1);
  std::map<std::pair<std::string, int64_t>, double> got;
  for (const auto& p : o.points) {
    CHECK(p.time_s == static_cast<double>(p.step));
    got[{p.name, p.step}] = p.value;
  }
  CHECK(got.at({"system/node/mem_used_gib", 1764790000}) == 8);
  CHECK(got.at({"system/node/mem_total_gib", 1764790000}) == 16);
  CHECK(got.count({"system/node/cpu_pct", 1764790000}) == 0);  // the first sample has no delta
  CHECK(got.at({"system/node/cpu_pct", 1764790010}) == 12.5);
  CHECK(got.at({"system/node/mem_used_gib", 1764790010}) == 12);
  CHECK(got.at({"system/gpu0/util_pct", 1764790000}) == 87);
  CHECK(got.at({"system/gpu0/mem_used_gib", 1764790000}) == Approx(30000 / 1024.0));
  CHECK(got.at({"system/gpu0/power_w", 1764790000}) == Approx(350.12));
  CHECK(got.at({"system/gpu1/util_pct", 1764790000}) == 85);
  CHECK(got.count({"system/gpu1/power_w", 1764790000}) == 0);  // [N/A]: no point, no error
  CHECK(o.points.size() == 2 + 4 + 3 + 3);

  // Read in two pieces at any byte, the same points.
  for (size_t cut = 0; cut < file.size(); cut += 7) {
    TelemetryOutput a = ParseTelemetry(std::string_view(file).substr(0, cut));
    TelemetryOutput b = ParseTelemetry(std::string_view(file).substr(a.consumed));
    CHECK(a.points.size() + b.points.size() == o.points.size());
  }
}

TEST_CASE("telemetry: the header names the run that wrote the file; anything else names none") {
  auto h = ParseTelemetryHeader("slurmsweep-telemetry 1 host=n1 interval=10 job=123_4 restart=2\nnode 1 x\n");
  REQUIRE(h);
  CHECK(h->job_id == "123_4");
  CHECK(h->restart == 2);
  // A sampler from before the fields: a header that names no run.
  h = ParseTelemetryHeader("slurmsweep-telemetry 1 host=n1 interval=10\r\n");
  REQUIRE(h);
  CHECK(h->job_id.empty());
  CHECK(h->restart == 0);
  CHECK_FALSE(ParseTelemetryHeader("slurmsweep-telemetry 1 host=n1 interval=10 job=9 rest"));  // being written
  CHECK_FALSE(ParseTelemetryHeader(""));
  CHECK_FALSE(ParseTelemetryHeader("node 1764790000 mem_total_kib=1 mem_avail_kib=1\n"));
  CHECK_FALSE(ParseTelemetryHeader("slurmsweep-telemetry 1 job=9 restart=x\n"));
  // The samples' parser takes the new header as it took the old one.
  TelemetryOutput o = ParseTelemetry("slurmsweep-telemetry 1 host=n1 interval=10 job=9 restart=0\n");
  CHECK(o.malformed == 0);
}

}  // namespace
}  // namespace sweep::logs
