// Covers `heatsink-sim swarm` (sim/swarm.h, sim/swarm_generator.h,
// sim/swarm_checker.h): the generator is a pure function of the seed and its
// scenarios load through the ordinary loader; a small seed range passes every
// invariant and the liveness phase; a check made stricter through the
// checker's test hook, and a scenario built to end with a copy still in
// flight, are reported with the right invariant name, the last events, the
// scenario file and the replay command; a replay prints the same report byte
// for byte, in-process and through the binary in two processes. Seeds send
// proposal bursts; the proposal checks fire on forbidden answers and pass on
// the master's real ones.
#include "sim/swarm.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/replication/replica_action.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/runner.h"
#include "sim/swarm_checker.h"
#include "sim/swarm_generator.h"
#include "tests/sim/repo_root.h"

namespace heatsink::sim {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace fs = std::filesystem;

std::string SlurpFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path SwarmTempDir(const std::string& name) {
  const fs::path dir =
      fs::path(::testing::TempDir()) / absl::StrCat("heatsink_swarm_", getpid()) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Everything RunSwarm printed except the summary line (it carries wall time).
std::string WithoutSummary(const std::string& out) {
  const size_t at = out.rfind("swarm: ");
  return at == std::string::npos ? out : out.substr(0, at);
}

TEST(SwarmGenerator, SameSeedSameJsonAndItLoads) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const SwarmScenario a = GenerateSwarmScenario(seed);
    const SwarmScenario b = GenerateSwarmScenario(seed);
    ASSERT_EQ(a.json, b.json) << "seed " << seed;
    EXPECT_EQ(a.name, absl::StrCat("swarm-", seed));
    EXPECT_GT(a.liveness_ms, 0);
    absl::StatusOr<Scenario> s = ParseScenario(a.json, a.name, "", SimulatorLoadOptions());
    ASSERT_TRUE(s.ok()) << "seed " << seed << ": " << s.status();
    EXPECT_EQ(s->seed, seed);
    EXPECT_EQ(s->duration_ns, MsToNs(a.faults_end_ms + a.liveness_ms));
    // Every fault heals before the liveness phase.
    for (const WorkerCrash& c : s->faults.worker_crashes) {
      ASSERT_TRUE(c.restart_at_ns.has_value());
      EXPECT_LE(*c.restart_at_ns, MsToNs(a.faults_end_ms));
    }
    for (const TrunkFault& t : s->faults.trunk_faults) EXPECT_LE(t.to_ns, MsToNs(a.faults_end_ms));
  }
  EXPECT_NE(GenerateSwarmScenario(1).json, GenerateSwarmScenario(2).json);
}

// Runs seeds first..last on two threads, quietly; reports go to `out`.
SwarmSummary RunSeeds(uint64_t first, uint64_t last, const std::string& dir_name,
                      std::ostringstream& out) {
  SwarmOptions options;
  options.seed_first = first;
  options.seed_last = last;
  options.jobs = 2;
  options.out_dir = SwarmTempDir(dir_name).string();
  options.progress_every = 0;
  std::ostringstream err;
  return RunSwarm(options, out, err);
}

TEST(Swarm, SmallSeedRangePasses) {
  std::ostringstream out;
  const SwarmSummary summary = RunSeeds(1, 8, "pass", out);
  EXPECT_EQ(summary.seeds_run, 8);
  EXPECT_EQ(summary.failed, 0) << out.str();
  EXPECT_EQ(summary.passed, 8);
  EXPECT_GT(summary.events, 0);
  EXPECT_THAT(out.str(), StartsWith("swarm: 8 seeds run, 8 passed, 0 failed"));
}

