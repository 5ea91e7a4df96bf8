// Tests of trials.csv rendering: the version 1 column order, RFC 4180 quoting, number formats
// and the spreadsheet formula guard.
#include "reports/csv.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace sweep::reports {
namespace {

// A trial's parameter values as the application hands them over (typed, shown as the template shows them).
std::vector<ParamCell> Cells(std::initializer_list<ParamValue> values) {
  return std::vector<ParamCell>(values.begin(), values.end());
}

std::vector<std::string> Lines(const std::string& csv) {
  std::vector<std::string> lines;
  std::istringstream in(csv);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

TrialRow FullRow() {
  TrialRow row;
  row.trial_id = 3;
  row.trial_key = "lr=0.001,bs=32";
  row.param_values = Cells({0.001, 32});
  row.state = "COMPLETED";
  row.job_id = "4242";
  row.exit_code = "0:0";
  row.steps = 500;
  row.objective_value = 2.34567891;
  row.median_iter_time_ms = 123.456;
  row.iters_per_s = 1000 / 123.456;
  row.train_time_s = 61.728;
  row.wall_time_s = 75.04;
  return row;
}

TEST_CASE("trials.csv header lists the version 2 columns around the params", "[csv]") {
  std::string csv = RenderTrialsCsv({"lr", "batch_size"}, {});
  REQUIRE(kTrialsCsvVersion == 2);
  REQUIRE(csv ==
          "trial_id,trial_key,lr,batch_size,state,reason,job_id,exit_code,steps,final_objective,median_iter_time_ms,"
          "iters_per_s,train_time_s,wall_time_s\n");
  REQUIRE(RenderTrialsCsv({}, {}).starts_with("trial_id,trial_key,state,"));
}

TEST_CASE("trials.csv rows follow the header order with fixed number formats", "[csv]") {
  std::string csv = RenderTrialsCsv({"lr", "bs"}, {FullRow()});
  auto lines = Lines(csv);
  REQUIRE(lines.size() == 2);
  REQUIRE(lines[1] == "3,\"lr=0.001,bs=32\",0.001,32,COMPLETED,,4242,0:0,500,2.34568,123.5,8.1,61.7,75.0");
  REQUIRE(csv.back() == '\n');
}

TEST_CASE("trials.csv leaves missing values empty", "[csv]") {
  TrialRow row;
  row.trial_id = 7;
  row.trial_key = "k";
  row.param_values = Cells({"a"});  // one value short: the column stays, empty
  row.state = "PENDING";
  auto lines = Lines(RenderTrialsCsv({"x", "y"}, {row}));
  REQUIRE(lines[1] == "7,k,a,,PENDING,,,,0,,,,,");
  row.param_values = Cells({"a", "b", "c"});  // one too many: cut, so columns stay aligned
  lines = Lines(RenderTrialsCsv({"x", "y"}, {row}));
  REQUIRE(lines[1] == "7,k,a,b,PENDING,,,,0,,,,,");
}

TEST_CASE("trials.csv quotes commas, quotes and line breaks per RFC 4180", "[csv]") {
  TrialRow row = FullRow();
  row.param_values = Cells({"a,b", "say \"hi\""});
  row.reason = "OOM\nkilled\r\nby cgroup";
  std::string csv = RenderTrialsCsv({"p,1", "p2"}, {row});
  REQUIRE(csv.starts_with("trial_id,trial_key,\"p,1\",p2,state,"));
  REQUIRE(csv.find(",\"a,b\",\"say \"\"hi\"\"\",COMPLETED,\"OOM\nkilled\r\nby cgroup\",4242,") != std::string::npos);
  row.param_values = Cells({"plain", "text"});
  row.reason = "";
  REQUIRE(Lines(RenderTrialsCsv({"p1", "p2"}, {row}))[1].find(",plain,text,COMPLETED,,") != std::string::npos);
}

TEST_CASE("trials.csv guards text that a spreadsheet would run as a formula", "[csv]") {
  TrialRow row = FullRow();
  row.param_values = Cells({"=HYPERLINK(\"http://x\")", "@SUM(A1)"});
  row.reason = "-cmd|' /C calc'!A0";
  auto lines = Lines(RenderTrialsCsv({"a", "b"}, {row}));
  REQUIRE(lines[1].find(",\"'=HYPERLINK(\"\"http://x\"\")\",'@SUM(A1),COMPLETED,'-cmd|' /C calc'!A0,") !=
          std::string::npos);

  auto param_cell = [](const std::string& value) {
    TrialRow r;
    r.param_values = Cells({value});
    std::string line = Lines(RenderTrialsCsv({"p"}, {r}))[1];
    size_t start = line.find(',', line.find(',') + 1) + 1;  // after trial_id and trial_key
    return line.substr(start, line.find(",,", start) - start);
  };
  // Numbers stay numbers, signs and exponents included.
  REQUIRE(param_cell("-0.5") == "-0.5");
  REQUIRE(param_cell("+3") == "+3");
  REQUIRE(param_cell("-1e-05") == "-1e-05");
  REQUIRE(param_cell("-.5E+3") == "-.5E+3");
  REQUIRE(param_cell("1e-4") == "1e-4");
  // Anything else starting with a formula character does not.
  REQUIRE(param_cell("-") == "'-");
  REQUIRE(param_cell("+1+1") == "'+1+1");
  REQUIRE(param_cell("-1e") == "'-1e");
  REQUIRE(param_cell("-inf") == "'-inf");
  REQUIRE(param_cell("\tx") == "'\tx");
  REQUIRE(param_cell("\rx") == "\"'\rx\"");
  REQUIRE(param_cell("a=1") == "a=1");

  REQUIRE(RenderTrialsCsv({"=p"}, {}).starts_with("trial_id,trial_key,'=p,"));
}

TEST_CASE("trials.csv number formats keep precision without noise", "[csv]") {
  TrialRow row;
  row.trial_id = 1;
  row.steps = 123456789012;
  row.objective_value = 0.1 + 0.2;
  row.median_iter_time_ms = 12137.8;
  row.iters_per_s = 1000 / 12137.8;
  row.train_time_s = 242.756;
  row.wall_time_s = 0.04;
  REQUIRE(Lines(RenderTrialsCsv({}, {row}))[1] == "1,,,,,,123456789012,0.3,12137.8,0.08239,242.8,0.0");
  row.objective_value = 1.5e-7;
  REQUIRE(Lines(RenderTrialsCsv({}, {row}))[1].find(",1.5e-07,") != std::string::npos);
  row.objective_value = std::numeric_limits<double>::quiet_NaN();  // a diverged trial
  REQUIRE(Lines(RenderTrialsCsv({}, {row}))[1].find(",nan,") != std::string::npos);
}

TEST_CASE("CSV cells carry no control byte or invalid UTF-8: each becomes U+FFFD", "[csv]") {
  std::string out;
  AppendMetricsCsvRow(1, "t-1", 10, 1.5, std::string("lm\0loss\x1b\xff", 9), 2.5, out);
  CHECK(out == "1,t-1,10,1.5,lm\xEF\xBF\xBDloss\xEF\xBF\xBD\xEF\xBF\xBD,2.5\n");
  std::string quoted;
  AppendCsvText("a,\x01", quoted);
  CHECK(quoted == "\"a,\xEF\xBF\xBD\"");
  std::string formula;
  AppendCsvText("=1+1\x02", formula);  // still guarded against formulas
  CHECK(formula == "'=1+1\xEF\xBF\xBD");
}

}  // namespace
}  // namespace sweep::reports
