// Tests of SummarizeLog: counts, steps, time axis and malformed lines by number, from the run
// loop's parser.
#include "logs/log_summary.h"

#include <catch2/catch.hpp>

#include <algorithm>

namespace sweep::logs {
namespace {

TEST_CASE("a log summary names each metric, the steps, the time axis's key and malformed lines", "[logs]") {
  SECTION("megatron: the iteration time gives the axis; a malformed line is named by number") {
    LogSummary s = SummarizeLog(
        "banner\n"
        " iteration 10/ 100 | elapsed time per iteration (ms): 100.0 | lm loss: 3.0 |\n"
        " iteration 20/ 100 | lm loss: 1.2.3 |\n"
        " iteration 30/ 100 | elapsed time per iteration (ms): 100.0 | lm loss: 2.0 |\n",
        MetricFormat::kMegatron);
    CHECK(s.lines == 4);
    CHECK(s.malformed_lines == std::vector<int64_t>{3});
    CHECK(s.time_key == "elapsed time per iteration (ms)");
    CHECK(s.last_time_s == Approx(3.0));
    REQUIRE(s.first_step == 10);
    CHECK(s.last_step == 30);
    auto loss = std::find_if(s.metrics.begin(), s.metrics.end(), [](const auto& m) { return m.name == "lm_loss"; });
    REQUIRE(loss != s.metrics.end());
    CHECK(loss->count == 2);
    CHECK(loss->first_step == 10);
    CHECK(loss->last_step == 30);
    CHECK_FALSE(s.partial_last_line);
  }
  SECTION("jsonl without a time key: no axis; a line still being written is not read") {
    LogSummary s =
        SummarizeLog("{\"step\": 1, \"loss\": 2}\n{\"step\": 2, \"loss\": 1}\n{\"step\": 3,", MetricFormat::kJsonLines);
    CHECK(s.time_key.empty());
    CHECK(s.points == 2);
    CHECK(s.partial_last_line);
    CHECK(s.malformed_lines.empty());
  }
  SECTION("jsonl: the key that gave the time axis") {
    CHECK(SummarizeLog("{\"step\": 1, \"loss\": 2, \"time_s\": 4}\n", MetricFormat::kJsonLines).time_key == "time_s");
    CHECK(SummarizeLog("{\"step\": 1, \"loss\": 2, \"iteration_time\": 0.5}\n", MetricFormat::kJsonLines).time_key ==
          "iteration_time");
  }
}

}  // namespace
}  // namespace sweep::logs
