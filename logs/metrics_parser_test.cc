// Tests of the training-log parser: real Megatron-LM lines, JSON lines, and the chunk-boundary
// rules the monitor relies on (a line cut by a read is parsed exactly once, when whole).
#include "logs/metrics_parser.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace sweep::logs {
namespace {

constexpr std::string_view kRealLine =
    " [2024-09-03 15:56:55] iteration       20/  500000 | consumed samples:        20480 | elapsed time per "
    "iteration (ms): 12137.8 | throughput per GPU (TFLOP/s/GPU): 872.5 | learning rate: 6.976744E-07 | global "
    "batch size:  1024 | lm loss: 1.064275E+01 | loss scale: 262144.0 | grad norm: 47.021 | number of skipped "
    "iterations:   5 | number of nan iterations:   0 |\n";

std::map<std::string, double> ByName(const std::vector<MetricPoint>& points) {
  std::map<std::string, double> m;
  for (const MetricPoint& p : points) m[p.name] = p.value;
  return m;
}

std::vector<std::string> Names(const std::vector<MetricPoint>& points) {
  std::vector<std::string> names;
  for (const MetricPoint& p : points) names.push_back(p.name);
  return names;
}

ParseOutput ParseAll(std::string_view text, MetricFormat format = MetricFormat::kMegatron) {
  ParserState state;
  return ParseMetrics(text, format, state);
}

bool SamePoint(const MetricPoint& a, const MetricPoint& b) {
  auto same = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  return a.step == b.step && a.name == b.name && same(a.time_s, b.time_s) && same(a.value, b.value);
}

// What the monitor does: read from the consumed offset while the file grows by random amounts,
// at most `max_read` bytes at a time (which must exceed the longest line, or reach kMaxLineBytes).
struct Fed {
  std::vector<MetricPoint> points;
  size_t lines = 0, malformed = 0;
  ParserState state;
};
Fed FeedGrowing(std::string_view log, MetricFormat format, std::mt19937& rng, size_t max_growth, size_t max_read) {
  Fed fed;
  size_t offset = 0, file_size = 0;
  std::uniform_int_distribution<size_t> growth(0, max_growth);
  while (offset < log.size()) {
    file_size = std::min(log.size(), file_size + growth(rng));
    size_t n = std::min(file_size - offset, max_read);
    ParseOutput out = ParseMetrics(log.substr(offset, n), format, fed.state);
    REQUIRE(out.consumed <= n);
    offset += out.consumed;
    fed.points.insert(fed.points.end(), out.points.begin(), out.points.end());
    fed.lines += out.lines;
    fed.malformed += out.malformed;
    if (file_size == log.size() && out.consumed == 0) break;  // only an unterminated tail is left
  }
  return fed;
}

void RequireSameAsOneShot(std::string_view log, MetricFormat format, const Fed& fed) {
  ParserState state;
  ParseOutput whole = ParseMetrics(log, format, state);
  REQUIRE(fed.points.size() == whole.points.size());
  for (size_t i = 0; i < whole.points.size(); ++i) {
    INFO("point " << i << " " << whole.points[i].name);
    REQUIRE(SamePoint(fed.points[i], whole.points[i]));
  }
  REQUIRE(fed.lines == whole.lines);
  REQUIRE(fed.malformed == whole.malformed);
  REQUIRE(fed.state.last_step == state.last_step);
  REQUIRE(fed.state.time_s == state.time_s);
}

TEST_CASE("ParseMetricFormat knows megatron and jsonl", "[metrics_parser]") {
  MetricFormat f = MetricFormat::kMegatron;
  REQUIRE(ParseMetricFormat("jsonl", &f));
  REQUIRE(f == MetricFormat::kJsonLines);
  REQUIRE(ParseMetricFormat("megatron", &f));
  REQUIRE(f == MetricFormat::kMegatron);
  REQUIRE_FALSE(ParseMetricFormat("csv", &f));
  REQUIRE_FALSE(ParseMetricFormat("", &f));
}

TEST_CASE("the run's length in 'iteration N/ M' is given once, as train_iters", "[metrics_parser]") {
  ParserState state;
  std::string lines =
      "iteration       10/     100 | elapsed time per iteration (ms): 50.0 | lm loss: 2.5 |\n"
      "iteration       20/     100 | elapsed time per iteration (ms): 50.0 | lm loss: 2.4 |\n";
  ParseOutput out = ParseMetrics(lines, MetricFormat::kMegatron, state);
  REQUIRE(out.train_iters);
  CHECK(out.train_iters->name == "train_iters");
  CHECK(out.train_iters->step == 10);
  CHECK(out.train_iters->value == 100);
  CHECK(out.train_iters->time_s == Approx(0.5));
  // Not again for the same run; again if a chained job runs longer.
  CHECK_FALSE(ParseMetrics("iteration 30/ 100 | lm loss: 2.3 |\n", MetricFormat::kMegatron, state).train_iters);
  auto longer = ParseMetrics("iteration 40/ 200 | lm loss: 2.2 |\n", MetricFormat::kMegatron, state);
  REQUIRE(longer.train_iters);
  CHECK(longer.train_iters->value == 200);
  ParserState fresh;
  CHECK_FALSE(ParseMetrics("iteration 10 | lm loss: 2.5 |\n", MetricFormat::kMegatron, fresh).train_iters);
}

TEST_CASE("JSON lines: total_steps gives the run's length once, as train_iters, not as a metric", "[metrics_parser]") {
  // Issue 31: without it a JSON-lines trial's ETA was unknown until a first trial completed.
  ParserState state;
  ParseOutput out = ParseMetrics(
      "{\"step\": 10, \"time\": 1.5, \"loss\": 2.5, \"total_steps\": 300}\n"
      "{\"step\": 20, \"time\": 3.0, \"loss\": 2.4, \"total_steps\": 300}\n",
      MetricFormat::kJsonLines, state);
  REQUIRE(out.train_iters);
  CHECK(out.train_iters->name == "train_iters");
  CHECK(out.train_iters->step == 10);
  CHECK(out.train_iters->time_s == 1.5);
  CHECK(out.train_iters->value == 300);
  for (const auto& p : out.points) CHECK(p.name != "total_steps");
  CHECK(out.points.size() == 2);
  CHECK_FALSE(ParseMetrics("{\"step\": 30, \"loss\": 2.3, \"total_steps\": 300}\n", MetricFormat::kJsonLines, state)
                  .train_iters);
  auto longer = ParseMetrics("{\"step\": 40, \"loss\": 2.2, \"total_steps\": 600}\n", MetricFormat::kJsonLines, state);
  REQUIRE(longer.train_iters);
  CHECK(longer.train_iters->value == 600);
  ParserState fresh;
  CHECK_FALSE(
      ParseMetrics("{\"step\": 1, \"loss\": 2.5, \"total_steps\": -3}\n", MetricFormat::kJsonLines, fresh).train_iters);
}

TEST_CASE("a real Megatron-LM iteration line parses to its exact values", "[metrics_parser]") {
  ParserState state;
  ParseOutput out = ParseMetrics(kRealLine, MetricFormat::kMegatron, state);
  REQUIRE(out.consumed == kRealLine.size());
  REQUIRE(out.lines == 1);
  REQUIRE(out.malformed == 0);
  REQUIRE(Names(out.points) == std::vector<std::string>{"consumed_samples", "iter_time_ms", "throughput_tflops",
                                                        "learning_rate", "global_batch_size", "lm_loss", "loss_scale",
                                                        "grad_norm", "skipped_iters", "nan_iters"});
  auto m = ByName(out.points);
  REQUIRE(m["consumed_samples"] == 20480);
  REQUIRE(m["iter_time_ms"] == 12137.8);
  REQUIRE(m["throughput_tflops"] == 872.5);
  REQUIRE(m["learning_rate"] == 6.976744E-07);
  REQUIRE(m["global_batch_size"] == 1024);
  REQUIRE(m["lm_loss"] == 1.064275E+01);
  REQUIRE(m["loss_scale"] == 262144.0);
  REQUIRE(m["grad_norm"] == 47.021);
  REQUIRE(m["skipped_iters"] == 5);
  REQUIRE(m["nan_iters"] == 0);
  for (const MetricPoint& p : out.points) {
    REQUIRE(p.step == 20);
    REQUIRE(p.time_s == Approx(20 * 12.1378));
  }
  REQUIRE(state.last_step == 20);
  REQUIRE(state.time_s == Approx(242.756));
}

TEST_CASE("Megatron's memory report: per-rank lines give the peak of the ranks", "[metrics_parser]") {
  // As megatron/training/utils.py report_memory prints it after the first log interval, from
  // each tensor/pipeline rank that is data-parallel rank 0.
  std::string log = std::string(kRealLine) +
                    "[Rank 0] (after 20 iterations) memory (MB) | allocated: 20413.5 | max allocated: 61208.25 | "
                    "reserved: 63472.0 | max reserved: 63472.0\n"
                    "[Rank 4] (after 20 iterations) memory (MB) | allocated: 19000.0 | max allocated: 70111.5 | "
                    "reserved: 72000.0 | max reserved: 72004.0\n";
  ParserState state;
  ParseOutput out = ParseMetrics(log, MetricFormat::kMegatron, state);
  REQUIRE(out.malformed == 0);
  auto m = ByName(out.points);
  CHECK(m["mem_allocated_mb"] == 20413.5);
  CHECK(m["mem_max_allocated_mb"] == 70111.5);
  CHECK(m["mem_reserved_mb"] == 72000.0);
  CHECK(m["mem_max_reserved_mb"] == 72004.0);
  for (const MetricPoint& p : out.points) {
    CHECK(p.step == 20);
    CHECK(p.time_s == Approx(242.756));
  }
  CHECK(ParseAll("[Rank 0] (after 20 iterations) memory (MB) | allocated: lots |\n").malformed == 1);
}

TEST_CASE("Megatron fields in another order, without timestamp, or with extra losses", "[metrics_parser]") {
  SECTION("reordered, no timestamp") {
    auto out = ParseAll(
        " iteration      100/    1000 | lm loss: 2.500000E+00 | grad norm: 1.5 | learning rate: 3.0E-04 | "
        "elapsed time per iteration (ms): 250.0 | consumed samples: 800 |\n");
    REQUIRE(out.malformed == 0);
    REQUIRE(Names(out.points) ==
            std::vector<std::string>{"lm_loss", "grad_norm", "learning_rate", "iter_time_ms", "consumed_samples"});
    auto m = ByName(out.points);
    REQUIRE(m["lm_loss"] == 2.5);
    REQUIRE(m["learning_rate"] == 3.0e-4);
    REQUIRE(out.points[0].step == 100);
    REQUIRE(out.points[0].time_s == Approx(25.0));
  }
  SECTION("older Megatron without throughput, per-loss names and unknown fields") {
    auto out = ParseAll(
        "iteration 7/10 | elapsed time per iteration (ms): 100.0 | lm loss: 3.0E+00 | mtp_1 loss: 3.5E+00 | "
        "load_balancing_loss: 1.0E-02 | params norm: 250.1 | num zeros: 0.0 | consumed tokens: 57344 |\r\n");
    REQUIRE(out.malformed == 0);
    auto m = ByName(out.points);
    REQUIRE(m.size() == 7);
    REQUIRE(m["mtp_1_loss"] == 3.5);
    REQUIRE(m["load_balancing_loss"] == 0.01);
    REQUIRE(m["params_norm"] == 250.1);
    REQUIRE(m["num_zeros"] == 0);
    REQUIRE(m["consumed_tokens"] == 57344);
    REQUIRE_FALSE(m.count("throughput_tflops"));
  }
  SECTION("field order changing between lines of one chunk, and more keys than are cached") {
    std::string log =
        "iteration 1/ 9 | lm loss: 1.0 | grad norm: 2.0 |\niteration 2/ 9 | grad norm: 3.0 | lm loss: 4.0 |\n";
    log += "iteration 3/ 9 |";
    for (int i = 0; i < 100; ++i) log += " key " + std::to_string(i) + ": " + std::to_string(i) + " |";
    log += "\niteration 4/ 9 | grad norm: 5.0 | lm loss: 6.0 | key 99: 7 |\n";
    auto out = ParseAll(log);
    REQUIRE(out.malformed == 0);
    REQUIRE(out.points.size() == 107);
    REQUIRE(out.points[2].name == "grad_norm");
    REQUIRE(out.points[2].value == 3.0);
    REQUIRE(out.points[3].name == "lm_loss");
    for (int i = 0; i < 100; ++i) {
      REQUIRE(out.points[4 + i].name == "key_" + std::to_string(i));
      REQUIRE(out.points[4 + i].value == i);
    }
    REQUIRE(Names(std::vector<MetricPoint>(out.points.begin() + 104, out.points.end())) ==
            std::vector<std::string>{"grad_norm", "lm_loss", "key_99"});
  }
  SECTION("srun --label rank prefix") {
    auto out = ParseAll("0:  [2024-09-03 15:56:55] iteration 5/ 10 | lm loss: 4.0 |\n");
    REQUIRE(out.points.size() == 1);
    REQUIRE(out.points[0].step == 5);
  }
  SECTION("validation lines") {
    ParserState state;
    std::string log =
        std::string(" iteration      100/    1000 | elapsed time per iteration (ms): 10.0 | lm loss: 2.4 |\n") +
        " validation loss at iteration 100 | lm loss value: 2.300000E+00 | lm loss PPL: 9.974182E+00 | \n" +
        " validation loss at the end of training for val data | lm loss value: 2.2 |\n";
    auto out = ParseMetrics(log, MetricFormat::kMegatron, state);
    REQUIRE(out.malformed == 0);
    REQUIRE(Names(out.points) == std::vector<std::string>{"iter_time_ms", "lm_loss", "val_lm_loss", "val_lm_loss_ppl"});
    REQUIRE(out.points[2].step == 100);
    REQUIRE(out.points[2].value == 2.3);
    REQUIRE(out.points[2].time_s == out.points[1].time_s);
  }
}

TEST_CASE("nan and inf losses become points, so divergence is seen", "[metrics_parser]") {
  auto out = ParseAll(
      "iteration 10/ 100 | elapsed time per iteration (ms): 100.0 | lm loss: nan | grad norm: inf |\n"
      "iteration 20/ 100 | elapsed time per iteration (ms): 100.0 | lm loss: NAN | grad norm: -INF |\n"
      "iteration 30/ 100 | lm loss: 1.5 | loss scale: +1.0 |\n");
  REQUIRE(out.malformed == 0);
  REQUIRE(out.points.size() == 8);
  REQUIRE(std::isnan(out.points[1].value));
  REQUIRE(std::isinf(out.points[2].value));
  REQUIRE(out.points[2].value > 0);
  REQUIRE(std::isnan(out.points[4].value));
  REQUIRE(out.points[5].value < 0);
  REQUIRE(std::isinf(out.points[5].value));
  REQUIRE(out.points[6].value == 1.5);
  REQUIRE(out.points[7].value == 1.0);
}

TEST_CASE("a number beyond a double's range (1e400) is refused, never stored as inf", "[metrics_parser]") {
  // Stored as inf, it made a completed trial whose objective was inf. A trainer that diverges prints
  // "inf"/"nan" (read above); 1e400 is no double it computed.
  auto megatron = ParseAll(
      "iteration 10/ 100 | lm loss: 2.5 |\n"
      "iteration 20/ 100 | lm loss: 1E+400 |\n"
      "iteration 30/ 100 | lm loss: -1e400 |\n"
      "iteration 40/ 100 | lm loss: 1e-400 |\n");
  CHECK(megatron.malformed == 2);
  REQUIRE(megatron.points.size() == 2);
  CHECK(megatron.points[0].value == 2.5);
  CHECK(megatron.points[1].value == 0);  // below the smallest double: 0, a value all the same
  // JSON: nlohmann refuses the number, so the line is malformed, its other values with it.
  auto json = ParseAll(R"({"step": 1, "loss": 1e400, "acc": 0.5})"
                       "\n",
                       MetricFormat::kJsonLines);
  CHECK(json.malformed == 1);
  CHECK(json.points.empty());
  for (const MetricPoint& p : megatron.points) CHECK(std::isfinite(p.value));
}

TEST_CASE("malformed Megatron lines are counted and skipped, banners are not counted", "[metrics_parser]") {
  ParserState state;
  std::string log =
      "using world size: 8, data-parallel size: 8\n"
      "> building train, validation, and test datasets ...\n"
      "[after dataloaders are built] datetime: 2024-09-03 15:52:10\n"
      " iteration abc/ 10 | lm loss: 1.0 |\n"
      " iteration 10/ 100 | lm loss: 1.2.3 | elapsed time per iteration (ms): 1000.0 |\n"
      " iteration 11/ 100 junk | lm loss: 1.0 |\n"
      " iteration 12/ 100 | elapsed time per iteration (ms): abc |\n"
      " iteration 99999999999999999999/ 100 | lm loss: 1.0 |\n"
      "iterations: 5 | of something\n"
      "(min, max) time across ranks (ms):\n"
      "    evaluate .......................................: (3.2, 3.5)\n"
      " iteration 13/ 100 | lm loss: 1.5 | dtype: bf16 |\n";
  auto out = ParseMetrics(log, MetricFormat::kMegatron, state);
  REQUIRE(out.lines == 12);
  REQUIRE(out.malformed == 5);
  REQUIRE(out.points.size() == 1);  // the text field of the last line is ignored, not fatal
  REQUIRE(out.points[0].step == 13);
  REQUIRE(out.points[0].name == "lm_loss");
  REQUIRE(state.last_step == 0);  // no malformed line moved the time axis
  REQUIRE(state.time_s == 0);
}

TEST_CASE("the time axis accumulates across chunks and log intervals", "[metrics_parser]") {
  ParserState state;
  auto a = ParseMetrics(
      "iteration 10/ 100 | elapsed time per iteration (ms): 100.0 | lm loss: 3.0 |\n"
      "iteration 20/ 100 | elapsed time per iteration (ms): 200.0 | lm loss: 2.0 |\n",
      MetricFormat::kMegatron, state);
  REQUIRE(a.points[1].time_s == Approx(1.0));
  REQUIRE(a.points[3].time_s == Approx(3.0));
  REQUIRE(state.last_step == 20);
  REQUIRE(state.time_s == Approx(3.0));

  // A line without an iteration time keeps the last known time and leaves the gap to the next.
  auto b = ParseMetrics(
      "iteration 30/ 100 | lm loss: 1.5 |\n"
      "iteration 40/ 100 | elapsed time per iteration (ms): 50.0 | lm loss: 1.0 |\n",
      MetricFormat::kMegatron, state);
  REQUIRE(b.points[0].time_s == Approx(3.0));
  REQUIRE(b.points[1].step == 40);
  REQUIRE(b.points[1].time_s == Approx(4.0));

  // A resumed run re-logs old steps: the axis does not run backwards.
  auto c =
      ParseMetrics("iteration 35/ 100 | elapsed time per iteration (ms): 50.0 |\n", MetricFormat::kMegatron, state);
  REQUIRE(c.points[0].time_s == Approx(4.0));

  // A restarted orchestrator resumes from the saved state.
  ParserState resumed;
  resumed.last_step = 40;
  resumed.time_s = 4.0;
  auto d =
      ParseMetrics("iteration 50/ 100 | elapsed time per iteration (ms): 100.0 |\n", MetricFormat::kMegatron, resumed);
  REQUIRE(d.points[0].time_s == Approx(5.0));
}

TEST_CASE("a truncated last line is consumed only once it is complete", "[metrics_parser]") {
  std::string line(kRealLine);
  size_t cut = line.find("lm loss") + 4;
  ParserState state;
  auto first = ParseMetrics(std::string("banner\n") + line.substr(0, cut), MetricFormat::kMegatron, state);
  REQUIRE(first.consumed == 7);
  REQUIRE(first.points.empty());
  REQUIRE(first.lines == 1);
  auto second = ParseMetrics(line, MetricFormat::kMegatron, state);
  REQUIRE(second.consumed == line.size());
  REQUIRE(second.points.size() == 10);
  auto none = ParseMetrics("", MetricFormat::kMegatron, state);
  REQUIRE(none.consumed == 0);
  REQUIRE(none.lines == 0);
}

std::string MixedMegatronLog() {
  std::string log = "> initializing torch distributed ...\n[2024-09-03 15:50:00] training ...\r\n";
  for (int step = 10; step <= 300; step += 10) {
    log += " [2024-09-03 15:56:55] iteration " + std::to_string(step) +
           "/     300 | consumed samples: " + std::to_string(step * 8) +
           " | elapsed time per iteration (ms): " + std::to_string(100 + step) +
           ".5 | lm loss: " + (step == 200 ? std::string("nan") : std::to_string(10.0 / step)) +
           " | grad norm: 1.25 |\r\n";
    if (step % 100 == 0) log += " validation loss at iteration " + std::to_string(step) + " | lm loss value: 2.0 |\n";
    if (step == 150) log += " iteration 1.5/ 300 | lm loss: x |\n";
  }
  return log + " iteration 310/ 300 | lm loss: 0.1";  // the writer is mid-line
}

TEST_CASE("any split of a log gives the same points as one-shot parsing", "[metrics_parser]") {
  const std::string log = MixedMegatronLog();
  SECTION("every two-piece split") {
    ParserState whole_state;
    ParseOutput whole = ParseMetrics(log, MetricFormat::kMegatron, whole_state);
    REQUIRE(whole.malformed == 1);
    REQUIRE(whole.consumed < log.size());
    for (size_t cut = 0; cut <= log.size(); ++cut) {
      ParserState state;
      ParseOutput a = ParseMetrics(std::string_view(log).substr(0, cut), MetricFormat::kMegatron, state);
      ParseOutput b = ParseMetrics(std::string_view(log).substr(a.consumed), MetricFormat::kMegatron, state);
      REQUIRE(a.consumed + b.consumed == whole.consumed);
      REQUIRE(a.points.size() + b.points.size() == whole.points.size());
      REQUIRE(a.malformed + b.malformed == whole.malformed);
      for (size_t i = 0; i < whole.points.size(); ++i) {
        const MetricPoint& p = i < a.points.size() ? a.points[i] : b.points[i - a.points.size()];
        REQUIRE(SamePoint(p, whole.points[i]));
      }
    }
  }
  SECTION("random growth and read sizes") {
    std::mt19937 rng(42);
    for (int trial = 0; trial < 200; ++trial) {
      Fed fed = FeedGrowing(log, MetricFormat::kMegatron, rng, 1 + trial * 3, 200 + trial * 50);
      RequireSameAsOneShot(log, MetricFormat::kMegatron, fed);
    }
  }
}

TEST_CASE("over-long lines are skipped and counted, also across chunks", "[metrics_parser]") {
  std::string big = " iteration 5/ 10 | lm loss: 1.0 | note: " + std::string(2 << 20, 'x') + " |\n";
  std::string log = "iteration 1/ 10 | lm loss: 2.0 |\n" + big + "iteration 9/ 10 | lm loss: 3.0 |\n";
  SECTION("in one chunk") {
    auto out = ParseAll(log);
    REQUIRE(out.lines == 3);
    REQUIRE(out.malformed == 1);
    REQUIRE(Names(out.points) == std::vector<std::string>{"lm_loss", "lm_loss"});
    REQUIRE(out.points[1].step == 9);
  }
  SECTION("a chunk with no newline at all is consumed, its tail dropped next time") {
    ParserState state;
    auto head = ParseMetrics(std::string_view(big).substr(0, kMaxLineBytes), MetricFormat::kMegatron, state);
    REQUIRE(head.consumed == kMaxLineBytes);
    REQUIRE(head.malformed == 1);
    REQUIRE(state.skipping_long_line);
    auto middle = ParseMetrics(std::string_view(big).substr(kMaxLineBytes, 1000), MetricFormat::kMegatron, state);
    REQUIRE(middle.consumed == 1000);
    REQUIRE(middle.malformed == 0);
    std::string rest = big.substr(kMaxLineBytes + 1000) + "iteration 9/ 10 | lm loss: 3.0 |\n";
    auto tail = ParseMetrics(rest, MetricFormat::kMegatron, state);
    REQUIRE_FALSE(state.skipping_long_line);
    REQUIRE(tail.consumed == rest.size());
    REQUIRE(tail.malformed == 0);
    REQUIRE(tail.points.size() == 1);
    REQUIRE(tail.points[0].step == 9);
  }
  SECTION("a line of exactly kMaxLineBytes with its newline still fits") {
    std::string fits = "iteration 3/ 10 | lm loss: 1.0 |";
    fits += std::string(kMaxLineBytes - 1 - fits.size(), ' ') + "\n";
    REQUIRE(fits.size() == kMaxLineBytes);
    auto out = ParseAll(fits);
    REQUIRE(out.malformed == 0);
    REQUIRE(out.points.size() == 1);
    auto over = ParseAll(" " + fits);
    REQUIRE(over.malformed == 1);
    REQUIRE(over.points.empty());
  }
  SECTION("reads capped at kMaxLineBytes always make progress and agree with one-shot") {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 3; ++trial) {
      Fed fed = FeedGrowing(log, MetricFormat::kMegatron, rng, 700000, kMaxLineBytes);
      RequireSameAsOneShot(log, MetricFormat::kMegatron, fed);
    }
  }
}

