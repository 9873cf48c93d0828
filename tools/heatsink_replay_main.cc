// heatsink-replay: replays a simulator scenario against a real loopback
// cluster (one heatsink-master, one heatsink-store per host with segments)
// and records what happened in the simulator's formats, so
// `heatsink-sim validate SCENARIO --runtime DIR` can measure how far the
// simulation is from the runtime (tools/replay/replay_run.h).
//
//   heatsink-replay SCENARIO --out DIR [--time-scale X] [--binaries DIR]
//       [--seed N] [--threads N] [--ops-in-flight-max N] [--hosts-max N]
//       [--run-time-max-s S] [--memory-floor-mib N] [--plan-only]
//   heatsink-replay calibrate --out FILE [--samples N] [--warmup N]
//       [--large-bytes N] [--binaries DIR]
//       measures this machine's loopback read costs and writes the simulator
//       network parameters that match them (tools/replay/calibrate.h), for
//       `heatsink-sim validate --calibration FILE`.
//
// Exit codes: 0 the replay ran; 2 an error (a scenario the runtime cannot
// honour, named by its JSON field; a process that did not start); 128 +
// signal when stopped by SIGINT or SIGTERM. Every process it started is
// stopped in each case, and killed with it on SIGKILL.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>

#include "CLI/CLI.hpp"
#include "sim/calibration.h"
#include "sim/report_format.h"
#include "sim/runner.h"
#include "tools/replay/calibrate.h"
#include "tools/replay/replay_plan.h"
#include "tools/replay/replay_run.h"
#include "tools/runtime_flags.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 2;

std::string ExecutableDir() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : self.parent_path().string();
}

// Waits for SIGINT/SIGTERM (blocked in every thread) and sets `stop`.
class SignalWatcher {
 public:
  SignalWatcher() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
    thread_ = std::thread([this] {
      const timespec slice{0, 50'000'000};
      while (!done_.load()) {
        const int signal = sigtimedwait(&set_, nullptr, &slice);
        if (signal > 0) {
          signal_.store(signal);
          stop_.store(true);
        }
      }
    });
  }
  ~SignalWatcher() {
    done_.store(true);
    thread_.join();
  }
  const std::atomic<bool>* stop() const { return &stop_; }
  int signal() const { return signal_.load(); }

 private:
  sigset_t set_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> done_{false};
  std::atomic<int> signal_{0};
  std::thread thread_;
};

int Calibrate(int argc, char** argv, const SignalWatcher& signals) {
  using namespace heatsink;
  replay::CalibrateOptions options;
  options.binaries_dir = ExecutableDir();
  options.stop = signals.stop();
  std::string out;
  CLI::App app{
      "heatsink-replay calibrate: time GetReplicaList and whole reads of a small and a large "
      "object on a loopback cluster (one heatsink-master, two heatsink-store), and write the "
      "simulator network parameters that give the same medians (control latency, transfer "
      "overhead, link bandwidth; sim/calibration.h) for `heatsink-sim validate --calibration`.",
      "heatsink-replay calibrate"};
  app.add_option("--out", out, "calibration JSON file to write")->required();
  app.add_option("--samples", options.samples, "timed rounds")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--warmup", options.warmup, "untimed rounds first")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--large-bytes", options.large_bytes, "size of the large object")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{64} << 10, int64_t{128} << 20));
  app.add_option("--round-gap-ms", options.round_gap_ms,
                 "idle time before each round, so the costs of waking sleeping processes (as "
                 "under a sparse load) are measured too")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000));
  app.add_option("--binaries", options.binaries_dir,
                 "directory of heatsink-master and heatsink-store (default: this program's)");
  CLI11_PARSE(app, argc, argv);
  options.logs_dir = out + ".logs";
  absl::StatusOr<sim::Calibration> c;
  try {
    c = replay::RunCalibration(options);
  } catch (const std::exception& e) {  // std::filesystem, allocation: the boundary
    c = absl::InternalError(e.what());
  }
  if (signals.signal() != 0) {
    std::cerr << "heatsink-replay calibrate: stopped by signal " << signals.signal() << "\n";
    return 128 + signals.signal();
  }
  if (!c.ok()) {
    std::cerr << "heatsink-replay calibrate: " << c.status().message() << "\n";
    return kExitError;
  }
  if (absl::Status st = sim::WriteTextFile(out, sim::CalibrationJson(*c)); !st.ok()) {
    std::cerr << "heatsink-replay calibrate: " << st.message() << "\n";
    return kExitError;
  }
  std::cout << "heatsink-replay calibrate: " << c->samples << " rounds: GetReplicaList "
            << c->rpc_round_trip_p50_ns / 1000 << " us, read of " << c->small_bytes << " B "
            << c->read_small_p50_ns / 1000 << " us, of " << c->large_bytes << " B "
            << c->read_large_p50_ns / 1000 << " us (medians) -> control latency "
            << c->control_latency_ns / 1000 << " us, transfer overhead "
            << c->transfer_overhead_ns / 1000 << " us, link " << c->link_bytes_per_s / 1'000'000
            << " MB/s; written: " << out << "\n";
  return kExitOk;
}

