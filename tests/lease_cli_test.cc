// The controller's lease and lock failures through the built binary (run/lease.h): a run
// refused by another host's lease, `status` and `status --json` naming the holder, and the errno
// of a lock the filesystem does not provide (tests/lock_shim.cc, LD_PRELOADed). Tagged [cli].
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <string>

#include "run/lease.h"
#include "store/store.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";
const std::string kShim = std::string(SLURMSWEEP_BINARY_DIR) + "/tests/liblock_shim.so";

// A study whose database holds a lease of a run on "login7" (pid 4242) that renewed it at `beat`.
std::string StudyLeasedTo(const testing::TempDir& dir, double beat) {
  std::string study = testing::WriteLocalStudyFile(dir, "ls", "echo {{lr}}", "[space]\nlr = [0.1]\n");
  auto db = store::Store::Open(dir.file("ls.db"));
  REQUIRE(db.ok());
  REQUIRE((*db)->UpsertStudy("ls", study, "h", beat).ok());
  REQUIRE((*db)->WriteLease({"login7:4242:x:1", "login7", 4242, "another-boot", beat, beat}).ok());
  return study;
}

}  // namespace

TEST_CASE("a run on another host holds the study: run is refused naming it, status shows it", "[cli][lease]") {
  testing::TempDir dir;
  double now = static_cast<double>(::time(nullptr));
  std::string study = StudyLeasedTo(dir, now);
  auto [rc, out] = testing::RunShell(kBinary + " run " + study + " 2>&1");
  INFO(out);
  CHECK(rc != 0);
  CHECK_THAT(out, Catch::Contains("another slurmsweep run controls this study: host login7, pid 4242, heartbeat") &&
                      Catch::Contains("ssh login7 kill 4242"));
  CHECK_THAT(out, !Catch::Contains("pid ?"));

  auto [src, status] = testing::RunShell(kBinary + " status " + study + " 2>&1");
  INFO(status);
  CHECK_THAT(status, Catch::Contains("a run of this study is going on on host login7 (pid 4242), heartbeat"));
  auto [jrc, json] = testing::RunShell(kBinary + " status --json " + study);
  INFO(json);
  REQUIRE(jrc == 0);
  auto j = nlohmann::json::parse(json);
  CHECK(j["run"]["going_on"] == true);
  CHECK(j["run"]["host"] == "login7");
  CHECK(j["run"]["pid"] == 4242);
  CHECK(j["run"]["heartbeat_age_s"].is_number());
  CHECK(j["run"]["heartbeat_age_s"].get<double>() >= 0);
  CHECK(j["run"]["stale"] == false);
}

TEST_CASE("a lease whose heartbeat is older than lease_timeout_s is stale: status says so, run takes it over",
          "[cli][lease]") {
  testing::TempDir dir;
  std::string study = StudyLeasedTo(dir, static_cast<double>(::time(nullptr)) - 1000);
  auto [jrc, json] = testing::RunShell(kBinary + " status --json " + study);
  INFO(json);
  REQUIRE(jrc == 0);
  auto j = nlohmann::json::parse(json);
  CHECK(j["run"]["going_on"] == false);
  CHECK(j["run"]["stale"] == true);
  CHECK(j["run"]["host"] == "login7");
  CHECK(j["run"]["heartbeat_age_s"].get<double>() >= 1000);
  // The local transport runs the trial here; the takeover is said and recorded. A squeue that finds
  // no job of the study stands first on PATH, so that the run's look for live jobs before its first
  // sbatch is answered on a machine without a cluster too.
  std::filesystem::create_directories(dir.file("bin"));
  testing::WriteAll(dir.file("bin/squeue"), "#!/bin/sh\nexit 0\n");
  ::chmod(dir.file("bin/squeue").c_str(), 0755);
  auto [rc, out] = testing::RunShell("PATH=" + dir.file("bin") + ":$PATH " + kBinary + " run " + study + " 2>&1");
  INFO(out);
  CHECK_THAT(out, Catch::Contains("took the study over from a run that stopped renewing its lease (host login7, pid "
                                  "4242, heartbeat"));
  auto db = store::Store::OpenReadOnly(dir.file("ls.db"));
  REQUIRE(db.ok());
  auto rec = (*db)->GetStudy("ls");
  REQUIRE(rec.ok());
  auto events = (*db)->Events(rec->id);
  REQUIRE(events.ok());
  CHECK(std::count_if(events->begin(), events->end(), [](const auto& e) { return e.kind == "takeover"; }) == 1);
  auto lease = (*db)->ReadLease();
  REQUIRE(lease.ok());
  CHECK_FALSE(lease->has_value());  // released at the end of the run
}