TEST_CASE("binary garbage with NUL bytes never crashes", "[metrics_parser]") {
  std::mt19937 rng(1234);
  const std::string_view alphabet[] = {"iteration ",
                                       "validation loss at iteration ",
                                       "|",
                                       ":",
                                       "/",
                                       " ",
                                       "\n",
                                       "\r",
                                       std::string_view("\0", 1),
                                       "nan",
                                       "1e5",
                                       "{",
                                       "}",
                                       "\"step\"",
                                       "[",
                                       "]",
                                       "-"};
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_int_distribution<size_t> pick(0, std::size(alphabet) - 1);
  for (int trial = 0; trial < 300; ++trial) {
    std::string junk;
    while (junk.size() < 4000) {
      if (byte(rng) < 128) {
        junk.push_back(static_cast<char>(byte(rng)));
      } else {
        junk.append(alphabet[pick(rng)]);
      }
    }
    for (MetricFormat format : {MetricFormat::kMegatron, MetricFormat::kJsonLines}) {
      ParserState state;
      auto out = ParseMetrics(junk, format, state);
      REQUIRE(out.consumed <= junk.size());
      REQUIRE(out.malformed <= out.lines);
    }
  }
  constexpr char kNuls[] = "iteration 1/ 2 | lm loss: 1.0\0\0 |\n\0\0\0\n";
  std::string nuls(kNuls, sizeof(kNuls) - 1);
  auto out = ParseAll(nuls);
  REQUIRE(out.consumed == nuls.size());
  REQUIRE(out.lines == 2);
  REQUIRE(out.malformed == 1);
}

