#include "tools/replay/replay_run.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/env/rng.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/steady_clock.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/transport/socket.h"
#include "sim/decision_log.h"
#include "sim/sim_env.h"
#include "sim/workloads.h"
#include "tools/replay/child_process.h"
#include "tools/replay/cluster.h"
#include "tools/replay/cluster_ops.h"
#include "tools/replay/replay_stats.h"

namespace heatsink::replay {
namespace {

namespace fs = std::filesystem;

struct DueOp {
  sim::SimOp op;
  int64_t due_ns = 0;  // steady clock
  // When set, the pool runs this instead of the op: the wait of a cluster
  // op the dispatcher carried out (cluster_ops.h).
  std::function<void()> task;
};

// A read the simulator's clients would try again: the master answered the
// lookup UNAVAILABLE (the object is still being put, or the master is
// recovering), and the client asks again after read_retry_ms
// (sim/internal/simulation_reads.cc). A read of a chosen replica that fails
// (its store was killed: the connection is refused) is not tried again, in
// either world; the runtime client reports it as UNAVAILABLE too, so the
// master's words tell the two apart.
bool MasterAsksToRetry(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable &&
         (absl::StrContains(status.message(), "is still being put") ||
          absl::StartsWith(status.message(), "master_recovering"));
}

// A bounded FIFO between the dispatcher and the pool.
class OpQueue {
 public:
  explicit OpQueue(size_t capacity) : capacity_(capacity) {}
  // Blocks while full; false when stopped.
  bool Push(DueOp op, const ReplayOptions& options) {
    std::unique_lock lock(mu_);
    while (queue_.size() >= capacity_) {
      if (Stopped(options)) return false;
      not_full_.wait_for(lock, std::chrono::milliseconds(20));
    }
    queue_.push_back(std::move(op));
    not_empty_.notify_one();
    return true;
  }
  // False once closed and empty.
  bool Pop(DueOp* op) {
    std::unique_lock lock(mu_);
    not_empty_.wait(lock, [&] { return closed_ || !queue_.empty(); });
    if (queue_.empty()) return false;
    *op = std::move(queue_.front());
    queue_.pop_front();
    not_full_.notify_one();
    return true;
  }
  void Close() {
    std::lock_guard lock(mu_);
    closed_ = true;
    not_empty_.notify_all();
  }
  void Clear() {
    std::lock_guard lock(mu_);
    queue_.clear();
    not_full_.notify_all();
  }

 private:
  const size_t capacity_;
  std::mutex mu_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<DueOp> queue_;
  bool closed_ = false;
};

// The buffer the reads of this operation thread land in (GetInto), grown to
// the largest object the thread has read and sized to the scenario's largest
// before time 0: a read then pays no allocation and no page fault, as a
// serving engine reading into its own registered memory (and as `heatsink-
// replay calibrate` reads). One lookup per read, so the heat the master
// counts is the scenario's.
std::vector<uint8_t>& ThreadReadBuffer() {
  thread_local std::vector<uint8_t> buffer;
  return buffer;
}

class Executor {
 public:
  Executor(const ReplayPlan& plan, Clients* clients, ReplayRecorder* recorder, int64_t t0_ns,
           double time_scale)
      : plan_(plan), clients_(clients), recorder_(recorder), t0_ns_(t0_ns),
        time_scale_(time_scale) {}

  void Run(const DueOp& due) {
    const sim::SimOp& op = due.op;
    const int64_t start = SteadyNs();
    recorder_->RecordLag(std::max<int64_t>(0, start - due.due_ns));
    absl::StatusOr<runtime::HeatsinkClient*> client = clients_->For(op.client, op.tenant);
    if (!client.ok()) {
      recorder_->RecordOpFailure(op, client.status());
      return;
    }
    switch (op.kind) {
      case sim::SimOpKind::kPut:
        Put(**client, op, op.keys.front());
        return;
      case sim::SimOpKind::kBatchPut:
        BatchPut(**client, op);
        return;
      case sim::SimOpKind::kGet:
      case sim::SimOpKind::kBatchGet:
        Read(**client, op, start);
        return;
      case sim::SimOpKind::kRemove:
        recorder_->RecordRemove(op.tenant, op.keys.front(), (*client)->Remove(op.keys.front()));
        return;
      default:
        // MakeReplayPlan refused every other kind.
        HS_CHECK_MSG(false, sim::SimOpKindName(op.kind));
    }
  }

