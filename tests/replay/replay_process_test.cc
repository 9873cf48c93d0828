// Process tests of heatsink-replay (tools/replay/replay_run.h) with the real
// binaries on loopback:
//
//   - a small, fast scenario (tests/replay/replay-small.json, 4 s) is
//     replayed against a master and four stores; its outputs exist and parse
//     (every reads.jsonl line, the master's decision log, summary.json), and
//     `heatsink-sim validate` finds the accepted admissions of the real
//     master close to the simulation's (Jaccard at least kJaccardMin);
//   - the tool stopped mid-run by SIGTERM, and killed by SIGKILL, leaves no
//     process it started and no port listening;
//   - a scenario with a store crash and restart and a mode switch
//     (tests/replay/replay-faults.json, 4 s) kills the store's process and
//     starts it again, which then serves copies and reads; the master decides
//     nothing before enforce is switched on and admits after; summary.json
//     counts the kill, the restart and the switch; and no process or port is
//     left at the end.
#include <signal.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/replication/decision.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "sim/calibration.h"
#include "sim/decision_log.h"
#include "tools/replay/child_process.h"

namespace heatsink::replay {
namespace {

namespace fs = std::filesystem;

// The replay-small scenario admits 7 keys into domain b in the simulation.
// Replays on this machine (2 cores shared with other builds, Debug) agreed on
// 6 or 7 of them: the key the simulation admits last (hot-5, at 3.09 s of a
// 4 s run) crosses its hit count within a few reads of the end, so a replay
// whose reads run a few ms late admits it after the run ends or not at all.
// Jaccard 6/7 = 0.857 is what losing that one key costs; 0.7 leaves room
// for one more such key and fails when the decisions diverge beyond that.
constexpr double kJaccardMin = 0.7;

std::string Tool(const std::string& name) { return std::string(HEATSINK_TOOLS_DIR) + "/" + name; }
std::string Scenario() {
  return std::string(HEATSINK_SOURCE_DIR) + "/tests/replay/replay-small.json";
}
std::string FaultsScenario() {
  return std::string(HEATSINK_SOURCE_DIR) + "/tests/replay/replay-faults.json";
}

std::vector<std::string> ReadLines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

template <typename Fn>
bool WaitFor(Fn condition, int64_t timeout_ms = 30'000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return condition();
}

// "S" field of /proc/PID/stat and its parent; false when the process is gone.
bool ProcStat(pid_t pid, char* state, pid_t* parent) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t close = text.rfind(')');
  if (close == std::string::npos || close + 4 > text.size()) return false;
  *state = text[close + 2];
  std::vector<std::string> rest = absl::StrSplit(text.substr(close + 4), ' ');
  int p = 0;
  if (rest.empty() || !absl::SimpleAtoi(rest[0], &p)) return false;
  *parent = p;
  return true;
}

// A process is gone when it does not exist or is a zombie (it runs nothing
// and holds no socket).
bool Gone(pid_t pid) {
  char state = 0;
  pid_t parent = 0;
  return !ProcStat(pid, &state, &parent) || state == 'Z';
}

// The cluster processes among a replay's children: heatsink-master and
// heatsink-store once they run their own program. A child still between
// fork and exec, or a helper the sanitizers' runtime clones (LeakSanitizer's
// tracer at the replay's exit), is not one.
std::vector<pid_t> ChildrenOf(pid_t parent_pid) {
  std::vector<pid_t> out;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(e.path().filename().string(), &pid)) continue;
    char state = 0;
    pid_t parent = 0;
    if (!ProcStat(pid, &state, &parent) || parent != parent_pid || state == 'Z') continue;
    std::error_code ec;
    const std::string exe = fs::read_symlink(absl::StrCat("/proc/", pid, "/exe"), ec).string();
    if (absl::EndsWith(exe, "/heatsink-master") || absl::EndsWith(exe, "/heatsink-store")) {
      out.push_back(pid);
    }
  }
  return out;
}

// Socket inodes a process holds.
std::set<std::string> SocketInodes(pid_t pid) {
  std::set<std::string> out;
  std::error_code ec;
  for (const fs::directory_entry& e :
       fs::directory_iterator(absl::StrCat("/proc/", pid, "/fd"), ec)) {
    const std::string target = fs::read_symlink(e.path(), ec).string();
    if (absl::StartsWith(target, "socket:[")) out.insert(target.substr(8, target.size() - 9));
  }
  return out;
}