TEST_CASE("JSON lines: steps, nested metrics, time axis", "[metrics_parser]") {
  ParserState state;
  std::string log =
      "starting training\n"
      R"({"step": 10, "loss": 2.5, "lr": 0.001, "opt": {"beta": 0.9, "m": {"x": 1}}, "tag": "a", "ok": true, "v": [1]})"
      "\n"
      R"({"iteration": 20, "loss": 2.0, "time": 12.5})"
      "\r\n"
      R"({"iter": 30, "loss": 1.5, "iter_time_ms": 250})"
      "\n"
      R"({"step": 40.0, "loss": 1.25, "iteration_time": 0.5})"
      "\n"
      R"({"step": 50, "loss": 1.0})"
      "\n";
  auto out = ParseMetrics(log, MetricFormat::kJsonLines, state);
  REQUIRE(out.malformed == 0);
  REQUIRE(out.lines == 6);
  std::vector<MetricPoint> at10(out.points.begin(), out.points.begin() + 4);
  REQUIRE(Names(at10) == std::vector<std::string>{"loss", "lr", "opt.beta", "opt.m.x"});
  auto m = ByName(at10);
  REQUIRE(m["loss"] == 2.5);
  REQUIRE(m["opt.m.x"] == 1);
  for (const MetricPoint& p : at10) REQUIRE(p.time_s == 0);

  auto find = [&](int64_t step, std::string_view name) {
    for (const MetricPoint& p : out.points) {
      if (p.step == step && p.name == name) return p;
    }
    FAIL("no point " << name << " at step " << step);
    return MetricPoint{};
  };
  REQUIRE(find(20, "loss").time_s == 12.5);
  REQUIRE(find(30, "loss").time_s == Approx(12.5 + 10 * 0.25));
  REQUIRE(find(30, "iter_time_ms").value == 250);
  REQUIRE(find(40, "loss").time_s == Approx(15.0 + 10 * 0.5));
  REQUIRE(find(50, "loss").time_s == Approx(20.0));
  REQUIRE(state.last_step == 40);
  REQUIRE(state.time_s == Approx(20.0));
}