 private:
  void Put(runtime::HeatsinkClient& client, const sim::SimOp& op, const std::string& key) {
    const std::shared_ptr<const std::string> bytes = clients_->Payload(op.size_bytes);
    recorder_->CountPutCall();
    const absl::Status status = client.Put(key, *bytes);
    recorder_->RecordPut(op.tenant, key, op.size_bytes, status);
  }

  // BatchPut calls of at most batch_keys_max keys, as the simulator's
  // clients split a batch; every key carries the op's size.
  void BatchPut(runtime::HeatsinkClient& client, const sim::SimOp& op) {
    const std::shared_ptr<const std::string> bytes = clients_->Payload(op.size_bytes);
    const size_t chunk = static_cast<size_t>(plan_.batch_keys_max);
    for (size_t first = 0; first < op.keys.size(); first += chunk) {
      const size_t last = std::min(op.keys.size(), first + chunk);
      const absl::Span<const std::string> keys =
          absl::MakeConstSpan(op.keys).subspan(first, last - first);
      const std::vector<absl::string_view> values(keys.size(), *bytes);
      recorder_->CountPutCall();
      absl::StatusOr<std::vector<absl::Status>> puts = client.BatchPut(keys, values);
      for (size_t i = 0; i < keys.size(); ++i) {
        recorder_->RecordPut(op.tenant, keys[i], op.size_bytes,
                             puts.ok() ? (*puts)[i] : puts.status());
      }
    }
  }

  void Read(runtime::HeatsinkClient& client, const sim::SimOp& op, int64_t start) {
    std::vector<absl::StatusOr<runtime::GetResult>> results;
    if (op.keys.size() == 1) {
      results.push_back(client.GetInto(op.keys.front(), &ThreadReadBuffer()));
    } else {
      absl::StatusOr<std::vector<absl::StatusOr<runtime::GetResult>>> batch =
          client.BatchGet(op.keys);
      if (batch.ok()) {
        results = *std::move(batch);
      } else {
        results.assign(op.keys.size(), batch.status());
      }
    }
    // Keys still being put are read again, one by one, as the simulator's
    // clients retry them.
    for (int64_t retry = 0; retry < plan_.read_retries_max; ++retry) {
      bool again = false;
      for (size_t i = 0; i < results.size(); ++i) {
        if (!MasterAsksToRetry(results[i].status())) continue;
        if (!again) {
          std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(
              static_cast<double>(plan_.read_retry_ms) * 1e6 * time_scale_)));
        }
        again = true;
        results[i] = client.GetInto(op.keys[i], &ThreadReadBuffer());
      }
      if (!again) break;
    }
    const int64_t end = SteadyNs();
    const ReplayClient& reader = plan_.clients.at(op.client);
    for (size_t i = 0; i < op.keys.size(); ++i) {
      ReadSample sample;
      sample.t_ns = static_cast<int64_t>(static_cast<double>(start - t0_ns_) / time_scale_);
      sample.tenant = op.tenant;
      sample.key = op.keys[i];
      sample.requester_domain = reader.domain;
      sample.client = op.client;
      sample.host_index = reader.host_index;
      sample.latency_ns = end - start;
      sample.status = results[i].status();
      if (results[i].ok()) {
        sample.segment = results[i]->segment;
        sample.bytes = static_cast<int64_t>(results[i]->size_bytes);
        sample.served_host_index = HostIndexOfSegment(plan_, sample.segment);
      }
      recorder_->RecordRead(sample);
    }
  }

  const ReplayPlan& plan_;
  Clients* const clients_;
  ReplayRecorder* const recorder_;
  const int64_t t0_ns_;
  const double time_scale_;
};

// Samples the master's memory gauges for the extra-memory figures and prints
// progress, on its own thread, until stopped.
class Sampler {
 public:
  // Sets `*halt` when the machine's available memory falls below the floor.
  Sampler(const ReplayOptions& options, std::string metrics_address, ReplayRecorder* recorder,
          int64_t t0_ns, int64_t end_ns, std::atomic<bool>* halt)
      : options_(options),
        metrics_address_(std::move(metrics_address)),
        recorder_(recorder),
        t0_ns_(t0_ns),
        end_ns_(end_ns),
        halt_(halt) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~Sampler() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void SampleOnce() {
    absl::StatusOr<std::map<std::string, double>> m = ScrapeMetrics(metrics_address_);
    if (m.ok()) recorder_->RecordMasterSample(*m);
    CheckMemory();
  }
  // Why the run was halted; empty when it was not.
  std::string halt_reason() {
    std::lock_guard lock(mu_);
    return halt_reason_;
  }

