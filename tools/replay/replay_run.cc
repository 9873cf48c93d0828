#include "tools/replay/replay_run.h"

#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
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
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "core/env/rng.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/transport/socket.h"
#include "sim/decision_log.h"
#include "sim/sim_env.h"
#include "sim/workloads.h"
#include "tools/replay/child_process.h"
#include "tools/replay/replay_stats.h"

namespace heatsink::replay {
namespace {

namespace fs = std::filesystem;

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Stopped(const ReplayOptions& options) {
  return options.stop != nullptr && options.stop->load(std::memory_order_relaxed);
}

// Sleeps until `deadline_ns` (steady clock) in slices, so a stop request is
// seen within 20 ms. False when stopped.
bool SleepUntil(int64_t deadline_ns, const ReplayOptions& options) {
  for (;;) {
    if (Stopped(options)) return false;
    const int64_t left = deadline_ns - SteadyNs();
    if (left <= 0) return true;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 20'000'000)));
  }
}

std::vector<std::string> ReadLines(const fs::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// GET http://endpoint/metrics; the unlabelled samples as name -> value.
absl::StatusOr<std::map<std::string, double>> ScrapeMetrics(const std::string& endpoint) {
  HS_ASSIGN_OR_RETURN(runtime::Socket socket, runtime::ConnectTcp(endpoint, 2'000, 5'000));
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: localhost\r\n\r\n";
  HS_RETURN_IF_ERROR(runtime::SendAll(socket, request.data(), request.size()));
  std::string response;
  char buffer[8192];
  constexpr size_t kResponseBytesMax = 16 << 20;
  for (;;) {
    const ssize_t n = ::recv(socket.fd(), buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    response.append(buffer, static_cast<size_t>(n));
    if (response.size() > kResponseBytesMax) {
      return absl::ResourceExhaustedError(
          absl::StrCat("/metrics of ", endpoint, " is larger than ", kResponseBytesMax, " bytes"));
    }
  }
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(response, '\n')) {
    if (line.empty() || line.front() == '#' || absl::StrContains(line, '{')) continue;
    const size_t space = line.find(' ');
    if (space == absl::string_view::npos) continue;
    double value = 0;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(line.substr(space + 1)), &value)) {
      out[std::string(line.substr(0, space))] = value;
    }
  }
  if (out.empty()) return absl::UnavailableError(absl::StrCat("no metrics from ", endpoint));
  return out;
}

// The master and stores of one replay; stops them all when destroyed.
class Cluster {
 public:
  Cluster(const ReplayPlan& plan, const ReplayOptions& options, uint64_t seed)
      : plan_(plan), options_(options), seed_(seed), logs_(fs::path(options.out_dir) / "logs") {}
  ~Cluster() { StopAll(); }

  absl::Status StartMaster() {
    fs::create_directories(logs_);
    const fs::path address_file = logs_ / "master.address";
    fs::remove(address_file);
    std::vector<std::string> argv = {
        (fs::path(options_.binaries_dir) / "heatsink-master").string(),
        "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0",
        "--address-file", address_file.string(),
        "--decisions", (fs::path(options_.out_dir) / "decisions.jsonl").string(),
        "--seed", absl::StrCat(seed_)};
    for (const std::string& set : plan_.master_sets) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    HS_ASSIGN_OR_RETURN(master_, ChildProcess::Start(argv, (logs_ / "master.log").string()));
    const bool up = WaitFor([&] { return ReadLines(address_file).size() == 2; });
    if (!up) return NotStarted("heatsink-master", *master_);
    const std::vector<std::string> lines = ReadLines(address_file);
    master_address_ = lines[0];
    metrics_address_ = lines[1];
    return absl::OkStatus();
  }