// The seeds reach what they exist for: leases are granted and dynamic copies
// complete (each completion needs a lease).
TEST(Swarm, SeedsGrantLeasesAndCompleteCopies) {
  int64_t leases = 0;
  int64_t copies = 0;
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    const SwarmSeedResult r = RunSwarmSeed(seed, SwarmCheckerOptions{});
    ASSERT_TRUE(r.passed) << FormatSwarmFailure(r, "", "heatsink-sim");
    leases += r.leases_accepted;
    copies += r.copy_ends_accepted;
  }
  EXPECT_GT(leases, 0);
  EXPECT_GT(copies, 0);
  EXPECT_LE(copies, leases);
}

// With the test hook every lease counts as expired an hour early, so the
// first accepted dynamic CopyEnd breaks copy_end_with_live_lease.
TEST(Swarm, StricterCopyEndCheckIsReportedWithNameAndReplay) {
  SwarmCheckerOptions strict;
  strict.test_lease_expiry_shift_ns = SecToNs(3'600);
  uint64_t failing = 0;
  SwarmSeedResult result;
  for (uint64_t seed = 1; seed <= 60 && failing == 0; ++seed) {
    result = RunSwarmSeed(seed, strict);
    if (!result.passed) failing = seed;
  }
  ASSERT_NE(failing, 0u) << "no seed in 1..60 completed a dynamic copy";
  EXPECT_EQ(result.invariant, "copy_end_with_live_lease") << result.message;
  EXPECT_THAT(result.message, HasSubstr("succeeded although its lease expired"));
  ASSERT_FALSE(result.recent_events.empty());
  EXPECT_LE(result.recent_events.size(), 20u);
  EXPECT_THAT(result.recent_events.back(), HasSubstr("copy_end lease="));

  // Through RunSwarm: the report, the scenario file and the replay command.
  const fs::path dir = SwarmTempDir("strict");
  SwarmOptions options;
  options.seed_first = failing;
  options.seed_last = failing;
  options.out_dir = dir.string();
  options.progress_every = 0;
  options.checker = strict;
  std::ostringstream first;
  std::ostringstream err;
  const SwarmSummary summary = RunSwarm(options, first, err);
  EXPECT_EQ(summary.failed, 1);
  const fs::path file = dir / absl::StrCat("swarm-", failing, ".json");
  EXPECT_THAT(first.str(), StartsWith(absl::StrCat("FAIL seed ", failing, " (swarm-", failing,
                                                   "): invariant copy_end_with_live_lease\n")));
  EXPECT_THAT(first.str(), HasSubstr(absl::StrCat("  scenario: ", file.string(), "\n")));
  EXPECT_THAT(first.str(), HasSubstr(absl::StrCat("  replay: heatsink-sim swarm --seeds ", failing,
                                                  "..", failing, "\n")));
  EXPECT_EQ(SlurpFile(file), GenerateSwarmScenario(failing).json);

  // The replay prints the same report byte for byte.
  std::ostringstream second;
  RunSwarm(options, second, err);
  EXPECT_EQ(WithoutSummary(first.str()), WithoutSummary(second.str()));
  EXPECT_THAT(WithoutSummary(first.str()), HasSubstr("last "));

  // The written file replays to the same invariant and events.
  absl::StatusOr<Scenario> loaded = LoadScenarioForRun(file.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const SwarmSeedResult again = RunSwarmScenario(*loaded, strict);
  EXPECT_EQ(again.invariant, result.invariant);
  EXPECT_EQ(again.message, result.message);
  EXPECT_EQ(again.recent_events, result.recent_events);
}

// A hot key is admitted at once, its copy is delayed far past the end of the
// run: the liveness check must name the copy still in flight.
constexpr char kUnhealedScenario[] = R"({
  "name": "unhealed",
  "seed": 3,
  "duration_s": 0.5,
  "topology": {"domains": [{"name": "a", "hosts": [
    {"name": "h0", "segments": [{"name": "mem", "capacity_bytes": "8MiB"}], "clients": [{"name": "c"}]},
    {"name": "h1", "segments": [{"name": "mem", "capacity_bytes": "8MiB"}], "clients": [{"name": "c"}]}
  ]}]},
  "knobs": {
    "dynamic_replication_mode": "enforce",
    "dynamic_replication_heat_window_seconds": 1,
    "dynamic_replication_admission_qps_threshold": 2,
    "dynamic_replication_lease_ttl_ms": 60000,
    "invariant_check_events": 1,
    "numa_model": false
  },
  "workloads": [{"type": "scripted", "ops": [
    {"op": "put", "client": "h0/c", "key": "k", "size_bytes": "256KiB"},
    {"op": "delay_copies", "host": "h0", "by_ms": 30000, "at_ms": 10},
    {"op": "get", "client": "h1/c", "key": "k", "at_ms": 50},
    {"op": "get", "client": "h1/c", "key": "k", "at_ms": 60},
    {"op": "get", "client": "h1/c", "key": "k", "at_ms": 70}
  ]}]
})";

