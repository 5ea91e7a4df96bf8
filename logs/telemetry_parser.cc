// The telemetry file's parser; see telemetry_parser.h.
#include "logs/telemetry_parser.h"

#include <fmt/format.h>

#include <charconv>
#include <optional>

#include "base/telemetry.h"
#include "logs/parse_util.h"

namespace sweep::logs {
namespace {

constexpr double kKibPerGib = 1024.0 * 1024.0;
constexpr double kMibPerGib = 1024.0;

std::vector<std::string_view> SplitCommas(std::string_view s) {
  std::vector<std::string_view> out;
  while (true) {
    size_t comma = s.find(',');
    out.push_back(Trim(s.substr(0, comma)));
    if (comma == std::string_view::npos) return out;
    s.remove_prefix(comma + 1);
  }
}

enum class Field { kOther, kIndex, kUtil, kMemUsed, kMemTotal, kPower };

Field FieldOf(std::string_view name) {
  // A header line's names carry units ("memory.used [MiB]"); the query's do not.
  name = Trim(name.substr(0, name.find(" [")));
  if (name == "index") return Field::kIndex;
  if (name == "utilization.gpu") return Field::kUtil;
  if (name == "memory.used") return Field::kMemUsed;
  if (name == "memory.total") return Field::kMemTotal;
  if (name == "power.draw") return Field::kPower;
  return Field::kOther;
}

// A value as nvidia-smi prints it: "87", "87 %", "30000 MiB", "350.12 W"; nullopt for "[N/A]",
// "[Not Supported]" and the like, which are not errors; false for text that is neither.
bool ParseValue(std::string_view v, std::optional<double>* out) {
  if (v.empty() || v.front() == '[' || v == "N/A") {
    out->reset();
    return true;
  }
  size_t space = v.find(' ');
  if (space != std::string_view::npos) {
    std::string_view unit = Trim(v.substr(space));
    if (unit != "%" && unit != "MiB" && unit != "W") return false;
    v = v.substr(0, space);
  }
  double d = 0;
  if (!ParseDouble(v, &d)) return false;
  *out = d;
  return true;
}

// "cpu_permille=125 mem_total_kib=16384000 mem_avail_kib=9000000": the node's points.
bool ParseNodeFields(std::string_view rest, int64_t t, std::vector<MetricPoint>& out) {
  std::optional<double> cpu, total, avail;
  while (!(rest = SkipSpaces(rest)).empty()) {
    size_t end = rest.find(' ');
    std::string_view kv = rest.substr(0, end);
    rest = end == std::string_view::npos ? std::string_view() : rest.substr(end);
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) return false;
    std::string_view key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (value.empty()) continue;  // /proc/meminfo without the field (old kernels, not Linux)
    double d = 0;
    if (!ParseDouble(value, &d)) return false;
    if (key == "cpu_permille") cpu = d;
    else if (key == "mem_total_kib") total = d;
    else if (key == "mem_avail_kib") avail = d;
  }
  double ts = static_cast<double>(t);
  if (cpu) out.push_back({t, ts, "system/node/cpu_pct", *cpu / 10.0});
  if (total && avail) out.push_back({t, ts, "system/node/mem_used_gib", (*total - *avail) / kKibPerGib});
  if (total) out.push_back({t, ts, "system/node/mem_total_gib", *total / kKibPerGib});
  return true;
}

}  // namespace

bool ParseNvidiaSmiLine(std::string_view line, std::string_view query, int64_t unix_s, std::vector<MetricPoint>& out) {
  std::vector<std::string_view> names = SplitCommas(query);
  std::vector<std::string_view> cols = SplitCommas(Trim(line));
  if (cols.size() < names.size()) return false;
  std::optional<int64_t> index;
  struct Value {
    const char* metric;
    double scale;
    std::optional<double> v;
  };
  std::vector<Value> values;
  for (size_t i = 0; i < names.size(); ++i) {
    Field f = FieldOf(names[i]);
    if (f == Field::kOther) continue;
    if (f == Field::kIndex) {
      int64_t n = 0;
      std::string_view s = cols[i];
      if (!ConsumeInt(s, &n) || !s.empty()) return false;
      index = n;
      continue;
    }
    Value v{f == Field::kUtil       ? "util_pct"
            : f == Field::kMemUsed  ? "mem_used_gib"
            : f == Field::kMemTotal ? "mem_total_gib"
                                    : "power_w",
            f == Field::kMemUsed || f == Field::kMemTotal ? 1.0 / kMibPerGib : 1.0, std::nullopt};
    if (!ParseValue(cols[i], &v.v)) return false;
    values.push_back(v);
  }
  if (!index) return false;
  double ts = static_cast<double>(unix_s);
  for (const Value& v : values) {
    if (v.v) out.push_back({unix_s, ts, fmt::format("system/gpu{}/{}", *index, v.metric), *v.v * v.scale});
  }
  return true;
}

std::optional<TelemetryHeader> ParseTelemetryHeader(std::string_view chunk) {
  size_t nl = chunk.find('\n');
  if (nl == std::string_view::npos) return std::nullopt;
  std::string_view line = chunk.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.substr(0, 21) != "slurmsweep-telemetry ") return std::nullopt;
  TelemetryHeader h;
  std::string_view rest = line.substr(21);
  while (!rest.empty()) {
    size_t sp = rest.find(' ');
    std::string_view tok = rest.substr(0, sp);
    rest = sp == std::string_view::npos ? std::string_view() : rest.substr(sp + 1);
    if (tok.substr(0, 4) == "job=") h.job_id = std::string(tok.substr(4));
    if (tok.substr(0, 8) == "restart=") {
      std::string_view r = tok.substr(8);
      auto [p, ec] = std::from_chars(r.data(), r.data() + r.size(), h.restart);
      if (ec != std::errc() || p != r.data() + r.size()) return std::nullopt;
    }
  }
  return h;
}

TelemetryOutput ParseTelemetry(std::string_view chunk) {
  TelemetryOutput o;
  while (true) {
    size_t nl = chunk.find('\n', o.consumed);
    if (nl == std::string_view::npos) break;
    std::string_view line = chunk.substr(o.consumed, nl - o.consumed);
    o.consumed = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;
    if (line.substr(0, 21) == "slurmsweep-telemetry ") {
      if (Trim(line.substr(21)).substr(0, 2) != "1 " && Trim(line.substr(21)) != "1") ++o.malformed;
      continue;
    }
    bool gpu = line.substr(0, 4) == "gpu ";
    bool node = line.substr(0, 5) == "node ";
    if (!gpu && !node) {
      ++o.malformed;
      continue;
    }
    std::string_view rest = line.substr(gpu ? 4 : 5);
    int64_t t = 0;
    if (!ConsumeInt(rest, &t) || (!rest.empty() && rest.front() != ' ')) {
      ++o.malformed;
      continue;
    }
    size_t before = o.points.size();
    bool ok = gpu ? ParseNvidiaSmiLine(rest, kGpuQuery, t, o.points) : ParseNodeFields(rest, t, o.points);
    if (!ok) {
      o.points.resize(before);
      ++o.malformed;
    }
  }
  return o;
}

}  // namespace sweep::logs