// Listening TCP ports, with the inode of each socket.
std::vector<std::pair<int, std::string>> ListeningPorts() {
  std::vector<std::pair<int, std::string>> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    for (const std::string& line : ReadLines(table)) {
      std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (f.size() < 10 || f[3] != "0A") continue;  // 0A: LISTEN
      const size_t colon = f[1].rfind(':');
      if (colon == std::string::npos) continue;
      int port = 0;
      if (!absl::SimpleHexAtoi(f[1].substr(colon + 1), &port)) continue;
      out.emplace_back(port, f[9]);
    }
  }
  return out;
}

class ReplayProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("heatsink_replay_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<ChildProcess> StartReplay(const std::string& time_scale,
                                            const std::string& scenario = Scenario(),
                                            const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {
        Tool("heatsink-replay"),  scenario,   "--out",      (dir_ / "out").string(),
        "--time-scale",           time_scale, "--binaries", HEATSINK_TOOLS_DIR,
        "--progress-interval-ms", "0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    absl::StatusOr<std::unique_ptr<ChildProcess>> p =
        ChildProcess::Start(argv, (dir_ / "replay.log").string());
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *std::move(p) : nullptr;
  }

  // `heatsink-sim diff` of the simulation's decision log against the
  // replay's: with raw steady-clock times no record matches; placed on the
  // scenario's time line (--b-replay-summary) with a tolerance and the ids the
  // runtime numbers its own way ignored, most accepted admissions match.
  void ExpectDiffMatchesOnTheScenarioTimeLine(std::vector<sim::LoggedDecision> replay_log) {
    const fs::path& dir = dir_;
    const fs::path sim_out = dir / "sim-run";
    absl::StatusOr<std::unique_ptr<ChildProcess>> run =
        ChildProcess::Start({Tool("heatsink-sim"), "run", Scenario(), "--out", sim_out.string()},
                            (dir / "sim-run.log").string());
    ASSERT_TRUE(run.ok()) << run.status();
    ASSERT_EQ((*run)->Wait(120'000), 0);
    absl::StatusOr<std::vector<sim::LoggedDecision>> sim_log =
        sim::ReadDecisionLogFile((sim_out / "decisions.jsonl").string());
    ASSERT_TRUE(sim_log.ok()) << sim_log.status();
    int64_t sim_accepted = 0;
    for (const sim::LoggedDecision& d : *sim_log) {
      sim_accepted += d.record.outcome == DecisionOutcome::kAccepted ? 1 : 0;
    }
    ASSERT_GT(sim_accepted, 0);
    const auto matched_accepted = [&](const sim::DecisionDiff& diff) {
      int64_t unmatched = 0;
      for (const sim::DecisionChange& c : diff.removed) {
        unmatched += c.a->record.outcome == DecisionOutcome::kAccepted ? 1 : 0;
      }
      return sim_accepted - unmatched;
    };
    EXPECT_EQ(matched_accepted(sim::DiffDecisionLogs(*sim_log, replay_log)), 0);
    std::ifstream summary_file(dir / "out" / "summary.json");
    const nlohmann::json summary = nlohmann::json::parse(summary_file, nullptr, false);
    ASSERT_FALSE(summary.is_discarded());
    sim::PlaceOnScenarioTime(&replay_log, summary["t0_steady_ns"].get<int64_t>(),
                             summary["time_scale"].get<double>());
    sim::DecisionDiffOptions options;
    options.time_tolerance_ns = 500'000'000;
    options.ignored_fields = {"version", "lease_id"};
    const int64_t matched = matched_accepted(sim::DiffDecisionLogs(*sim_log, replay_log, options));
    EXPECT_GE(static_cast<double>(matched), kJaccardMin * static_cast<double>(sim_accepted))
        << matched << " of " << sim_accepted;
    // The command line does the same and says how the logs compare.
    absl::StatusOr<std::unique_ptr<ChildProcess>> diff =
        ChildProcess::Start({Tool("heatsink-sim"), "diff", (sim_out / "decisions.jsonl").string(),
                             (dir / "out" / "decisions.jsonl").string(), "--b-replay-summary",
                             (dir / "out" / "summary.json").string(), "--time-tolerance-ms", "500",
                             "--ignore", "version,lease_id"},
                            (dir / "diff.log").string());
    ASSERT_TRUE(diff.ok()) << diff.status();
    const int rc = (*diff)->Wait(60'000);
    EXPECT_TRUE(rc == 0 || rc == 1) << rc;
    std::ifstream diff_log(dir / "diff.log");
    const std::string text((std::istreambuf_iterator<char>(diff_log)), {});
    EXPECT_TRUE(absl::StrContains(text, "decision logs")) << text;
  }

  // `heatsink-sim validate SCENARIO` against the replay's outputs (DIR/out):
  // its JSON, or nothing when it does not run, fails or writes no JSON (the
  // failure reported).
  std::optional<nlohmann::json> Validate(const std::string& scenario) {
    absl::StatusOr<std::unique_ptr<ChildProcess>> validate =
        ChildProcess::Start({Tool("heatsink-sim"), "validate", scenario, "--runtime",
                             (dir_ / "out").string(), "--out", (dir_ / "validate.json").string()},
                            (dir_ / "validate.log").string());
    if (!validate.ok()) {
      ADD_FAILURE() << validate.status();
      return std::nullopt;
    }
    if ((*validate)->Wait(120'000) != 0) {
      ADD_FAILURE() << "heatsink-sim validate failed:\n" << Log("validate.log");
      return std::nullopt;
    }
    std::ifstream in(dir_ / "validate.json");
    nlohmann::json v = nlohmann::json::parse(in, nullptr, false);
    if (v.is_discarded()) {
      ADD_FAILURE() << "validate.json does not parse";
      return std::nullopt;
    }
    return v;
  }

  std::string Log(const std::string& name) {
    std::string out;
    for (const std::string& line : ReadLines(dir_ / name)) absl::StrAppend(&out, line, "\n");
    return out;
  }

  // Stops the replay with `signal` once its cluster serves reads; checks that
  // no process it started and no port they listened on is left.
  void StopMidRunLeavesNothing(int signal) {
    std::unique_ptr<ChildProcess> replay = StartReplay("5");
    ASSERT_NE(replay, nullptr);
    const fs::path reads = dir_ / "out" / "reads.jsonl";
    ASSERT_TRUE(WaitFor([&] { return ReadLines(reads).size() >= 5; }))
        << "no reads; replay log:\n" << Log("replay.log");
    const std::vector<pid_t> children = ChildrenOf(replay->pid());
    ASSERT_EQ(children.size(), 5u) << "a master and four stores";
    std::set<std::string> inodes;
    for (pid_t pid : children) {
      const std::set<std::string> s = SocketInodes(pid);
      inodes.insert(s.begin(), s.end());
    }
    std::set<int> ports;
    for (const auto& [port, inode] : ListeningPorts()) {
      if (inodes.count(inode) > 0) ports.insert(port);
    }
    // The master's gRPC and metrics ports, each store's data endpoint and
    // data service.
    ASSERT_GE(ports.size(), 10u);
    replay->Signal(signal);
    EXPECT_EQ(replay->Wait(30'000), 128 + signal) << Log("replay.log");
    ExpectGoneWithTheirPorts(children, ports);
  }

  // Every process of `processes` exits and no port of `ports` listens any
  // more; whatever failed, nothing is left behind for the next test.
  static void ExpectGoneWithTheirPorts(const std::vector<pid_t>& processes,
                                       const std::set<int>& ports) {
    for (pid_t pid : processes) EXPECT_TRUE(WaitFor([&] { return Gone(pid); })) << "pid " << pid;
    EXPECT_TRUE(WaitFor([&] {
      for (const auto& [port, inode] : ListeningPorts()) {
        if (ports.count(port) > 0) return false;
      }
      return true;
    })) << "a port the cluster listened on still listens";
    for (pid_t pid : processes) {
      if (!Gone(pid)) ::kill(pid, SIGKILL);
    }
  }

  fs::path dir_;
};

TEST_F(ReplayProcessTest, ReplaysASmallScenarioAndItsAdmissionsMatchTheSimulation) {
  std::unique_ptr<ChildProcess> replay = StartReplay("1");
  ASSERT_NE(replay, nullptr);
  ASSERT_EQ(replay->Wait(120'000), 0) << Log("replay.log");
  const fs::path out = dir_ / "out";

  std::ifstream summary_file(out / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file, nullptr, false);
  ASSERT_FALSE(summary.is_discarded());
  const int64_t reads = summary["reads"]["count"].get<int64_t>();
  EXPECT_GT(reads, 0);
  EXPECT_GT(summary["admissions"]["accepted"].get<int64_t>(), 0);
  EXPECT_GT(summary["bytes_read"]["cross_domain"].get<int64_t>(), 0);
  // The 40 objects went in as the scenario says: batch puts of 8 keys.
  EXPECT_EQ(summary["ops"]["puts"].get<int64_t>(), 40) << summary["ops"].dump();
  EXPECT_EQ(summary["ops"]["put_calls"].get<int64_t>(), 5) << summary["ops"].dump();

  int64_t ok_lines = 0;
  const std::vector<std::string> lines = ReadLines(out / "reads.jsonl");
  for (const std::string& line : lines) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << line;
    if (j["status"] == "OK") {
      ++ok_lines;
      EXPECT_EQ(j["requester_domain"], "b") << line;
      EXPECT_GT(j["latency_ns"].get<int64_t>(), 0) << line;
    }
  }
  EXPECT_EQ(ok_lines, reads);
  EXPECT_EQ(static_cast<int64_t>(lines.size()),
            reads + summary["reads"]["misses"].get<int64_t>() +
                summary["reads"]["failed"].get<int64_t>());
  absl::StatusOr<std::vector<sim::LoggedDecision>> decisions =
      sim::ReadDecisionLogFile((out / "decisions.jsonl").string());
  ASSERT_TRUE(decisions.ok()) << decisions.status();

  const std::optional<nlohmann::json> v = Validate(Scenario());
  ASSERT_TRUE(v.has_value());
  EXPECT_GE((*v)["admissions"]["jaccard"].get<double>(), kJaccardMin) << Log("validate.log");
  EXPECT_GT((*v)["admission_lag_ns"]["matched"].get<int64_t>(), 0);

  ExpectDiffMatchesOnTheScenarioTimeLine(*decisions);
}

// replay-faults.json: observe until set_knob switches to enforce at 1.5 s;
// the store of b-1 is killed at 2 s and restarted at 2.5 s; key "late" is
// read from 2.6 s until it is admitted into domain b, onto b-1's segment.
// Kills and restarts that change nothing (host bare has no store, a-1 runs,
// b-1 is down) are listed with their outcome.
TEST_F(ReplayProcessTest, KillsAndRestartsAStoreAndSwitchesTheModeMidRun) {
  constexpr int64_t kSwitchNs = 1'500'000'000;
  constexpr int64_t kKillNs = 2'000'000'000;
  constexpr int64_t kRestartNs = 2'500'000'000;
  std::unique_ptr<ChildProcess> replay = StartReplay("1", FaultsScenario());
  ASSERT_NE(replay, nullptr);
  // While it runs: every process it started and every port they listened on.
  std::set<pid_t> processes;
  std::set<int> ports;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (replay->Running() && std::chrono::steady_clock::now() < deadline) {
    const std::vector<pid_t> children = ChildrenOf(replay->pid());
    processes.insert(children.begin(), children.end());
    std::set<std::string> inodes;
    for (pid_t pid : children) {
      const std::set<std::string> s = SocketInodes(pid);
      inodes.insert(s.begin(), s.end());
    }
    for (const auto& [port, inode] : ListeningPorts()) {
      if (inodes.count(inode) > 0) ports.insert(port);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(replay->Wait(30'000), 0) << Log("replay.log");
  const fs::path out = dir_ / "out";

  // The master, four stores and b-1's second store process; the ports of the
  // master (gRPC, metrics) and of each store process (data, data service).
  EXPECT_EQ(processes.size(), 6u);
  EXPECT_GE(ports.size(), 12u);
  ExpectGoneWithTheirPorts(std::vector<pid_t>(processes.begin(), processes.end()), ports);

  std::ifstream summary_file(out / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file, nullptr, false);
  ASSERT_FALSE(summary.is_discarded());
  const nlohmann::json& cluster_ops = summary["cluster_ops"];
  EXPECT_EQ(cluster_ops["store_kills"], 1) << cluster_ops.dump();
  EXPECT_EQ(cluster_ops["store_restarts"], 1) << cluster_ops.dump();
  EXPECT_EQ(cluster_ops["mode_changes"], 1) << cluster_ops.dump();
  // The simulator's counters, by its rules: the restart of host bare (no
  // store) counts, the second kill of b-1 (down) does not.
  EXPECT_EQ(summary["metrics"]["sim_worker_crashes_total"], 1);
  EXPECT_EQ(summary["metrics"]["sim_worker_restarts_total"], 2);
  EXPECT_EQ(summary["metrics"]["sim_mode_changes_total"], 1);
  // Every op with its outcome, in time order.
  const std::vector<std::tuple<int64_t, std::string, std::string, std::string>> expected = {
      {1'000'000'000, "kill_worker", "bare", "no store"},
      {1'100'000'000, "restart_worker", "bare", "no store"},
      {1'200'000'000, "restart_worker", "a-1", "running"},
      {kSwitchNs, "set_knob", "dynamic_replication_mode=enforce", "set"},
      {kKillNs, "kill_worker", "b-1", "killed"},
      {2'200'000'000, "kill_worker", "b-1", "not running"},
      {kRestartNs, "restart_worker", "b-1", "started"}};
  const nlohmann::json& ops_log = cluster_ops["log"];
  ASSERT_EQ(ops_log.size(), expected.size()) << cluster_ops.dump();
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& [t, op, target, outcome] = expected[i];
    EXPECT_EQ(ops_log[i]["t_ns"], t) << ops_log[i].dump();
    EXPECT_EQ(ops_log[i]["op"], op) << ops_log[i].dump();
    EXPECT_EQ(ops_log[i]["target"], target) << ops_log[i].dump();
    EXPECT_EQ(ops_log[i]["outcome"], outcome) << ops_log[i].dump();
  }
  // The master showed the new mode, and listed b-1's segments again at the
  // restarted process's endpoint.
  EXPECT_TRUE(ops_log[3]["settled_after_ns"].is_number()) << ops_log[3].dump();
  ASSERT_TRUE(ops_log[6]["settled_after_ns"].is_number()) << ops_log[6].dump();
  const int64_t restarted_after_ns = ops_log[6]["settled_after_ns"].get<int64_t>();
  EXPECT_TRUE(fs::exists(out / "logs" / "b-1.log"));
  EXPECT_NE(Log("out/logs/b-1.restart-1.log").find("host b-1"), std::string::npos);
  EXPECT_NE(Log("out/logs/master.log").find("dynamic_replication_mode observe -> enforce"),
            std::string::npos)
      << Log("out/logs/master.log");

  // The mode switch: would_propose only before it, accepted after, among them
  // key "late", after the restart.
  absl::StatusOr<std::vector<sim::LoggedDecision>> decisions =
      sim::ReadDecisionLogFile((out / "decisions.jsonl").string());
  ASSERT_TRUE(decisions.ok()) << decisions.status();
  const int64_t t0 = summary["t0_steady_ns"].get<int64_t>();
  int64_t proposed_before = 0;
  int64_t accepted_after = 0;
  bool late_accepted = false;
  for (const sim::LoggedDecision& d : *decisions) {
    const bool before = d.record.t_ns - t0 < kSwitchNs;
    if (before) {
      EXPECT_NE(d.record.outcome, DecisionOutcome::kAccepted) << d.text;
      proposed_before += d.record.outcome == DecisionOutcome::kWouldPropose ? 1 : 0;
    } else if (d.record.outcome == DecisionOutcome::kAccepted) {
      ++accepted_after;
      late_accepted = late_accepted || d.record.key == "late";
    }
  }
  EXPECT_GT(proposed_before, 0);
  EXPECT_GT(accepted_after, 0);
  EXPECT_TRUE(late_accepted);

  // Reads fail only while b-1 is down (they chose its replicas); after the
  // restart the store serves "late" from its copy.
  int64_t served_by_restarted = 0;
  for (const std::string& text : ReadLines(out / "reads.jsonl")) {
    const nlohmann::json r = nlohmann::json::parse(text, nullptr, false);
    ASSERT_FALSE(r.is_discarded()) << text;
    const int64_t t = r["t_ns"].get<int64_t>();
    if (r["status"] != "OK") {
      EXPECT_EQ(r["status"], "UNAVAILABLE") << text;
      EXPECT_GE(t, kKillNs) << text;
      EXPECT_LT(t, kRestartNs + restarted_after_ns + 100'000'000) << text;
    } else if (r["served_host"] == "b-1" && t > kRestartNs) {
      ++served_by_restarted;
    }
  }
  EXPECT_GT(served_by_restarted, 0);

  // The simulation decides alike. The run is 4 s of real time, so a key
  // that crosses its hit count within a few reads of a window's edge (hot-5
  // at 3.09 s, or a key just below it) can fall either way: one such key
  // each way gives 4/6.
  const std::optional<nlohmann::json> v = Validate(FaultsScenario());
  ASSERT_TRUE(v.has_value());
  EXPECT_GE((*v)["admissions"]["jaccard"].get<double>(), 0.6) << Log("validate.log");
}

// The machine's available memory is read with every sample: below the floor
// the run stops (here at once: no machine has the floor asked for), says
// why, and keeps the outputs of what ran.
TEST_F(ReplayProcessTest, ARunBelowTheMemoryFloorStopsAndKeepsItsOutputs) {
  std::unique_ptr<ChildProcess> replay =
      StartReplay("1", Scenario(), {"--memory-floor-mib", "100000000"});
  ASSERT_NE(replay, nullptr);
  EXPECT_EQ(replay->Wait(60'000), 2) << Log("replay.log");
  const std::string log = Log("replay.log");
  EXPECT_NE(log.find("below the floor of 100000000 MiB (--memory-floor-mib)"), std::string::npos)
      << log;
  std::ifstream summary_file(dir_ / "out" / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file, nullptr, false);
  ASSERT_FALSE(summary.is_discarded()) << log;
  // Stopped within about a second of a 4 s run.
  EXPECT_LT(summary["ops"]["issued"].get<int64_t>(), 450) << summary["ops"].dump();
  EXPECT_TRUE(fs::exists(dir_ / "out" / "decisions.jsonl"));
}

TEST_F(ReplayProcessTest, SigtermMidRunStopsEveryProcessAndPort) { StopMidRunLeavesNothing(SIGTERM); }

TEST_F(ReplayProcessTest, SigkillMidRunTakesEveryProcessAndPortWithIt) {
  StopMidRunLeavesNothing(SIGKILL);
}

TEST_F(ReplayProcessTest, AScenarioItCannotHonourIsRefusedBeforeAnythingStarts) {
  const fs::path scenario = dir_ / "numa.json";
  std::ofstream(scenario) << R"({"name": "numa", "duration_s": 1,
    "topology": {"domains": [{"name": "a", "hosts": [{"name": "h",
      "numa_nodes": [{"id": 0}, {"id": 1}],
      "segments": [{"name": "m", "capacity_bytes": "1MiB"}]}]}]}})";
  absl::StatusOr<std::unique_ptr<ChildProcess>> p = ChildProcess::Start(
      {Tool("heatsink-replay"), scenario.string(), "--out", (dir_ / "out").string()},
      (dir_ / "replay.log").string());
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*p)->Wait(30'000), 2);
  EXPECT_NE(Log("replay.log").find("$.topology.domains[0].hosts.numa_nodes"), std::string::npos)
      << Log("replay.log");
  EXPECT_FALSE(fs::exists(dir_ / "out" / "logs")) << "nothing was started";
}

// Processes whose command line mentions `needle` (the test's directory).
std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(e.path().filename().string(), &pid)) continue;
    std::ifstream in(e.path() / "cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    if (cmdline.find(needle) != std::string::npos && pid != getpid()) out.push_back(pid);
  }
  return out;
}

TEST_F(ReplayProcessTest, CalibrateMeasuresTheLoopbackAndLeavesNothingRunning) {
  const fs::path cal = dir_ / "cal.json";
  absl::StatusOr<std::unique_ptr<ChildProcess>> p = ChildProcess::Start(
      {Tool("heatsink-replay"), "calibrate", "--out", cal.string(), "--samples", "20", "--warmup",
       "5", "--large-bytes", "4194304", "--binaries", HEATSINK_TOOLS_DIR},
      (dir_ / "calibrate.log").string());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ((*p)->Wait(120'000), 0) << Log("calibrate.log");
  const absl::StatusOr<sim::Calibration> c = sim::ReadCalibrationFile(cal.string());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->samples, 20);
  EXPECT_EQ(c->large_bytes, 4194304);
  EXPECT_GT(c->rpc_round_trip_p50_ns, 0);
  EXPECT_GT(c->read_large_p50_ns, c->read_small_p50_ns);
  EXPECT_GT(c->link_bytes_per_s, 0);
  EXPECT_NE(Log("calibrate.log").find("link"), std::string::npos);
  // The master and the two stores were stopped (their logs are under the
  // test's directory, so their command lines name it).
  EXPECT_TRUE(WaitFor([&] { return ProcessesMentioning(dir_.string()).empty(); }));
  // A bad option is refused before anything starts.
  absl::StatusOr<std::unique_ptr<ChildProcess>> bad = ChildProcess::Start(
      {Tool("heatsink-replay"), "calibrate", "--out", cal.string(), "--samples", "0"},
      (dir_ / "bad.log").string());
  ASSERT_TRUE(bad.ok());
  EXPECT_NE((*bad)->Wait(30'000), 0);
  EXPECT_NE(Log("bad.log").find("--samples"), std::string::npos) << Log("bad.log");
}

}  // namespace
}  // namespace heatsink::replay