  absl::Status StartStore(const ReplayStore& store) {
    const fs::path endpoint_file = logs_ / (store.host + ".endpoint");
    fs::remove(endpoint_file);
    std::vector<std::string> argv = {
        (fs::path(options_.binaries_dir) / "heatsink-store").string(),
        "--master", master_address_,
        "--client-id", absl::StrCat(store.client_id.value),
        "--host", store.host,
        "--domain", store.domain,
        "--segments", absl::StrCat(store.segments),
        "--segment-mib", absl::StrCat(store.segment_mib),
        "--data-host", "127.0.0.1",
        "--heartbeat-interval-ms", absl::StrCat(plan_.heartbeat_interval_ms),
        "--fetch-interval-ms", absl::StrCat(plan_.fetch_interval_ms),
        "--endpoint-file", endpoint_file.string()};
    HS_ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> process,
                        ChildProcess::Start(argv, (logs_ / (store.host + ".log")).string()));
    stores_.push_back(std::move(process));
    segments_expected_ += store.segments;
    if (!WaitFor([&] { return fs::exists(endpoint_file); })) {
      return NotStarted(absl::StrCat("heatsink-store of host ", store.host), *stores_.back());
    }
    // The master lists the store's segments once they are mounted.
    const bool mounted = WaitFor([&] {
      absl::StatusOr<std::map<std::string, double>> m = ScrapeMetrics(metrics_address_);
      return m.ok() && (*m)["heatsink_master_segments"] >= static_cast<double>(segments_expected_);
    });
    if (!mounted) {
      return NotStarted(absl::StrCat("heatsink-store of host ", store.host, " (segments)"),
                        *stores_.back());
    }
    return absl::OkStatus();
  }

  // Stores first (they stop heartbeating), then the master (its decision log
  // is flushed line by line).
  void StopAll() {
    for (auto& s : stores_) s->Stop();
    stores_.clear();
    if (master_ != nullptr) master_->Stop();
    master_.reset();
  }

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
  absl::Status NotStarted(const std::string& what, ChildProcess& process) {
    if (Stopped(options_)) return absl::CancelledError("stopped while the cluster was starting");
    return absl::UnavailableError(absl::StrCat(
        what, " did not start within ", options_.start_timeout_ms, " ms",
        process.Running() ? "" : " (it exited)", "; see ", process.log_path()));
  }

  const ReplayPlan& plan_;
  const ReplayOptions& options_;
  const uint64_t seed_;
  const fs::path logs_;
  std::unique_ptr<ChildProcess> master_;
  std::vector<std::unique_ptr<ChildProcess>> stores_;
  std::string master_address_;
  std::string metrics_address_;
  int64_t segments_expected_ = 0;
};

// One HeatsinkClient per (scenario client, tenant), made on first use.
class Clients {
 public:
  Clients(const ReplayPlan& plan, std::string master_address)
      : plan_(plan), master_address_(std::move(master_address)) {}

  absl::StatusOr<runtime::HeatsinkClient*> For(const std::string& client,
                                               const std::string& tenant) {
    absl::MutexLock lock(&mu_);
    const auto key = std::make_pair(client, tenant);
    if (auto it = clients_.find(key); it != clients_.end()) return it->second.client.get();
    const auto spec = plan_.clients.find(client);
    HS_CHECK_MSG(spec != plan_.clients.end(), client);  // the scenario loader checked the name
    runtime::RpcOptions rpc;
    rpc.caller_client_id = spec->second.client_id.value;
    Entry entry;
    HS_ASSIGN_OR_RETURN(entry.master, runtime::GrpcMasterClient::Connect(master_address_, rpc));
    runtime::HeatsinkClientOptions options;
    options.client_id = spec->second.client_id;
    options.host = spec->second.host;
    options.domain = spec->second.domain;
    options.tenant = tenant;
    options.replica_selection_policy = plan_.replica_selection_policy;
    options.replica_selection_seed = plan_.replica_selection_seed;
    // As the simulator's clients (and Mooncake's): puts prefer the writer's
    // own host's segments.
    for (const ReplayStore& s : plan_.stores) {
      if (s.host != spec->second.host) continue;
      for (int64_t i = 0; i < s.segments; ++i) {
        options.preferred_segments.push_back(
            SegmentId(s.client_id.value * 256 + static_cast<uint64_t>(i) + 1));
      }
    }
    HS_RETURN_IF_ERROR(options.Validate());
    entry.client = std::make_unique<runtime::HeatsinkClient>(entry.master.get(), options);
    runtime::HeatsinkClient* out = entry.client.get();
    clients_.emplace(key, std::move(entry));
    return out;
  }

  // Makes every client of `tenants` now and waits until its channel answers a
  // Ping, so no operation pays for connecting.
  absl::Status Warm(const std::set<std::string>& tenants) {
    for (const auto& [name, spec] : plan_.clients) {
      for (const std::string& tenant : tenants) {
        HS_RETURN_IF_ERROR(For(name, tenant).status());
      }
    }
    absl::MutexLock lock(&mu_);
    for (auto& [key, entry] : clients_) HS_RETURN_IF_ERROR(entry.master->Ping());
    return absl::OkStatus();
  }

  // Bytes of a put of `size` (one shared buffer per size).
  std::shared_ptr<const std::string> Payload(int64_t size) {
    absl::MutexLock lock(&mu_);
    auto& p = payloads_[size];
    if (p == nullptr) p = std::make_shared<const std::string>(static_cast<size_t>(size), 'h');
    return p;
  }

 private:
  struct Entry {
    std::unique_ptr<runtime::GrpcMasterClient> master;
    std::unique_ptr<runtime::HeatsinkClient> client;
  };
  const ReplayPlan& plan_;
  const std::string master_address_;
  absl::Mutex mu_;
  std::map<std::pair<std::string, std::string>, Entry> clients_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, std::shared_ptr<const std::string>> payloads_ ABSL_GUARDED_BY(mu_);
};