// Loads and plans the scenario, then runs it (or prints the plan).
int PlanAndRun(const std::string& scenario_path, const heatsink::replay::ReplayOptions& options,
               heatsink::replay::ReplayLimits limits, bool plan_only, SignalWatcher& signals) {
  using namespace heatsink;
  absl::StatusOr<sim::Scenario> scenario = sim::LoadScenarioForRun(scenario_path);
  if (!scenario.ok()) {
    std::cerr << "heatsink-replay: " << scenario.status().message() << "\n";
    return kExitError;
  }
  absl::StatusOr<int64_t> memory = replay::ReadMemAvailableBytes("/proc/meminfo");
  if (!memory.ok()) {
    std::cerr << "heatsink-replay: " << memory.status().message() << "\n";
    return kExitError;
  }
  limits.memory_available_bytes = *memory;
  limits.seed = options.seed.value_or(scenario->seed);
  absl::StatusOr<replay::ReplayPlan> plan = replay::MakeReplayPlan(*scenario, limits);
  if (!plan.ok()) {
    std::cerr << "heatsink-replay: refused: " << plan.status().message() << "\n";
    return kExitError;
  }
  if (plan_only) {
    std::cout << "heatsink-replay: " << scenario->name << ": 1 heatsink-master ("
              << plan->master_sets.size() << " knobs), " << plan->stores.size()
              << " heatsink-store, " << plan->segment_bytes_total / (int64_t{1} << 20)
              << " MiB of segments (committed on write), "
              << plan->put_bytes_distinct / (int64_t{1} << 20) << " MiB of objects put, "
              << plan->clients.size() << " clients\n";
    return kExitOk;
  }
  absl::Status status;
  try {
    status = replay::RunReplay(*scenario, *plan, options);
  } catch (const std::exception& e) {  // std::filesystem, allocation: the boundary
    status = absl::InternalError(e.what());
  }
  if (signals.signal() != 0) {
    std::cerr << "heatsink-replay: stopped by signal " << signals.signal()
              << "; every process it started was stopped\n";
    return 128 + signals.signal();
  }
  if (!status.ok()) {
    std::cerr << "heatsink-replay: " << status.message() << "\n";
    return kExitError;
  }
  std::cout << "heatsink-replay: done; outputs in " << options.out_dir
            << " (decisions.jsonl, reads.jsonl, summary.json, logs/)\n";
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace heatsink;
  SignalWatcher signals;  // before any other thread starts
  if (argc > 1 && std::string(argv[1]) == "calibrate")
    return Calibrate(argc - 1, argv + 1, signals);
  std::string scenario_path;
  replay::ReplayOptions options;
  replay::ReplayLimits limits;
  uint64_t seed = 0;
  int64_t run_time_max_s = 30 * 60;
  options.binaries_dir = ExecutableDir();

  CLI::App app{
      "heatsink-replay: replay a scenario against a real loopback cluster (heatsink-master and "
      "one heatsink-store per host) through the client library, in real time; writes "
      "decisions.jsonl, reads.jsonl and summary.json for `heatsink-sim validate`. "
      "`heatsink-replay calibrate --help`: measure this machine's read costs for the "
      "simulator."};
  app.add_option("scenario", scenario_path, "scenario JSON file")->required();
  app.add_option("--out", options.out_dir, "output directory")->required();
  app.add_option("--time-scale", options.time_scale,
                 "wall time = simulated time x this; the master's heat window and replication periods are "
                 "stretched by it and the QPS threshold divided by it")
      ->capture_default_str()
      ->check(CLI::Range(0.01, 1000.0));
  app.add_option("--binaries", options.binaries_dir,
                 "directory of heatsink-master and heatsink-store (default: this program's)");
  CLI::Option* seed_option = app.add_option("--seed", seed, "overrides the scenario's seed");
  app.add_option("--threads", options.threads, "threads issuing operations")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  app.add_option("--ops-in-flight-max", options.ops_in_flight_max,
                 "operations queued or running at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 65536));
  app.add_option("--hosts-max", limits.hosts_max, "most hosts (store processes) started")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--run-time-max-s", run_time_max_s,
                 "longest run in wall time (scenario duration x time scale)")
      ->capture_default_str()
      ->check(CLI::Range(1, 24 * 3600));
  int64_t memory_floor_mib = options.memory_floor_bytes >> 20;
  app.add_option("--memory-floor-mib", memory_floor_mib,
                 "stop the run (exit 2, outputs kept) when the machine's available memory falls "
                 "below this: the stores take RAM as data lands in their segments")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  app.add_option("--progress-interval-ms", options.progress_interval_ms,
                 "a progress line on stderr this often (0: none)")
      ->capture_default_str();
  bool plan_only = false;
  app.add_flag("--plan-only", plan_only,
               "check the scenario and print the processes it would start, then exit");
  bool keep_deadlock_detection = false;
  tools::AddDeadlockDetectionFlag(app, keep_deadlock_detection);
  CLI11_PARSE(app, argc, argv);
  tools::ApplyDeadlockDetection(keep_deadlock_detection);
  if (seed_option->count() > 0) options.seed = seed;
  options.memory_floor_bytes = memory_floor_mib << 20;
  options.stop = signals.stop();
  limits.time_scale = options.time_scale;
  limits.run_time_max_ns = run_time_max_s * kNsPerSec;

  return PlanAndRun(scenario_path, options, limits, plan_only, signals);
}
