// File: tools/replay/cluster.h
//
// A real loopback cluster for the replay tools: one heatsink-master and
// heatsink-store processes (Cluster), and one runtime client per scenario
// client and tenant (Clients). Every process started here is stopped when
// the Cluster is destroyed, and killed with the tool on SIGKILL
// (child_process.h).
#ifndef HEATSINK_TOOLS_REPLAY_CLUSTER_H_
#define HEATSINK_TOOLS_REPLAY_CLUSTER_H_

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "core/base/check.h"
#include "core/env/clock.h"
#include "core/replication/replication_knobs.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/steady_clock.h"
#include "runtime/rpc/grpc_master_client.h"
#include "tools/replay/child_process.h"
#include "tools/replay/replay_plan.h"
#include "tools/replay/replay_run.h"

namespace heatsink::replay {

// The steady clock, ns.
int64_t SteadyNs();
// options.stop or options.halt is set.
bool Stopped(const ReplayOptions& options);
// Sleeps until `deadline_ns` (steady clock) in slices, so a stop request is
// seen within 20 ms. False when stopped.
bool SleepUntil(int64_t deadline_ns, const ReplayOptions& options);
// GET http://endpoint/metrics; the unlabelled samples as name -> value.
absl::StatusOr<std::map<std::string, double>> ScrapeMetrics(const std::string& endpoint);

// What a kill or a restart of a host's store did, as the simulator's
// Simulation::KillWorker / RestartWorker (sim/internal/simulation_ops.cc)
// would: nothing, unless the store is in the state the op changes.
enum class StoreOpOutcome {
  kDone,        // killed, or started again
  kNoStore,     // the host has no segments, so no store: nothing happens
  kNotRunning,  // kill of a store not started yet (its domain has not joined) or already killed
  kRunning,     // restart of a store that runs
};
// "killed"/"started" (by op), "no store", "not running", "running".
absl::string_view StoreOpOutcomeName(StoreOpOutcome outcome, bool kill);

// One start of a store's process, to wait for (Cluster::WaitStoreServing).
struct StoreLaunch {
  size_t store = 0;         // index in ReplayPlan::stores
  int64_t incarnation = 0;  // the store's starts and kills so far, this start included
};

// The master and stores of one replay; stops them all when destroyed.
//
// Threads: the Start*, Kill*, Restart*, SetMode and StopAll calls come from
// one thread, the one that lives as long as the processes should (a child
// dies with the thread that started it, child_process.h): the replay's main
// thread. WaitStoreServing and WaitModeApplied may run on any thread.
class Cluster {
 public:
  Cluster(const ReplayPlan& plan, const ReplayOptions& options, uint64_t seed);
  ~Cluster() { StopAll(); }
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Writes the master's config file (logs/master.conf: the plan's
  // dynamic_replication_mode, the one knob SIGHUP reloads), starts
  // heatsink-master with it and the plan's --set knobs on a free loopback
  // port and waits for its address file. UNAVAILABLE (its log named) when it
  // does not come up within start_timeout_ms.
  [[nodiscard]] absl::Status StartMaster();
  // Starts the heatsink-store of `store` and waits until the master lists
  // its segments at the new process's endpoint. Nothing when the store runs
  // already (a restart_worker before its domain joined started it).
  [[nodiscard]] absl::Status StartStore(const ReplayStore& store);

  // kill_worker: SIGKILL of the host's store and reaping it (a crash: it
  // neither unmounts nor says goodbye; the master keeps its segments until
  // its heartbeat TTL runs out, as in the simulator). Quick: no wait.
  [[nodiscard]] StoreOpOutcome KillStore(const HostId& host);
  // restart_worker: starts the host's store again from its plan entry (same
  // client id, domain and segments; it unmounts what the master still lists
  // of its previous run, then registers and mounts afresh,
  // runtime/store/store_node.h). Forks and returns: `*launch` is what to
  // wait for when the outcome is kDone. UNAVAILABLE when fork fails.
  [[nodiscard]] absl::StatusOr<StoreOpOutcome> RestartStore(const HostId& host,
                                                            StoreLaunch* launch);
  // Waits until the master lists every segment of the launch's store at
  // the endpoint that process wrote. OK at once when a later kill or start
  // of the store superseded the launch (nothing left to wait for);
  // UNAVAILABLE naming its log after start_timeout_ms; CANCELLED when
  // stopped. Thread-safe.
  [[nodiscard]] absl::Status WaitStoreServing(const StoreLaunch& launch);

