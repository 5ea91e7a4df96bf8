// Two-phase studies: phase 2's trials are phase 1's winners crossed with phase 2's own space.
#include "results/phases.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <filesystem>
#include <set>

#include "results/phase_seeds.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::results;

namespace {

constexpr const char* kPhase1 = R"([study]
name = "screen"

[cluster]
transport = "local"
workdir = "/tmp/x"

[job]
template = "screen.sbatch"

[space]
mbs = [1, 2, 4]
tp = [1, 2]
)";

std::string Phase2(const std::string& seed_from, const std::string& space = "lr = [0.1, 0.01]\n") {
  return fmt::format(R"([study]
name = "race"

[cluster]
transport = "local"
workdir = "/tmp/y"

[job]
template = "job.sbatch"

[search]
seed_from = {}

[space]
{})",
                     seed_from, space);
}

// Runs phase 1 "on paper": every trial ended with the given iteration time and final loss.
struct Phase1 {
  testing::TempDir dir;
  Phase1() {
    testing::WriteAll(dir.file("screen.sbatch"), "#!/bin/bash\necho {{mbs}} {{tp}}\n");
    testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho {{mbs}} {{tp}} {{lr}}\n");
    testing::WriteAll(dir.file("screen.toml"), kPhase1);
  }
  // iter_ms and loss by (mbs, tp); state "completed" unless given.
  void Record(const std::map<std::pair<int, int>, std::tuple<double, double, std::string>>& results) {
    auto study = study::LoadStudy(dir.file("screen.toml"));
    REQUIRE(study.ok());
    auto db = store::Store::Open(study->database);
    REQUIRE(db.ok());
    auto id = (*db)->UpsertStudy(study->name, study->path, study->hash, 1.0);
    REQUIRE(id.ok());
    auto specs = study::ExpandSpace(*study);
    REQUIRE(specs.ok());
    std::vector<store::TrialRecord> records;
    for (const auto& s : *specs) records.push_back(store::TrialRecord::FromSpec(s));
    REQUIRE((*db)->InsertTrialsIfAbsent(*id, records).ok());
    for (size_t i = 0; i < records.size(); ++i) {
      auto key = std::pair{static_cast<int>(std::get<int64_t>((*specs)[i].params[0].second)),
                           static_cast<int>(std::get<int64_t>((*specs)[i].params[1].second))};
      auto [ms, loss, state] = results.at(key);
      records[i].state = state;
      REQUIRE((*db)->UpdateTrial(records[i]).ok());
      std::vector<store::MetricRow> rows;
      for (int step = 10; step <= 40; step += 10) {
        rows.push_back({step, step * ms / 1000, "iter_time_ms", ms});
        rows.push_back({step, step * ms / 1000, "lm_loss", loss + (40 - step) * 0.01});
      }
      REQUIRE((*db)->AppendMetrics(records[i].id, rows, 1).ok());
    }
  }
};

std::set<std::string> ParamsOf(const std::vector<TrialSpec>& specs) {
  std::set<std::string> out;
  for (const auto& s : specs) out.insert(s.params_json);
  return out;
}

}  // namespace

TEST_CASE("phase 2 crosses phase 1's fastest configurations with its own space", "[phases]") {
  Phase1 p;
  // Fastest: (4, 2) 100 ms, then (2, 2) 150 ms; (4, 1) would be fastest but it failed.
  p.Record({{{1, 1}, {400, 2.0, "completed"}},
            {{1, 2}, {300, 2.1, "completed"}},
            {{2, 1}, {250, 2.2, "completed"}},
            {{2, 2}, {150, 2.3, "completed"}},
            {{4, 1}, {50, 9.9, "cuda_oom"}},
            {{4, 2}, {100, 2.4, "completed"}}});
  testing::WriteAll(p.dir.file("race.toml"), Phase2(R"({ study = "screen.toml", top = 2 })"));
  auto race = study::LoadStudy(p.dir.file("race.toml"));
  REQUIRE(race.ok());
  REQUIRE(ResolveSeeds(*race).ok());
  auto specs = ExpandStudy(*race);
  REQUIRE(specs.ok());
  CHECK(ParamsOf(*specs) == std::set<std::string>{R"({"lr":0.1,"mbs":4,"tp":2})", R"({"lr":0.01,"mbs":4,"tp":2})",
                                                  R"({"lr":0.1,"mbs":2,"tp":2})", R"({"lr":0.01,"mbs":2,"tp":2})"});
  // The template gets phase 1's knobs as parameters too.
  REQUIRE(specs->front().params.size() == 3);
  CHECK(specs->front().params[0].first == "mbs");

  // Ranked by final loss instead: (1, 1) then (1, 2).
  testing::WriteAll(p.dir.file("race.toml"), Phase2(R"({ study = "screen.toml", top = 2, by = "final" })"));
  race = study::LoadStudy(p.dir.file("race.toml"));
  REQUIRE(race.ok());
  REQUIRE(ResolveSeeds(*race).ok());
  specs = ExpandStudy(*race);
  REQUIRE(specs.ok());
  CHECK(ParamsOf(*specs).count(R"({"lr":0.1,"mbs":1,"tp":1})") == 1);
  CHECK(ParamsOf(*specs).count(R"({"lr":0.1,"mbs":1,"tp":2})") == 1);
}