TEST_CASE("a filesystem without locks: run names the errno and the way on, never 'pid ?'", "[cli][lease]") {
  for (std::string call : {"flock", "fcntl"}) {
    for (std::string err : {"ENOSYS", "ENOLCK"}) {
      testing::TempDir dir;
      std::string study = testing::WriteLocalStudyFile(dir, "nl", "echo {{lr}}", "[space]\nlr = [0.1]\n");
      auto [rc, out] =
          testing::RunShell(fmt::format("SWEEP_LOCK_SHIM={} SWEEP_LOCK_SHIM_ERRNO={} LD_PRELOAD={} {} run {} 2>&1",
                                        call, err, kShim, kBinary, study));
      INFO(call << " " << err << ": " << out);
      CHECK(rc != 0);
      CHECK_THAT(out, Catch::Contains("failed with " + err) &&
                          Catch::Contains("this filesystem does not provide file locks") &&
                          Catch::Contains("Keep the study database on a local disk"));
      CHECK_THAT(out, !Catch::Contains("pid ?") && !Catch::Contains("disk I/O error"));
    }
  }
}

TEST_CASE("cancel asks a run on another host to cancel: it records a request that run obeys, and waits for its answer",
          "[cli][lease]") {
  testing::TempDir dir;
  std::string study = StudyLeasedTo(dir, static_cast<double>(::time(nullptr)));
  auto [rc, out] = testing::RunShell(kBinary + " cancel --wait 1 " + study + " 2>&1");
  INFO(out);
  CHECK(rc == 0);
  CHECK_THAT(out, Catch::Contains("a run of this study is going on (pid 4242 on host login7): asked it to cancel") &&
                      Catch::Contains("no answer within 1 s"));
  auto db = store::Store::OpenReadOnly(dir.file("ls.db"));
  REQUIRE(db.ok());
  auto rec = (*db)->GetStudy("ls");
  REQUIRE(rec.ok());
  auto requests = (*db)->EventsAfter(rec->id, "cancel_request", 0);
  REQUIRE(requests.ok());
  CHECK(requests->size() == 1);
  // A lease whose heartbeat is long gone holds nothing: no request, the trials are cancelled here.
  testing::TempDir stale_dir;
  std::string stale = StudyLeasedTo(stale_dir, 1000);
  auto [src, sout] = testing::RunShell(kBinary + " cancel --wait 1 " + stale + " 2>&1");
  INFO(sout);
  CHECK(src == 0);
  CHECK_THAT(sout, !Catch::Contains("going on"));
}

// `run --as-job` records its controller's job id beside the database (run/controller_job.h): the
// text status names it, and so does `status --json` (run.controller_job; null before any).
TEST_CASE("status and status --json name the run --as-job controller job", "[cli][lease]") {
  testing::TempDir dir;
  std::string study = StudyLeasedTo(dir, static_cast<double>(::time(nullptr)));
  auto json_of = [&] {
    auto [rc, out] = testing::RunShell(kBinary + " status --json " + study);
    INFO(out);
    REQUIRE(rc == 0);
    return nlohmann::json::parse(out);
  };
  CHECK(json_of()["run"]["controller_job"].is_null());
  testing::WriteAll(dir.file("ls.db.controller"), "4711\n");
  CHECK(json_of()["run"]["controller_job"] == "4711");
  auto [rc, text] = testing::RunShell(kBinary + " status " + study + " 2>&1");
  INFO(text);
  CHECK_THAT(text, Catch::Contains("controller: Slurm job 4711"));
}
