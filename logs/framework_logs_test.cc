// Tests of the framework log formats on real lines (tests/data/frameworks/, provenance in its
// SOURCE.md): Hugging Face Trainer, Lightning / NeMo, torchtitan, DeepSpeed, the study's regular
// expressions, and "auto".
#include <catch2/catch.hpp>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "logs/log_summary.h"
#include "logs/metrics_parser.h"

namespace sweep::logs {
namespace {

std::string ReadData(const std::string& name) {
  std::ifstream in(std::string(SLURMSWEEP_SOURCE_DIR) + "/tests/data/frameworks/" + name, std::ios::binary);
  REQUIRE(in.good());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// (name, step) -> value, and (name, step) -> time.
struct Points {
  std::map<std::pair<std::string, int64_t>, double> value, time;
  size_t count = 0, malformed = 0;
  std::string time_key;
  ParserState state;
};

Points Parse(std::string_view text, const LogFormat& format) {
  Points p;
  ParseOutput out = ParseMetrics(text, format, p.state);
  for (const MetricPoint& m : out.points) {
    p.value[{m.name, m.step}] = m.value;
    p.time[{m.name, m.step}] = m.time_s;
  }
  p.count = out.points.size();
  p.malformed = out.malformed;
  p.time_key = std::string(out.time_key);
  return p;
}

TEST_CASE("Hugging Face Trainer: dicts after the bar take its step and elapsed time; eval and summary too",
          "[logs][frameworks]") {
  Points p = Parse(ReadData("hf_trainer.log"), MetricFormat::kHuggingFace);
  CHECK(p.malformed == 0);
  CHECK(p.value.at({"loss", 500}) == Approx(0.3907));
  CHECK(p.value.at({"grad_norm", 500}) == Approx(7.779932022094727));
  CHECK(p.value.at({"learning_rate", 500}) == Approx(1.2734082397003748e-06));
  CHECK(p.time.at({"loss", 500}) == 61);  // [01:01<...]
  // The summary follows a bar at 533 (the checkpoint warning cut it); the evaluation bar (67/67)
  // has another total and does not move the step: both land at the training bar's last step.
  CHECK(p.value.at({"train_loss", 533}) == Approx(0.38717623864220324));
  CHECK(p.value.at({"eval_loss", 534}) == Approx(0.37901827692985535));
  CHECK(p.time.at({"eval_loss", 534}) == 66);
  CHECK(p.time_key == "progress bar elapsed");
}

TEST_CASE("Hugging Face Trainer: steps of a long run, and values printed as strings", "[logs][frameworks]") {
  Points p = Parse(ReadData("hf_trainer_translation.log"), MetricFormat::kHuggingFace);
  CHECK(p.value.at({"loss", 500}) == Approx(1.6771));
  CHECK(p.value.at({"loss", 1000}) == Approx(1.5235));
  CHECK(p.time.at({"loss", 1000}) == 180);
  Points s = Parse(ReadData("hf_trainer_strings.log"), MetricFormat::kHuggingFace);
  CHECK(s.malformed == 0);
  CHECK(s.value.at({"loss", 1272}) == Approx(1.178));
  CHECK(s.value.at({"num_tokens", 1272}) == Approx(1.858e5));
  CHECK(s.value.at({"eval_loss", 1272}) == Approx(1.137));
  CHECK(s.time.at({"loss", 1272}) == 12 * 60 + 39);
}

TEST_CASE("Hugging Face Trainer: in a Slurm log the bar redraws with carriage returns; no bar counts records",
          "[logs][frameworks]") {
  // The real lines of hf_trainer_translation.log as tqdm writes them to a file: redraws joined by '\r'.
  std::string log =
      " 30%|##9       | 499/1689 [01:30<03:29,  5.68it/s]\r 30%|##9       | 500/1689 [01:30<03:29,  5.68it/s]"
      "{'loss': 1.6771, 'learning_rate': 7.039668442865602e-06, 'epoch': 0.89}\n"
      "\r 30%|##9       | 501/1689 [01:31<03:29,  5.68it/s]\r 59%|#####9    | 1000/1689 [03:00<01:57,  5.87it/s]"
      "{'loss': 1.5235, 'learning_rate': 4.079336885731202e-06, 'epoch': 1.78}\n";
  Points p = Parse(log, MetricFormat::kHuggingFace);
  CHECK(p.value.at({"loss", 500}) == Approx(1.6771));
  CHECK(p.value.at({"loss", 1000}) == Approx(1.5235));
  // disable_tqdm=True: PrinterCallback prints the dicts alone.
  Points q = Parse(
      "{'loss': 2.41, 'learning_rate': 1.9e-04, 'epoch': 0.3}\n{'eval_loss': 0.62, 'epoch': 1.0}\n"
      "{'loss': 1.62, 'learning_rate': 1.6e-04, 'epoch': 0.9}\n",
      MetricFormat::kHuggingFace);
  CHECK(q.value.at({"loss", 1}) == Approx(2.41));
  CHECK(q.value.at({"eval_loss", 1}) == Approx(0.62));
  CHECK(q.value.at({"loss", 2}) == Approx(1.62));
  CHECK(q.time_key.empty());
  // A dict that does not parse is counted, not guessed at.
  CHECK(Parse("{'loss': 2.41, 'epoch': \n", MetricFormat::kHuggingFace).malformed == 1);
}

TEST_CASE("Lightning / NeMo progress bars: postfix metrics, NeMo's global_step, elapsed time", "[logs][frameworks]") {
  Points p = Parse(ReadData("nemo_lightning_bar.log"), MetricFormat::kLightning);
  CHECK(p.malformed == 0);
  CHECK(p.value.at({"reduced_train_loss", 188}) == Approx(7.56));
  CHECK(p.value.at({"loss", 189}) == Approx(7.74));
  CHECK(p.value.at({"consumed_samples", 189}) == 24192);
  CHECK(p.time.at({"loss", 189}) == 59 * 60 + 30);
  CHECK(p.value.count({"v_num", 189}) == 0);
  Points t = Parse(ReadData("nemo_lightning_bar_timing.log"), MetricFormat::kLightning);
  CHECK(t.value.at({"reduced_train_loss", 49}) == Approx(11.70));
  CHECK(t.value.at({"train_step_timing_in_s", 49}) == Approx(12.80));
  CHECK(t.time.at({"reduced_train_loss", 49}) == 16 * 60 + 26);
}

TEST_CASE("Lightning: a bar without a length, and epochs add up on the time axis", "[logs][frameworks]") {
  Points p = Parse(ReadData("lightning_unknown_total.log"), MetricFormat::kLightning);
  CHECK(p.value.at({"train_loss", 1}) == Approx(14.60));
  CHECK(p.value.at({"train_loss", 4}) == Approx(14.10));
  CHECK(p.time.at({"train_loss", 4}) == 69);
  Points v = Parse(ReadData("lightning_val.log"), MetricFormat::kLightning);
  CHECK(v.value.at({"train_acc", 86}) == Approx(0.281));
  // The epoch-end bar was cut by a callback's message mid-bracket: nothing half-read is stored.
  CHECK(v.value.count({"train_loss", 1563}) == 0);
  // Epoch 1 starts its own bar at 00:00: steps and time go on from epoch 0's end.
  std::string two_epochs =
      "Epoch 0: 100%|##########| 100/100 [00:10<00:00,  9.50it/s, v_num=0, train_loss=2.100]\n"
      "Epoch 1:  50%|#####     | 50/100 [00:04<00:04, 10.00it/s, v_num=0, train_loss=1.900, val_loss=2.300]\r"
      "Epoch 1:  50%|#####     | 50/100 [00:04<00:04, 10.00it/s, v_num=0, train_loss=1.900, val_loss=2.300]\n";
  Points e = Parse(two_epochs, MetricFormat::kLightning);
  CHECK(e.value.at({"train_loss", 150}) == Approx(1.9));
  CHECK(e.time.at({"train_loss", 150}) == 14);
  CHECK(e.count == 3);  // the redraw at step 150 adds nothing
}

TEST_CASE("NeMo 2: 'Training epoch E, iteration I/N | ...' lines, time from train_step_timing", "[logs][frameworks]") {
  Points p = Parse(ReadData("nemo2.log"), MetricFormat::kLightning);
  CHECK(p.malformed == 0);
  CHECK(p.value.at({"reduced_train_loss", 28}) == Approx(2.778));
  CHECK(p.value.at({"val_loss", 29}) == Approx(2.861));
  CHECK(p.value.at({"lr", 29}) == Approx(5.8e-06));
  CHECK(p.time.at({"reduced_train_loss", 29}) - p.time.at({"reduced_train_loss", 28}) == Approx(0.1903));
  CHECK(p.time_key == "train_step_timing in s");
}

TEST_CASE("torchtitan: step lines with units, thousands separators and colours; time from the line clock",
          "[logs][frameworks]") {
  Points p = Parse(ReadData("torchtitan.log"), MetricFormat::kTorchtitan);
  CHECK(p.malformed == 0);
  CHECK(p.value.at({"loss", 1}) == Approx(12.2254));
  CHECK(p.value.at({"loss", 10}) == Approx(10.7069));
  CHECK(p.value.at({"memory_gib", 10}) == Approx(30.99));
  CHECK(p.value.at({"memory_pct", 10}) == Approx(32.62));
  CHECK(p.value.at({"tps", 10}) == 7034);
  CHECK(p.value.at({"mfu_pct", 10}) == Approx(41.19));
  CHECK(p.time.at({"loss", 1}) == 0);
  CHECK(p.time.at({"loss", 10}) == Approx(10.483));
  CHECK(p.time_key == "log timestamp");
  Points g = Parse(ReadData("torchtitan_gradnorm.log"), MetricFormat::kTorchtitan);
  CHECK(g.count == 7);
  CHECK(g.value.at({"grad_norm", 1}) == Approx(1.4604));
  // Colour codes as torchtitan prints them by default (the same line, coloured as its logger does).
  Points c = Parse(
      "[rank0]:[titan] 2025-06-04 08:51:58,557 - root - INFO - \x1b[31mstep: 10  \x1b[32mloss: 10.7069  "
      "\x1b[33mmemory: 30.99GiB(32.62%)  \x1b[34mtps: 7,034  \x1b[36mtflops: 407.35  \x1b[35mmfu: 41.19%\x1b[39m\n",
      MetricFormat::kTorchtitan);
  CHECK(c.value.at({"loss", 10}) == Approx(10.7069));
  CHECK(c.value.at({"mfu_pct", 10}) == Approx(41.19));
}

TEST_CASE("DeepSpeed: the engine's step and throughput-timer lines, old and new", "[logs][frameworks]") {
  Points p = Parse(ReadData("deepspeed.log"), MetricFormat::kDeepSpeed);
  CHECK(p.malformed == 0);
  CHECK(p.value.at({"skipped_iters", 10}) == 4);
  CHECK(p.value.at({"learning_rate", 10}) == Approx(4.99804827338393e-05));
  CHECK(p.value.at({"samples_per_s", 10}) == Approx(25.025771473496132));
  CHECK(p.value.at({"max_mem_allocated_gb", 10}) == Approx(38.49));
  CHECK(p.value.at({"learning_rate", 450}) == Approx(5.192627993341359e-07));
  CHECK(p.time.at({"learning_rate", 450}) - p.time.at({"learning_rate", 10}) == Approx(18 * 60 + 17.704));
  Points old = Parse(ReadData("deepspeed_07.log"), MetricFormat::kDeepSpeed);
  CHECK(old.value.at({"samples_per_s", 20}) == Approx(232.7340551694273));
  CHECK(old.value.at({"skipped_iters", 30}) == 17);
}

TEST_CASE("Regular expressions from the study: extra metrics at the format's step, or the whole format",
          "[logs][frameworks]") {
  LogFormat ds(MetricFormat::kDeepSpeed);
  MetricRegex loss;
  std::string why;
  REQUIRE(CompileMetricRegex("lm_loss", R"(\[Rank 0\] Loss: (\S+))", &loss, &why));
  ds.regexes.push_back(loss);
  Points p = Parse(ReadData("deepspeed_hello.log"), ds);
  CHECK(p.value.at({"lm_loss", 10}) == Approx(10.8766));
  CHECK(p.value.at({"samples_per_s", 10}) == Approx(220.69530887096045));

  // metric_format = "regex": a trainer of its own ("aakashvardhan/s21-gpt2" log.md lines).
  LogFormat own(MetricFormat::kRegex);
  MetricRegex step, l;
  REQUIRE(CompileMetricRegex("step", R"(^step (\d+),)", &step, &why));
  REQUIRE(CompileMetricRegex("loss", R"(loss: ([-+0-9.eE]+|nan|inf))", &l, &why));
  own.regexes = {step, l};
  Points r = Parse("Using device: mps\nstep 0, loss: 10.899394989013672\nstep 1, loss: 10.719036102294922\n", own);
  CHECK(r.count == 2);
  CHECK(r.value.at({"loss", 1}) == Approx(10.719036102294922));
  CHECK(r.time_key.empty());
  // A value the expression captures that is no number is malformed, not zero.
  MetricRegex loose;
  REQUIRE(CompileMetricRegex("loss", R"(loss: (\S+))", &loose, &why));
  own.regexes = {step, loose};
  Points bad = Parse("step 2, loss: ten\n", own);
  CHECK(bad.malformed == 1);
  CHECK(bad.count == 0);

  CHECK_FALSE(CompileMetricRegex("x", "loss: [0-9", &l, &why));
  CHECK(why.find("not a valid regular expression") != std::string::npos);
  CHECK_FALSE(CompileMetricRegex("x", "loss: [0-9.]+", &l, &why));
  CHECK(why.find("capture group") != std::string::npos);
}

TEST_CASE("auto: the first metric line decides the format, whatever precedes it", "[logs][frameworks]") {
  struct Case {
    const char* file;
    MetricFormat expected;
    const char* metric;
  };
  for (const Case& c : {Case{"hf_trainer_translation.log", MetricFormat::kHuggingFace, "loss"},
                        Case{"nemo_lightning_bar.log", MetricFormat::kLightning, "reduced_train_loss"},
                        Case{"nemo2.log", MetricFormat::kLightning, "reduced_train_loss"},
                        Case{"lightning_unknown_total.log", MetricFormat::kLightning, "train_loss"},
                        Case{"torchtitan_gradnorm.log", MetricFormat::kTorchtitan, "loss"},
                        Case{"deepspeed.log", MetricFormat::kDeepSpeed, "samples_per_s"}}) {
    CAPTURE(c.file);
    std::string text = ReadData(c.file);
    LogSummary s = SummarizeLog(text, MetricFormat::kAuto);
    CHECK(s.detected == c.expected);
    bool found = false;
    for (const auto& m : s.metrics) found |= m.name == c.metric;
    CHECK(found);
    // Same points as with the format named.
    CHECK(s.points == SummarizeLog(text, c.expected).points);
  }
  std::string megatron =
      "banner\n [2024-09-03 15:56:55] iteration       20/  500000 | consumed samples:        20480 | elapsed time per "
      "iteration (ms): 12137.8 | lm loss: 1.064275E+01 |\n";
  CHECK(SummarizeLog(megatron, MetricFormat::kAuto).detected == MetricFormat::kMegatron);
  CHECK(SummarizeLog("{\"step\": 1, \"loss\": 2.0}\n", MetricFormat::kAuto).detected == MetricFormat::kJsonLines);
  CHECK(SummarizeLog("nothing here\n", MetricFormat::kAuto).detected == MetricFormat::kAuto);
}

TEST_CASE("Framework formats read in chunks give what one read gives", "[logs][frameworks]") {
  std::mt19937 rng(7);
  for (auto [file, format] :
       {std::pair{"hf_trainer.log", MetricFormat::kHuggingFace},
        std::pair{"nemo_lightning_bar.log", MetricFormat::kLightning},
        std::pair{"torchtitan.log", MetricFormat::kTorchtitan}, std::pair{"deepspeed.log", MetricFormat::kDeepSpeed}}) {
    CAPTURE(file);
    std::string log = ReadData(file);
    Points whole = Parse(log, format);
    ParserState state;
    std::vector<MetricPoint> pieces;
    size_t offset = 0;
    std::uniform_int_distribution<size_t> n(1, 200);
    size_t grow = 0;  // a read that ended inside a line is retried longer, as the file grows
    while (offset < log.size()) {
      size_t len = std::min(log.size() - offset, n(rng) + grow);
      ParseOutput out = ParseMetrics(std::string_view(log).substr(offset, len), format, state);
      pieces.insert(pieces.end(), out.points.begin(), out.points.end());
      offset += out.consumed;
      grow = out.consumed == 0 ? grow + 200 : 0;
    }
    CHECK(pieces.size() == whole.count);
  }
}

}  // namespace
}  // namespace sweep::logs