  // set_knob dynamic_replication_mode: rewrites the master's config file
  // (temporary file + rename, so a reload never reads half a file) and sends
  // the master SIGHUP; it reloads the mode at once (heatsink-master
  // --config). Returns the change's sequence number for WaitModeApplied.
  // The master is up (StartMaster returned), so the signal cannot reach it
  // before it blocks SIGHUP. UNAVAILABLE when the file cannot be written or
  // the master has exited.
  [[nodiscard]] absl::StatusOr<int64_t> SetMode(DynamicReplicationMode mode);
  // Waits until the master's /metrics show `mode` (heatsink_dynamic_replication_mode),
  // or a later SetMode than `change` was made. UNAVAILABLE after
  // start_timeout_ms; CANCELLED when stopped. Thread-safe.
  [[nodiscard]] absl::Status WaitModeApplied(DynamicReplicationMode mode, int64_t change);

  // Stores first (they stop heartbeating), then the master (its decision log
  // is flushed line by line).
  void StopAll();

  const std::string& master_address() const { return master_address_; }
  const std::string& metrics_address() const { return metrics_address_; }

 private:
  // A plan store's process across kills and restarts.
  struct StoreSlot {
    std::unique_ptr<ChildProcess> process;  // null before the first start
    bool running = false;                   // started and not killed since
  };

  template <typename Fn>
  bool WaitFor(Fn condition) {
    const int64_t deadline = SteadyNs() + options_.start_timeout_ms * 1'000'000;
    while (SteadyNs() < deadline && !Stopped(options_)) {
      if (condition()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return condition();
  }
  absl::Status NotStarted(const std::string& what, ChildProcess& process);
  absl::Status NotServing(const ReplayStore& store, const std::string& log_path);
  // Forks the store's process (no wait).
  absl::StatusOr<StoreLaunch> LaunchStore(size_t index);
  std::filesystem::path EndpointFile(const ReplayStore& store) const;
  std::string LogPath(const ReplayStore& store, int64_t incarnation) const;
  // The master lists the store's segments at `endpoint`.
  bool SegmentsListed(const ReplayStore& store, const std::string& endpoint);
  int64_t Incarnation(size_t store) ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status WriteMasterConfig(DynamicReplicationMode mode);

  const ReplayPlan& plan_;
  const ReplayOptions& options_;
  const uint64_t seed_;
  const std::filesystem::path logs_;
  const std::filesystem::path master_config_;
  runtime::SteadyClock clock_;
  std::unique_ptr<ChildProcess> master_;
  // Lists segments for the waits (thread-safe); set by StartMaster.
  std::unique_ptr<runtime::GrpcMasterClient> admin_;
  std::vector<StoreSlot> slots_;            // parallel to plan_.stores
  std::map<HostId, size_t> store_of_host_;  // host -> index in plan_.stores
  std::string master_address_;
  std::string metrics_address_;
  absl::Mutex mu_;
  // Per plan store: its starts and kills so far (a wait ends when it moves).
  std::vector<int64_t> incarnations_ ABSL_GUARDED_BY(mu_);
  int64_t mode_changes_ ABSL_GUARDED_BY(mu_) = 0;
};

// One HeatsinkClient per (scenario client, tenant), made on first use.
class Clients {
 public:
  // `clock` (the process's, never null) must outlive the clients; their
  // master clients read it.
  Clients(const Clock* clock, const ReplayPlan& plan, std::string master_address)
      : clock_(clock), plan_(plan), master_address_(std::move(master_address)) {
    HS_CHECK(clock_ != nullptr);
  }

  // The client of scenario client `client` (a name the plan knows) for
  // `tenant`, connected on first use.
  absl::StatusOr<runtime::HeatsinkClient*> For(const std::string& client,
                                               const std::string& tenant);

  // Makes every client of `tenants` now and waits until its channel answers a
  // Ping, so no operation pays for connecting.
  absl::Status Warm(const std::set<std::string>& tenants);

  // Bytes of a put of `size` (one shared buffer per size).
  std::shared_ptr<const std::string> Payload(int64_t size);

 private:
  struct Entry {
    std::unique_ptr<runtime::GrpcMasterClient> master;
    std::unique_ptr<runtime::HeatsinkClient> client;
  };
  const Clock* const clock_;
  const ReplayPlan& plan_;
  const std::string master_address_;
  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, Entry> clients_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::shared_ptr<const std::string>> payloads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace heatsink::replay

#endif  // HEATSINK_TOOLS_REPLAY_CLUSTER_H_