TEST_CASE("JSON lines: non-finite values, malformed and foreign lines", "[metrics_parser]") {
  std::string log =
      R"({"step": 1, "loss": NaN, "grad_norm": Infinity, "x": -Infinity, "note": "NaN in text stays text: NaN"})"
      "\n"
      R"({"step": 2, "loss": "nan"})"
      "\n"
      "{not json\n"
      R"({"step": "abc", "loss": 1})"
      "\n"
      R"({"step": -3, "loss": 1})"
      "\n"
      R"({"step": 4, "loss": 1)"
      "\n"
      "[1, 2, 3]\n"
      R"({"event": "checkpoint saved"})"
      "\n"
      "Traceback (most recent call last):\n";
  auto out = ParseAll(log, MetricFormat::kJsonLines);
  REQUIRE(out.lines == 9);
  REQUIRE(out.malformed == 4);
  REQUIRE(Names(out.points) == std::vector<std::string>{"grad_norm", "loss", "x", "loss"});
  REQUIRE(std::isinf(out.points[0].value));
  REQUIRE(std::isnan(out.points[1].value));
  REQUIRE(out.points[2].value < 0);
  REQUIRE(std::isnan(out.points[3].value));

  std::mt19937 rng(3);
  for (int trial = 0; trial < 100; ++trial) {
    Fed fed = FeedGrowing(log, MetricFormat::kJsonLines, rng, 1 + trial, 128 + trial * 4);
    RequireSameAsOneShot(log, MetricFormat::kJsonLines, fed);
  }
}