TEST_CASE("phase 2 refuses to start before phase 1 has ended, and names what is wrong", "[phases]") {
  Phase1 p;
  testing::WriteAll(p.dir.file("race.toml"), Phase2(R"({ study = "screen.toml" })"));
  auto race = study::LoadStudy(p.dir.file("race.toml"));
  REQUIRE(race.ok());
  REQUIRE(ResolveSeeds(*race).ok());
  auto none = ExpandStudy(*race);  // phase 1 never ran
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(none.status().message(), Catch::Contains("race.toml:12") && Catch::Contains("run it first"));

  p.Record({{{1, 1}, {400, 2.0, "completed"}},
            {{1, 2}, {300, 2.1, "running"}},
            {{2, 1}, {250, 2.2, "completed"}},
            {{2, 2}, {150, 2.3, "completed"}},
            {{4, 1}, {50, 9.9, "pending"}},
            {{4, 2}, {100, 2.4, "completed"}}});
  REQUIRE(ResolveSeeds(*race).ok());  // phase 1 is read once per command: this is the next one
  auto early = ExpandStudy(*race);
  REQUIRE_FALSE(early.ok());
  CHECK_THAT(early.status().message(), Catch::Contains("2 trial(s) not ended"));

  // A knob in both studies is a mistake in the study files.
  testing::WriteAll(p.dir.file("race.toml"), Phase2(R"({ study = "screen.toml" })", "lr = [0.1]\ntp = [8]\n"));
  auto both = study::LoadStudy(p.dir.file("race.toml"));
  REQUIRE(both.ok());
  REQUIRE(ResolveSeeds(*both).ok());
  auto clash = ExpandStudy(*both);
  REQUIRE_FALSE(clash.ok());
  CHECK_THAT(clash.status().message(), Catch::Contains("'tp' is in both"));

  auto bad = study::ParseStudy(Phase2(R"({ study = "screen.toml", by = "speed" })"), p.dir.file("race.toml"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("race.toml:") && Catch::Contains("search.seed_from.by"));
}

TEST_CASE("phase 2's seeds, resolved once, are data: expansion no longer reads phase 1", "[phases]") {
  Phase1 p;
  p.Record({{{1, 1}, {400, 2.0, "completed"}},
            {{1, 2}, {300, 2.1, "completed"}},
            {{2, 1}, {250, 2.2, "completed"}},
            {{2, 2}, {150, 2.3, "completed"}},
            {{4, 1}, {50, 9.9, "cuda_oom"}},
            {{4, 2}, {100, 2.4, "completed"}}});
  testing::WriteAll(p.dir.file("race.toml"), Phase2(R"({ study = "screen.toml", top = 2 })"));
  auto race = study::LoadStudy(p.dir.file("race.toml"));
  REQUIRE(race.ok());
  auto unread = ExpandStudy(*race);  // phase 1 is read once, by ResolveSeeds, before anything expands
  REQUIRE_FALSE(unread.ok());
  CHECK_THAT(unread.status().message(), Catch::Contains("race.toml:12") && Catch::Contains("ResolveSeeds"));
  REQUIRE(ResolveSeeds(*race).ok());
  auto read = ExpandStudy(*race);
  REQUIRE(read.ok());
  REQUIRE(race->seeds);
  CHECK(race->seeds->param_names == std::vector<std::string>{"mbs", "tp"});
  CHECK(ParamNames(*race) == std::vector<std::string>{"mbs", "tp", "lr"});
  // Phase 1's files gone: the resolved study expands as before.
  std::filesystem::remove(p.dir.file("screen.toml"));
  auto resolved = ExpandStudy(*race);
  REQUIRE(resolved.ok());
  CHECK(ParamsOf(*resolved) == ParamsOf(*read));

  // Why phase 1 cannot seed is kept, and returned by the expansion.
  Phase1 never_ran;
  testing::WriteAll(never_ran.dir.file("race.toml"), Phase2(R"({ study = "screen.toml" })"));
  auto early = study::LoadStudy(never_ran.dir.file("race.toml"));
  REQUIRE(early.ok());
  REQUIRE(ResolveSeeds(*early).ok());
  auto none = ExpandStudy(*early);
  REQUIRE_FALSE(none.ok());
  CHECK_THAT(none.status().message(), Catch::Contains("run it first"));
  CHECK_FALSE(early->expanded);  // nothing to keep: each caller gets the reason
}

TEST_CASE("ResolveSeeds expands the study once; the report's trial list takes that expansion as data",
          "[phases][report]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("t.sh"), "#!/bin/bash\necho {{mbs}}\n");
  testing::WriteAll(dir.file("s.toml"), R"([study]
name = "once"

[cluster]
transport = "local"
workdir = "/tmp/once"

[job]
template = "t.sh"

[space]
mbs = [1, 2, 4]
)");
  auto study = study::LoadStudy(dir.file("s.toml"));
  REQUIRE(study.ok());
  auto fresh = ExpandStudy(*study);
  REQUIRE(fresh.ok());
  REQUIRE(ResolveSeeds(*study).ok());
  REQUIRE(study->expanded);
  REQUIRE(study->expanded->size() == 3);
  for (size_t i = 0; i < fresh->size(); ++i) CHECK((*study->expanded)[i].key == (*fresh)[i].key);

  auto store = store::Store::Open(dir.file("s.db"));
  REQUIRE(store.ok());
  auto id = (*store)->UpsertStudy("once", study->path, study->hash, 0);
  REQUIRE(id.ok());
  std::vector<store::TrialRecord> records;
  for (const auto& spec : *fresh) records.push_back(store::TrialRecord::FromSpec(spec));
  REQUIRE((*store)->InsertTrialsIfAbsent(*id, records).ok());
  // The kept expansion decides, not a new one: with mbs = 4 gone from it, that trial is history.
  auto kept = std::make_shared<std::vector<TrialSpec>>(*study->expanded);
  kept->pop_back();
  study->expanded = kept;
  int left_out = -1;
  auto trials = StudyTrials(**store, *study, *id, &left_out);
  REQUIRE(trials.ok());
  CHECK(trials->size() == 2);
  CHECK(left_out == 1);
}