struct DueOp {
  sim::SimOp op;
  int64_t due_ns = 0;  // steady clock
};

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
      case sim::SimOpKind::kBatchPut:
        // A batch_put is replayed as one put per key (the client library has
        // no batch put yet); the master sees PutStart/PutEnd per key.
        for (const std::string& key : op.keys) Put(**client, op, key);
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
    const absl::Status status = client.Put(key, *bytes);
    recorder_->RecordPut(op.tenant, key, op.size_bytes, status);
  }

  void Read(runtime::HeatsinkClient& client, const sim::SimOp& op, int64_t start) {
    std::vector<absl::StatusOr<runtime::GetResult>> results;
    if (op.keys.size() == 1) {
      results.push_back(client.Get(op.keys.front()));
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
        if (results[i].status().code() != absl::StatusCode::kUnavailable) continue;
        if (!again) {
          std::this_thread::sleep_for(std::chrono::nanoseconds(static_cast<int64_t>(
              static_cast<double>(plan_.read_retry_ms) * 1e6 * time_scale_)));
        }
        again = true;
        results[i] = client.Get(op.keys[i]);
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
        sample.bytes = static_cast<int64_t>(results[i]->bytes.size());
        // Stores own segments id * 256 + index + 1 (runtime/store/store_node.h).
        sample.served_host_index = static_cast<int64_t>(sample.segment.value / 256) - 1;
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
  Sampler(const ReplayOptions& options, std::string metrics_address, ReplayRecorder* recorder,
          int64_t t0_ns, int64_t end_ns)
      : options_(options), metrics_address_(std::move(metrics_address)), recorder_(recorder),
        t0_ns_(t0_ns), end_ns_(end_ns) {
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

  const ReplayOptions& options_;
  const std::string metrics_address_;
  ReplayRecorder* const recorder_;
  const int64_t t0_ns_;
  const int64_t end_ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
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
                   const ReplayOptions& options, Cluster& cluster, Clients& clients,
                   sim::OpStream& ops,
                   ReplayRecorder& recorder, int64_t t0_ns, size_t next_store,
                   const std::vector<size_t>& order) {
  Executor executor(plan, &clients, &recorder, t0_ns, options.time_scale);
  OpQueue queue(static_cast<size_t>(options.ops_in_flight_max));
  std::vector<std::thread> pool;
  for (int i = 0; i < options.threads; ++i) {
    pool.emplace_back([&] {
      DueOp due;
      while (queue.Pop(&due)) {
        if (!Stopped(options)) executor.Run(due);
      }
    });
  }
  const auto wall = [&](TimeNs t) {
    return t0_ns + static_cast<int64_t>(static_cast<double>(t) * options.time_scale);
  };
  const int64_t end_ns = wall(scenario.duration_ns);
  absl::Status status;
  {
    Sampler sampler(options, cluster.metrics_address(), &recorder, t0_ns, end_ns);
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
      if (!SleepUntil(due, options) || !queue.Push(DueOp{op, due}, options)) break;
      recorder.CountIssued();
    }
    if (status.ok()) status = StartJoinedStores(cluster, plan, scenario.duration_ns, &next_store, order);
    if (status.ok()) SleepUntil(end_ns, options);
    if (Stopped(options) || !status.ok()) queue.Clear();
    queue.Close();
    for (std::thread& t : pool) t.join();
    sampler.SampleOnce();
  }
  if (!status.ok()) return status;
  if (Stopped(options)) return absl::CancelledError("stopped by a signal; every process was stopped");
  return absl::OkStatus();
}

}  // namespace

absl::Status RunReplay(const sim::Scenario& scenario, const ReplayPlan& plan,
                       const ReplayOptions& options) {
  HS_CHECK(options.threads > 0 && options.ops_in_flight_max > 0);
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
  Clients clients(plan, cluster.master_address());
  std::set<std::string> tenants;
  for (const sim::Workload& w : scenario.workloads) tenants.insert(w.tenant);
  HS_RETURN_IF_ERROR(clients.Warm(tenants));
  const int64_t t0_ns = SteadyNs();
  recorder->SetStart(t0_ns);
  std::fprintf(stderr, "heatsink-replay: %s seed %llu, time scale %g, %zu stores up; outputs in %s\n",
               scenario.name.c_str(), static_cast<unsigned long long>(seed), options.time_scale,
               plan.stores.size(), options.out_dir.c_str());
  HS_RETURN_IF_ERROR(
      Drive(scenario, plan, options, cluster, clients, *ops, *recorder, t0_ns, next_store, order));
  cluster.StopAll();
  return recorder->Finish((fs::path(options.out_dir) / "decisions.jsonl").string());
}

}  // namespace heatsink::replay
