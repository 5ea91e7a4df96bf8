// Tests of failure classification: what a failed trial's reason says of its log.
#include "logs/classify.h"

#include <catch2/catch.hpp>

namespace sweep::logs {
namespace {

std::string FailedReason(std::string_view tail) {
  std::string state = "failed", reason = "exit code 3";
  ClassifyFromLog(tail, std::nullopt, state, reason);
  CHECK(state == "failed");
  return reason;
}

TEST_CASE("a failed trial's reason carries its log's last non-empty line", "[classify]") {
  // No line says "error": the exit code alone told nothing.
  CHECK(FailedReason("starting\nmissing data file /data/train.bin\n\n  \n") ==
        "exit code 3: missing data file /data/train.bin");
  // A Python traceback: the exception's message, not the "Traceback (most recent call last):" header.
  CHECK(FailedReason("Traceback (most recent call last):\n  File \"t.py\", line 3, in <module>\n"
                     "ValueError: lr must be positive\n") == "exit code 3: ValueError: lr must be positive");
  // Slurm's own last words are not the program's.
  CHECK(FailedReason("boom: cannot open config\nsrun: error: n1: task 0: Exited with exit code 3\n") ==
        "exit code 3: boom: cannot open config");
  // An error line above the last line: both, the error first.
  CHECK(FailedReason("RuntimeError: NCCL timeout\nshutting down workers\n") ==
        "exit code 3: RuntimeError: NCCL timeout; last line: shutting down workers");
  CHECK(FailedReason("") == "exit code 3");
}

TEST_CASE("LastLogLines: the last non-empty lines, oldest first, a partial last line included", "[classify]") {
  CHECK(LastLogLines("a\n\nb\r\nc", 2) == std::vector<std::string>{"b", "c"});
  CHECK(LastLogLines("a\nb\n", 5) == std::vector<std::string>{"a", "b"});
  CHECK(LastLogLines("\n\n", 3).empty());
  CHECK(LastLogLines(std::string(300, 'x') + "\n", 1)[0].size() == 200);
}

}  // namespace
}  // namespace sweep::logs