TEST(Swarm, LivenessNamesACopyStillInFlight) {
  const fs::path dir = SwarmTempDir("unhealed");
  const fs::path file = dir / "unhealed.json";
  {
    std::ofstream out(file, std::ios::binary);
    out << kUnhealedScenario;
  }
  absl::StatusOr<Scenario> scenario = LoadScenarioForRun(file.string());
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const SwarmSeedResult r = RunSwarmScenario(*scenario, SwarmCheckerOptions{});
  ASSERT_FALSE(r.passed);
  EXPECT_EQ(r.invariant, "liveness.no_in_flight_lease") << r.message;
  EXPECT_THAT(r.message, HasSubstr("for default/k is still in flight at the end"));
  const std::string report = FormatSwarmFailure(r, file.string(), "heatsink-sim");
  EXPECT_THAT(report, HasSubstr("invariant liveness.no_in_flight_lease"));
  EXPECT_THAT(report, HasSubstr(absl::StrCat("heatsink-sim swarm --scenario ", file.string())));

  // The binary, in two processes: exit code 1 and the same bytes.
  auto run = [&](const std::string& name) {
    const fs::path out = dir / name;
    const std::string command = absl::StrCat("'", HEATSINK_SIM_BINARY, "' swarm --scenario '",
                                             file.string(), "' >'", out.string(), "' 2>&1");
    const int status = std::system(command.c_str());
    EXPECT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 1);
    return SlurpFile(out);
  };
  const std::string a = run("a.txt");
  EXPECT_EQ(a, report);
  EXPECT_EQ(run("b.txt"), a);
}

// The seeds send bursts of proposals for one key, and some are granted
// (rarely: the heat path usually admits the key first, so most proposals
// meet pending, cooldown or the replica limit; of seeds 1..60 only seed 42
// grants any, so a change of the generator may need another range here).
TEST(Swarm, SeedsSendProposalBurstsAndSomeAreGranted) {
  int64_t bursts = 0;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    const SwarmScenario generated = GenerateSwarmScenario(seed);
    for (size_t at = generated.json.find("\"propose\""); at != std::string::npos;
         at = generated.json.find("\"propose\"", at + 1)) {
      ++bursts;
    }
  }
  EXPECT_GT(bursts, 0);
  std::ostringstream out;
  // Seeds whose bursts are granted (grants are rare: the heat path usually
  // admits a key before its proposers do), and which draw no master crash.
  const SwarmSummary summary = RunSeeds(78, 85, "proposals", out);
  EXPECT_EQ(summary.failed, 0) << out.str();
  EXPECT_GT(summary.proposals_accepted, 0) << out.str();
  EXPECT_THAT(out.str(), HasSubstr(" proposals granted"));
}

// The proposal checks fire on the answers they forbid (fed to the checker
// directly; the master never gives such answers).
ProposalObservation Answer(uint64_t id, int64_t index, int64_t size,
                           absl::StatusOr<ReplicaActionLease> result) {
  ProposalObservation p;
  p.t_ns = MsToNs(5);
  p.burst_index = index;
  p.burst_size = size;
  p.proposal.proposal_id = ProposalId(id);
  p.proposal.name = ObjectName{"default", "k"};
  p.proposal.observed_version = 1;
  p.result = std::move(result);
  return p;
}

