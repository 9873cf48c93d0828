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
#include "absl/synchronization/mutex.h"
#include "core/base/check.h"
#include "core/env/clock.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/rpc/grpc_master_client.h"
#include "tools/replay/child_process.h"
#include "tools/replay/replay_plan.h"
#include "tools/replay/replay_run.h"

namespace heatsink::replay {

// The steady clock, ns.
int64_t SteadyNs();
// options.stop is set.
bool Stopped(const ReplayOptions& options);
// Sleeps until `deadline_ns` (steady clock) in slices, so a stop request is
// seen within 20 ms. False when stopped.
bool SleepUntil(int64_t deadline_ns, const ReplayOptions& options);
// GET http://endpoint/metrics; the unlabelled samples as name -> value.
absl::StatusOr<std::map<std::string, double>> ScrapeMetrics(const std::string& endpoint);

// The master and stores of one replay; stops them all when destroyed.
class Cluster {
 public:
  Cluster(const ReplayPlan& plan, const ReplayOptions& options, uint64_t seed)
      : plan_(plan), options_(options), seed_(seed), logs_(std::filesystem::path(options.out_dir) / "logs") {}
  ~Cluster() { StopAll(); }

  // Starts heatsink-master with the plan's knobs on a free loopback port and
  // waits for its address file. UNAVAILABLE (its log named) when it does not
  // come up within start_timeout_ms.
  [[nodiscard]] absl::Status StartMaster();
  // Starts the heatsink-store of `store` and waits until the master lists
  // its segments.
  [[nodiscard]] absl::Status StartStore(const ReplayStore& store);

  // Stores first (they stop heartbeating), then the master (its decision log
  // is flushed line by line).
  void StopAll();

  const std::string& master_address() const { return master_address_; }
  const std::string& metrics_address() const { return metrics_address_; }

 private:
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

  const ReplayPlan& plan_;
  const ReplayOptions& options_;
  const uint64_t seed_;
  const std::filesystem::path logs_;
  std::unique_ptr<ChildProcess> master_;
  std::vector<std::unique_ptr<ChildProcess>> stores_;
  std::string master_address_;
  std::string metrics_address_;
  int64_t segments_expected_ = 0;
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