TEST_CASE("a metric name of control bytes, invalid UTF-8 or over 128 bytes is not stored; its line is malformed",
          "[parser]") {
  for (const std::string& key : {std::string(5000, 'k'), std::string("lm\\u0000loss"), std::string("a\\u001bb")}) {
    ParserState state;
    ParseOutput out =
        ParseMetrics("{\"step\": 3, \"" + key + "\": 1.5, \"lm_loss\": 2.0}\n", MetricFormat::kJsonLines, state);
    INFO(key.substr(0, 20));
    CHECK(out.malformed == 1);
    REQUIRE(out.points.size() == 1);
    CHECK(out.points[0].name == "lm_loss");
  }
  ParserState state;
  std::string name(kMaxMetricNameBytes, 'm');
  ParseOutput ok = ParseMetrics("{\"step\": 3, \"" + name + "\": 1.5}\n", MetricFormat::kJsonLines, state);
  CHECK(ok.malformed == 0);
  REQUIRE(ok.points.size() == 1);  // exactly at the limit: stored as logged
  CHECK(ok.points[0].name == name);
  CHECK(IsStorableMetricName("val.lm_loss"));
  CHECK(IsStorableMetricName("perte_\xC3\xA9val"));
  CHECK_FALSE(IsStorableMetricName(""));
  CHECK_FALSE(IsStorableMetricName("a\tb"));
}

}  // namespace
}  // namespace sweep::logs