 private:
  void Loop() {
    int64_t next_progress = SteadyNs() + options_.progress_interval_ms * 1'000'000;
    std::unique_lock lock(mu_);
    while (!done_) {
      cv_.wait_for(lock, std::chrono::milliseconds(options_.sample_interval_ms));
      if (done_) break;
      lock.unlock();
      SampleOnce();
      const int64_t now = SteadyNs();
      if (options_.progress_interval_ms > 0 && now >= next_progress) {
        next_progress = now + options_.progress_interval_ms * 1'000'000;
        std::fprintf(stderr, "heatsink-replay: %.1f s of %.1f s wall, %s\n",
                     static_cast<double>(now - t0_ns_) / 1e9,
                     static_cast<double>(end_ns_ - t0_ns_) / 1e9,
                     recorder_->ProgressLine().c_str());
      }
      lock.lock();
    }
  }

  void CheckMemory() {
    absl::StatusOr<int64_t> available = ReadMemAvailableBytes(options_.meminfo_path);
    if (!available.ok() || *available >= options_.memory_floor_bytes) return;
    {
      std::lock_guard lock(mu_);
      if (!halt_reason_.empty()) return;
      halt_reason_ = absl::StrCat(
          "stopped at ", (SteadyNs() - t0_ns_) / 1'000'000, " ms of wall time: the machine has ",
          *available >> 20, " MiB available, below the floor of ",
          options_.memory_floor_bytes >> 20,
          " MiB (--memory-floor-mib); the stores commit their segments as data lands, and this "
          "scenario's data does not fit here. The outputs hold what ran until now.");
    }
    halt_->store(true);
  }

  const ReplayOptions& options_;
  const std::string metrics_address_;
  ReplayRecorder* const recorder_;
  const int64_t t0_ns_;
  const int64_t end_ns_;
  std::atomic<bool>* const halt_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::string halt_reason_;  // guarded by mu_ (a std::mutex, which the analysis cannot see)
  std::thread thread_;
};

// Starts the stores of domains that join at or before `t_ns`.
absl::Status StartJoinedStores(Cluster& cluster, const ReplayPlan& plan, TimeNs t_ns,
                               size_t* next_store, const std::vector<size_t>& order) {
  while (*next_store < order.size() && plan.stores[order[*next_store]].join_at_ns <= t_ns) {
    HS_RETURN_IF_ERROR(cluster.StartStore(plan.stores[order[*next_store]]));
    ++*next_store;
  }
  return absl::OkStatus();
}

// Issues the operation stream in real time; returns once every operation
// ran and the scenario's duration has passed in wall time.
absl::Status Drive(const sim::Scenario& scenario, const ReplayPlan& plan,
                   const ReplayOptions& options, std::atomic<bool>& halt, Cluster& cluster,
                   Clients& clients, sim::OpStream& ops, ReplayRecorder& recorder,
                   size_t next_store, const std::vector<size_t>& order) {
  // Made once the pool is ready and the run's time 0 is known; the pool
  // reaches it only through the queue, after that.
  std::optional<Executor> executor;
  ClusterOps cluster_ops(&cluster, &recorder);
  OpQueue queue(static_cast<size_t>(options.ops_in_flight_max));
  std::latch ready(options.threads);
  std::vector<std::thread> pool;
  for (int i = 0; i < options.threads; ++i) {
    pool.emplace_back([&] {
      // Sized and its pages touched, so not even a first read meets fresh memory.
      ThreadReadBuffer().assign(static_cast<size_t>(plan.object_bytes_max), 0);
      ready.count_down();
      DueOp due;
      while (queue.Pop(&due)) {
        if (Stopped(options)) continue;
        if (due.task != nullptr) {
          due.task();
        } else {
          executor->Run(due);
        }
      }
    });
  }
  ready.wait();
  const int64_t t0_ns = SteadyNs();
  recorder.SetStart(t0_ns);
  executor.emplace(plan, &clients, &recorder, t0_ns, options.time_scale);
  const auto wall = [&](TimeNs t) {
    return t0_ns + static_cast<int64_t>(static_cast<double>(t) * options.time_scale);
  };
  const int64_t end_ns = wall(scenario.duration_ns);
  absl::Status status;
  {
    Sampler sampler(options, cluster.metrics_address(), &recorder, t0_ns, end_ns, &halt);
    sim::SimOp op;
    for (;;) {
      absl::StatusOr<bool> more = ops.Next(&op);
      if (!more.ok()) {
        status = more.status();
        break;
      }
      if (!*more) break;
      status = StartJoinedStores(cluster, plan, op.t_ns, &next_store, order);
      if (!status.ok()) break;
      const int64_t due = wall(op.t_ns);
      if (!SleepUntil(due, options)) break;
      DueOp next{op, due, nullptr};
      if (ClusterOps::Handles(op.kind)) {
        // Kills, restarts and mode changes on this thread, which started the
        // cluster; only what waits for their effect goes to the pool.
        absl::StatusOr<std::function<void()>> waits = cluster_ops.Begin(op, due);
        if (!waits.ok()) {
          status = waits.status();
          break;
        }
        next.task = *std::move(waits);
      }
      const bool pooled = !ClusterOps::Handles(op.kind) || next.task != nullptr;
      if (pooled && !queue.Push(std::move(next), options)) break;
      recorder.CountIssued();
      status = cluster_ops.error();  // a restarted store that did not serve, ...
      if (!status.ok()) break;
    }
    if (status.ok()) status = StartJoinedStores(cluster, plan, scenario.duration_ns, &next_store, order);
    if (status.ok()) SleepUntil(end_ns, options);
    if (Stopped(options) || !status.ok()) queue.Clear();
    queue.Close();
    for (std::thread& t : pool) t.join();
    sampler.SampleOnce();
    if (status.ok()) status = cluster_ops.error();
    if (status.ok() && halt.load()) status = absl::ResourceExhaustedError(sampler.halt_reason());
  }
  if (!status.ok()) return status;
  if (Stopped(options)) return absl::CancelledError("stopped by a signal; every process was stopped");
  return absl::OkStatus();
}

}  // namespace