ReplicaActionLease Granted(uint64_t id, uint64_t lease) {
  ReplicaActionLease l;
  l.proposal_id = ProposalId(id);
  l.lease_id = LeaseId(lease);
  l.name = ObjectName{"default", "k"};
  return l;
}

TEST(SwarmChecker, TwoLeasesForOneBurstBreakProposalBurstOneLease) {
  SwarmChecker checker;
  checker.OnProposal(Answer(1, 0, 2, Granted(1, 7)));
  checker.OnProposal(Answer(2, 1, 2, Granted(2, 8)));
  RunWorld world;
  world.now_ns = MsToNs(5);
  const absl::Status st = checker.AfterEvent(world);
  ASSERT_FALSE(st.ok());
  ASSERT_TRUE(checker.violation().has_value());
  EXPECT_EQ(checker.violation()->invariant, "proposal_burst_one_lease");
  EXPECT_THAT(checker.violation()->message, HasSubstr("proposals 1 and 2 for default/k"));
  EXPECT_THAT(checker.RecentEvents().back(), HasSubstr("proposal 2/2 id=2"));
}

TEST(SwarmChecker, RejectedOrChangedResubmissionBreaksProposalIdempotent) {
  {
    SwarmChecker checker;
    checker.OnProposal(Answer(1, 0, 2, Granted(1, 7)));
    checker.OnProposal(Answer(1, 1, 2, absl::FailedPreconditionError("pending")));
    ASSERT_FALSE(checker.AfterEvent(RunWorld()).ok());
    ASSERT_TRUE(checker.violation().has_value());
    EXPECT_EQ(checker.violation()->invariant, "proposal_idempotent");
    EXPECT_THAT(checker.violation()->message, HasSubstr("resubmission"));
  }
  {
    SwarmChecker checker;
    checker.OnProposal(Answer(1, 0, 2, Granted(1, 7)));
    checker.OnProposal(Answer(1, 1, 2, Granted(1, 9)));
    ASSERT_FALSE(checker.AfterEvent(RunWorld()).ok());
    EXPECT_EQ(checker.violation()->invariant, "proposal_idempotent");
    EXPECT_THAT(checker.violation()->message, HasSubstr("got lease 9"));
  }
}

// The master's real answers pass: the proposal-burst admission scenario
// (a retry granted the same lease, a burst rejected pending) under every
// swarm check.
TEST(SwarmChecker, ProposalBurstScenarioPasses) {
  absl::StatusOr<Scenario> scenario = LoadScenarioForRun(
      (testing_paths::RepoRoot() / "scenarios/admission/proposal-burst.json").string());
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  const SwarmSeedResult r = RunSwarmScenario(*scenario, SwarmCheckerOptions{});
  ASSERT_TRUE(r.passed) << FormatSwarmFailure(r, "", "heatsink-sim");
  EXPECT_EQ(r.proposals_accepted, 2);
}

TEST(Swarm, SeedRangeParsingAndUsageErrors) {
  auto range = ParseSeedRange("3..9");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->first, 3u);
  EXPECT_EQ(range->second, 9u);
  range = ParseSeedRange("7");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->first, 7u);
  EXPECT_EQ(range->second, 7u);
  EXPECT_FALSE(ParseSeedRange("9..3").ok());
  EXPECT_FALSE(ParseSeedRange("a..b").ok());
  EXPECT_FALSE(ParseSeedRange("1..9223372036854775808").ok());

  const std::string command =
      absl::StrCat("'", HEATSINK_SIM_BINARY, "' swarm --seeds 9..3 >/dev/null 2>&1");
  const int status = std::system(command.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
}

}  // namespace
}  // namespace heatsink::sim