absl::Status RunReplay(const sim::Scenario& scenario, const ReplayPlan& plan,
                       const ReplayOptions& caller_options) {
  HS_CHECK(caller_options.threads > 0 && caller_options.ops_in_flight_max > 0);
  // Every wait of the run (the cluster's too) also ends when the run halts
  // itself below the memory floor.
  std::atomic<bool> halt{false};
  ReplayOptions options = caller_options;
  options.halt = &halt;
  std::error_code ec;
  fs::create_directories(options.out_dir, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat("cannot create ", options.out_dir, ": ", ec.message()));
  }
  const uint64_t seed = options.seed.value_or(scenario.seed);
  const Rng workload_rng = Rng(seed).Fork(sim::kWorkloadSubsystem);
  HS_ASSIGN_OR_RETURN(std::unique_ptr<sim::OpStream> ops,
                      sim::MakeScenarioOpStream(scenario, workload_rng));
  // Stores in join order (stable: scenario order among equal times).
  std::vector<size_t> order(plan.stores.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return plan.stores[a].join_at_ns < plan.stores[b].join_at_ns;
  });
  HS_ASSIGN_OR_RETURN(std::unique_ptr<ReplayRecorder> recorder,
                      ReplayRecorder::Open(scenario, plan, options, seed));
  Cluster cluster(plan, options, seed);
  HS_RETURN_IF_ERROR(cluster.StartMaster());
  size_t next_store = 0;
  HS_RETURN_IF_ERROR(StartJoinedStores(cluster, plan, 0, &next_store, order));
  runtime::SteadyClock clock;
  Clients clients(&clock, plan, cluster.master_address());
  std::set<std::string> tenants;
  for (const sim::Workload& w : scenario.workloads) tenants.insert(w.tenant);
  HS_RETURN_IF_ERROR(clients.Warm(tenants));
  std::fprintf(stderr, "heatsink-replay: %s seed %llu, time scale %g, %zu stores up; outputs in %s\n",
               scenario.name.c_str(), static_cast<unsigned long long>(seed), options.time_scale,
               plan.stores.size(), options.out_dir.c_str());
  const absl::Status driven =
      Drive(scenario, plan, options, halt, cluster, clients, *ops, *recorder, next_store, order);
  // Halted below the memory floor: the outputs still hold what ran.
  if (!driven.ok() && driven.code() != absl::StatusCode::kResourceExhausted) return driven;
  cluster.StopAll();
  HS_RETURN_IF_ERROR(recorder->Finish((fs::path(options.out_dir) / "decisions.jsonl").string()));
  std::fprintf(stderr, "heatsink-replay: ran %s: %s\n", scenario.name.c_str(),
               recorder->ProgressLine().c_str());
  return driven;
}

}  // namespace heatsink::replay
