// Control-plane throughput and latency over gRPC on loopback, in one process:
// a master (ReplicatedMaster behind MasterServer) and GrpcMasterClient
// callers. The matrix Mooncake's users ask for:
//
//   ping            the baseline: an empty unary call (Master.Ping)
//   put             PutStart + PutEnd of a new 4 KiB object (two calls)
//   remove          Remove of an object just put in process
//   lookup          HeatsinkClient::Lookup of one key (GetReplicaList), one
//                   client per caller thread, coalescing off: every lookup
//                   is its own call (the client library before coalescing)
//   lookup_coalesced  the same through one shared HeatsinkClient with lookup
//                   coalescing on (lookup_coalescer.h): concurrent lookups
//                   share BatchGetReplicaList calls
//   batch_get/B     BatchGetReplicaList of B keys (1, 16, 128)
//   batch_put/B     BatchPutStart + BatchPutEnd of B new keys (1, 16, 128)
//
// with 1, 4 and 16 caller threads, the reads with dynamic replication `off`
// and `enforce`; `ping` and `lookup` also with all threads on one channel
// (`chan:shared`) besides one connection per thread (`chan:own`). Each cell
// prints calls/s, keys/s and p50/p99/p999 latency; a summary compares each
// cell with the empty call of the same threads and channels, enforce with off,
// and checks the targets. --out_csv=FILE and --out_json=FILE also write the
// table for plotting. Google Benchmark's flags apply (--benchmark_filter=...).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "core/base/mutex.h"
#include "core/replication/replicated_master.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/notification.h"
#include "runtime/env/runtime_env.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/master_server.h"

namespace heatsink::runtime {
namespace {

constexpr ClientId kStore(1);
constexpr SegmentId kSegment(257);
constexpr int kReadKeys = 4'096;
constexpr uint64_t kObjectBytes = 4'096;

std::string ReadKey(uint64_t i) { return absl::StrCat("k", i % kReadKeys); }

// One master per mode, built on first use and kept for the whole run, with
// kReadKeys objects to read.
class Cluster {
 public:
  explicit Cluster(DynamicReplicationMode mode) {
    MasterKnobs master_knobs;
    // The store here never heartbeats: it must stay live for the whole run
    // (after client_live_ttl_sec its segment, and every object, would go).
    master_knobs.client_live_ttl_sec = 24 * 3600;
    ReplicationKnobs replication;
    replication.dynamic_replication_mode = mode;
    auto master = ReplicatedMaster::Create(env_.env(), master_knobs, replication, nullptr);
    HS_CHECK_OK(master.status());
    master_ = *std::move(master);
    auto server = MasterServer::Start(master_.get(), "127.0.0.1:0", RpcOptions{});
    HS_CHECK_OK(server.status());
    server_ = *std::move(server);
    // One store segment holding every object (their bytes are never read).
    HS_CHECK_OK(master_->RegisterClient({kStore, "host-a", "a"}));
    MountSegmentRequest mount;
    mount.segment_id = kSegment;
    mount.name = "segment";
    mount.host = "host-a";
    mount.domain = "a";
    mount.capacity_bytes = uint64_t{1} << 40;
    mount.transport_endpoint = "127.0.0.1:1";
    HS_CHECK_OK(master_->MountSegment(kStore, mount));
    for (int i = 0; i < kReadKeys; ++i) Put(ReadKey(i));
  }
  ~Cluster() {
    server_->Shutdown(absl::Seconds(1));
    env_.Shutdown();
  }
  const std::string& address() const { return server_->address(); }
  // The Env's clock, for this cluster's clients (cleared before the cluster).
  const Clock* clock() { return env_.env()->clock; }

  // Puts `key` in process (setup outside the timed loops).
  void Put(const std::string& key) {
    PutStartRequest put;
    put.name = ObjectName{"", key};
    put.size_bytes = kObjectBytes;
    auto started = master_->PutStart(kStore, put);
    HS_CHECK_OK(started.status());
    HS_CHECK_OK(master_->PutEnd(kStore, {put.name, started->version}));
  }

 private:
  RuntimeEnv env_{RuntimeEnvOptions{.executor = {.threads = 2}}};
  std::unique_ptr<ReplicatedMaster> master_;
  std::unique_ptr<MasterServer> server_;
};

// Every cluster and client of the run. Clients are made on first use and
// kept to the end: benchmark threads leave their loops at different times,
// so no thread may tear down what another still uses.
struct Registry {
  Mutex mu;
  std::map<DynamicReplicationMode, std::unique_ptr<Cluster>> clusters ABSL_GUARDED_BY(mu);
  // (mode, shared, thread slot) -> client
  std::map<std::tuple<DynamicReplicationMode, bool, int>, std::unique_ptr<GrpcMasterClient>> rpc
      ABSL_GUARDED_BY(mu);
  // (mode, batches in flight) -> the shared coalescing client
  std::map<std::pair<DynamicReplicationMode, int64_t>, std::unique_ptr<HeatsinkClient>> shared
      ABSL_GUARDED_BY(mu);
};
Registry& Reg() {
  static auto* registry = new Registry();
  return *registry;
}

Cluster& ClusterFor(DynamicReplicationMode mode) {
  Registry& reg = Reg();
  MutexLock lock(&reg.mu);
  std::unique_ptr<Cluster>& c = reg.clusters[mode];
  if (c == nullptr) c = std::make_unique<Cluster>(mode);
  return *c;
}

// Clients first (they wait for their calls), then the masters.
void ShutdownAll() {
  Registry& reg = Reg();
  MutexLock lock(&reg.mu);
  reg.shared.clear();
  reg.rpc.clear();
  reg.clusters.clear();
}

// Unique names for puts, across threads and repeated runs.
std::atomic<uint64_t> g_next_key{0};
std::string NewKey() {
  return absl::StrCat("p", g_next_key.fetch_add(1, std::memory_order_relaxed));
}

// One connection per thread (chan:own) or one for all threads (chan:shared).
GrpcMasterClient* RpcFor(benchmark::State& state, DynamicReplicationMode mode, bool shared) {
  Cluster& cluster = ClusterFor(mode);
  Registry& reg = Reg();
  MutexLock lock(&reg.mu);
  std::unique_ptr<GrpcMasterClient>& rpc =
      reg.rpc[{mode, shared, shared ? 0 : state.thread_index()}];
  if (rpc == nullptr) {
    RpcOptions options;
    options.own_connection = !shared;
    auto connected = GrpcMasterClient::Connect(cluster.clock(), cluster.address(), options);
    HS_CHECK_OK(connected.status());
    rpc = *std::move(connected);
  }
  return rpc.get();
}

// Blocks on one asynchronous MasterClient call.
template <typename T>
class Await {
 public:
  auto Callback() {
    return [this](T result) {
      result_.emplace(std::move(result));
      done_.Notify();
    };
  }
  T Wait() {
    done_.WaitForNotification();
    return *std::move(result_);
  }

 private:
  Notification done_;
  std::optional<T> result_;
};

struct Cell {
  std::string op;
  std::string mode = "-";
  int threads = 1;
  std::string channels = "own";
  int batch = 1;  // keys per call
  int calls_per_op = 1;
  double ops_per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
  double p999_us = 0;
  // The last run's latencies, one vector per thread.
  std::vector<std::vector<int64_t>> samples = {};
};

Mutex g_mu;
std::vector<Cell>& Cells() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  static auto* cells = new std::vector<Cell>();
  return *cells;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Percentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i = std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return static_cast<double>(sorted[i]) / 1e3;
}

// Runs `op` per iteration, timing each; the cell keeps each thread's samples
// of the last run (Google Benchmark runs a cell several times while it sizes
// the iterations; the last run is the measured one).
template <typename Op>
void Measure(benchmark::State& state, Cell cell, Op op) {
  cell.threads = state.threads();
  std::vector<int64_t> latencies;
  latencies.reserve(1 << 16);
  const int64_t begin = NowNs();
  for (auto _ : state) {
    const int64_t t0 = NowNs();
    absl::Status status = op();
    latencies.push_back(NowNs() - t0);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
  }
  const int64_t elapsed = NowNs() - begin;
  MutexLock lock(&g_mu);
  std::vector<Cell>& cells = Cells();
  auto it = std::find_if(cells.begin(), cells.end(), [&](const Cell& c) {
    return c.op == cell.op && c.mode == cell.mode && c.threads == cell.threads &&
           c.channels == cell.channels && c.batch == cell.batch;
  });
  if (it == cells.end()) {
    cells.push_back(cell);
    it = cells.end() - 1;
  }
  it->samples.resize(static_cast<size_t>(state.threads()));
  it->samples[static_cast<size_t>(state.thread_index())] = std::move(latencies);
  if (state.thread_index() == 0) {
    it->ops_per_second = static_cast<double>(state.iterations()) * state.threads() /
                         (static_cast<double>(elapsed) / 1e9);
    state.counters["keys_per_s"] = benchmark::Counter(
        static_cast<double>(state.iterations()) * cell.batch, benchmark::Counter::kIsRate);
  }
}

const char* ModeName(DynamicReplicationMode mode) {
  return mode == DynamicReplicationMode::kOff ? "off" : "enforce";
}

void BM_Ping(benchmark::State& state, bool shared) {
  GrpcMasterClient* rpc = RpcFor(state, DynamicReplicationMode::kOff, shared);
  Measure(state, Cell{.op = "ping", .channels = shared ? "shared" : "own"},
          [&] { return rpc->Ping(); });
}

void BM_Put(benchmark::State& state) {
  GrpcMasterClient* rpc = RpcFor(state, DynamicReplicationMode::kOff, false);
  Measure(state, Cell{.op = "put", .calls_per_op = 2}, [&]() -> absl::Status {
    PutStartRequest put;
    put.name = ObjectName{"", NewKey()};
    put.size_bytes = kObjectBytes;
    Await<absl::StatusOr<PutStartResponse>> started;
    rpc->PutStart(kStore, put, started.Callback());
    absl::StatusOr<PutStartResponse> r = started.Wait();
    if (!r.ok()) return r.status();
    Await<absl::Status> ended;
    rpc->PutEnd(kStore, PutEndRequest{put.name, r->version}, ended.Callback());
    return ended.Wait();
  });
}

void BM_Remove(benchmark::State& state) {
  Cluster& cluster = ClusterFor(DynamicReplicationMode::kOff);
  GrpcMasterClient* rpc = RpcFor(state, DynamicReplicationMode::kOff, false);
  Measure(state, Cell{.op = "remove"}, [&]() -> absl::Status {
    Await<absl::Status> removed;
    // The object to remove is put in process first (a few microseconds,
    // against the call's tens).
    const std::string key = NewKey();
    cluster.Put(key);
    rpc->Remove(RemoveRequest{ObjectName{"", key}}, removed.Callback());
    return removed.Wait();
  });
}

void BM_Lookup(benchmark::State& state, DynamicReplicationMode mode, bool shared) {
  GrpcMasterClient* rpc = RpcFor(state, mode, shared);
  HeatsinkClientOptions options;
  options.client_id = ClientId(1000 + state.thread_index());
  options.domain = "b";
  options.lookup_batches_in_flight_max = 0;  // every lookup its own call
  HeatsinkClient client(rpc, options);
  uint64_t i = static_cast<uint64_t>(state.thread_index()) * 997;
  Measure(state,
          Cell{.op = "lookup", .mode = ModeName(mode), .channels = shared ? "shared" : "own"},
          [&] { return client.Lookup(ReadKey(i++)).status(); });
}

// All threads share one HeatsinkClient (one serving process with many
// threads) with coalescing on.
void BM_LookupCoalesced(benchmark::State& state, DynamicReplicationMode mode) {
  GrpcMasterClient* rpc = RpcFor(state, mode, true);
  HeatsinkClient* client = nullptr;
  {
    Registry& reg = Reg();
    MutexLock lock(&reg.mu);
    std::unique_ptr<HeatsinkClient>& shared = reg.shared[{mode, state.range(0)}];
    if (shared == nullptr) {
      HeatsinkClientOptions options;
      options.client_id = ClientId(999);
      options.domain = "b";
      options.lookup_batches_in_flight_max = static_cast<size_t>(state.range(0));
      shared = std::make_unique<HeatsinkClient>(rpc, options);
    }
    client = shared.get();
  }
  uint64_t i = static_cast<uint64_t>(state.thread_index()) * 997;
  Measure(state,
          Cell{.op = absl::StrCat("lookup_coalesced/in_flight:", state.range(0)),
               .mode = ModeName(mode),
               .channels = "shared"},
          [&] { return client->Lookup(ReadKey(i++)).status(); });
  if (state.thread_index() == 0) {
    const LookupCoalescerStats s = client->lookup_stats();
    state.counters["keys_per_batch"] =
        s.batch_calls > 0 ? static_cast<double>(s.batched_lookups) / s.batch_calls : 0;
  }
}

void BM_BatchGet(benchmark::State& state, DynamicReplicationMode mode) {
  GrpcMasterClient* rpc = RpcFor(state, mode, false);
  const int batch = static_cast<int>(state.range(0));
  BatchGetReplicaListRequest req;
  req.requester = ClientId(1000 + state.thread_index());
  req.requester_domain = "b";
  uint64_t next = static_cast<uint64_t>(state.thread_index()) * 997;
  Measure(state, Cell{.op = "batch_get", .mode = ModeName(mode), .batch = batch},
          [&]() -> absl::Status {
            req.names.clear();
            for (int k = 0; k < batch; ++k) req.names.push_back(ObjectName{"", ReadKey(next++)});
            Await<absl::StatusOr<BatchGetReplicaListResponse>> listed;
            rpc->BatchGetReplicaList(req, listed.Callback());
            absl::StatusOr<BatchGetReplicaListResponse> r = listed.Wait();
            if (!r.ok()) return r.status();
            for (const auto& one : r->results) {
              if (!one.ok()) return one.status();
            }
            return absl::OkStatus();
          });
}

void BM_BatchPut(benchmark::State& state) {
  GrpcMasterClient* rpc = RpcFor(state, DynamicReplicationMode::kOff, false);
  const int batch = static_cast<int>(state.range(0));
  Measure(state, Cell{.op = "batch_put", .batch = batch, .calls_per_op = 2}, [&]() -> absl::Status {
    BatchPutStartRequest start;
    for (int k = 0; k < batch; ++k) {
      start.names.push_back(ObjectName{"", NewKey()});
      start.sizes_bytes.push_back(kObjectBytes);
    }
    Await<absl::StatusOr<BatchPutStartResponse>> started;
    rpc->BatchPutStart(kStore, start, started.Callback());
    absl::StatusOr<BatchPutStartResponse> r = started.Wait();
    if (!r.ok()) return r.status();
    BatchPutEndRequest end;
    for (int k = 0; k < batch; ++k) {
      if (!r->results[k].ok()) return r->results[k].status();
      end.puts.push_back(PutEndRequest{start.names[k], r->results[k]->version});
    }
    Await<absl::StatusOr<BatchPutResponse>> ended;
    rpc->BatchPutEnd(kStore, end, ended.Callback());
    absl::StatusOr<BatchPutResponse> e = ended.Wait();
    if (!e.ok()) return e.status();
    for (const absl::Status& s : e->results) {
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  });
}

constexpr double kMinSeconds = 0.5;

void Register() {
  auto threads = [](benchmark::internal::Benchmark* b) {
    return b->Threads(1)->Threads(4)->Threads(16)->UseRealTime()->MinTime(kMinSeconds);
  };
  threads(benchmark::RegisterBenchmark("ping/chan:own", BM_Ping, false));
  benchmark::RegisterBenchmark("ping/chan:shared", BM_Ping, true)
      ->Threads(4)
      ->Threads(16)
      ->UseRealTime()
      ->MinTime(kMinSeconds);
  threads(benchmark::RegisterBenchmark("put", BM_Put));
  threads(benchmark::RegisterBenchmark("remove", BM_Remove));
  for (DynamicReplicationMode mode :
       {DynamicReplicationMode::kOff, DynamicReplicationMode::kEnforce}) {
    const std::string m = ModeName(mode);
    threads(benchmark::RegisterBenchmark(("lookup/" + m + "/chan:own").c_str(), BM_Lookup, mode,
                                         false));
    benchmark::RegisterBenchmark(("lookup/" + m + "/chan:shared").c_str(), BM_Lookup, mode, true)
        ->Threads(4)
        ->Threads(16)
        ->UseRealTime()
        ->MinTime(kMinSeconds);
    threads(
        benchmark::RegisterBenchmark(("lookup_coalesced/" + m).c_str(), BM_LookupCoalesced, mode)
            ->Arg(1)
            ->Arg(2)
            ->ArgName("in_flight"));
    threads(benchmark::RegisterBenchmark(("batch_get/" + m).c_str(), BM_BatchGet, mode)
                ->Arg(1)
                ->Arg(16)
                ->Arg(128)
                ->ArgName("keys"));
  }
  threads(benchmark::RegisterBenchmark("batch_put", BM_BatchPut)
              ->Arg(1)
              ->Arg(16)
              ->Arg(128)
              ->ArgName("keys"));
}

const Cell* Find(const std::string& op, const std::string& mode, int threads,
                 const std::string& channels, int batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  for (const Cell& c : Cells()) {
    if (c.op == op && c.mode == mode && c.threads == threads && c.channels == channels &&
        c.batch == batch) {
      return &c;
    }
  }
  return nullptr;
}

double CallsPerSecond(const Cell& c) { return c.ops_per_second * c.calls_per_op; }
double KeysPerSecond(const Cell& c) { return c.ops_per_second * c.batch; }

// The ratio of `c`'s calls/s to the empty call's with the same threads and
// channels (0 when that was not run).
double VsPing(const Cell& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  const Cell* ping = Find("ping", "-", c.threads, c.channels == "shared" ? "shared" : "own", 1);
  if (ping == nullptr && c.threads == 1) ping = Find("ping", "-", 1, "own", 1);
  return ping != nullptr && ping->ops_per_second > 0 ? CallsPerSecond(c) / ping->ops_per_second : 0;
}

void PrintAndWrite(const std::string& csv_path, const std::string& json_path) {
  MutexLock lock(&g_mu);
  std::vector<Cell>& cells = Cells();
  for (Cell& c : cells) {
    std::vector<int64_t> sorted;
    for (const std::vector<int64_t>& one : c.samples)
      sorted.insert(sorted.end(), one.begin(), one.end());
    std::sort(sorted.begin(), sorted.end());
    c.p50_us = Percentile(sorted, 0.50);
    c.p99_us = Percentile(sorted, 0.99);
    c.p999_us = Percentile(sorted, 0.999);
  }
  std::printf(
      "\nControl-plane matrix, loopback gRPC, one process (same run; baseline = the empty call "
      "with the same threads and channels):\n");
  std::printf("  %-34s %-7s %3s %-6s %5s %11s %11s %9s %9s %9s %8s\n", "op", "mode", "thr", "chan",
              "keys", "calls/s", "keys/s", "p50 us", "p99 us", "p999 us", "vs ping");
  for (const Cell& c : cells) {
    std::printf("  %-34s %-7s %3d %-6s %5d %11.0f %11.0f %9.1f %9.1f %9.1f %7.2fx\n", c.op.c_str(),
                c.mode.c_str(), c.threads, c.channels.c_str(), c.batch, CallsPerSecond(c),
                KeysPerSecond(c), c.p50_us, c.p99_us, c.p999_us, VsPing(c));
  }
  std::printf("\nEnforce vs off (target >= 0.95x in every read cell):\n");
  for (const Cell& c : cells) {
    if (c.mode != "enforce") continue;
    const Cell* off = Find(c.op, "off", c.threads, c.channels, c.batch);
    if (off == nullptr || off->ops_per_second <= 0) continue;
    const double ratio = c.ops_per_second / off->ops_per_second;
    std::printf("  %-34s thr %2d chan %-6s keys %3d  %.3fx  %s\n", c.op.c_str(), c.threads,
                c.channels.c_str(), c.batch, ratio, ratio >= 0.95 ? "met" : "MISSED");
  }
  std::printf("\nTargets:\n");
  for (int threads : {4, 16}) {
    const Cell* plain = Find("lookup", "off", threads, "own", 1);
    for (int in_flight : {1, 2}) {
      const Cell* coalesced =
          Find(absl::StrCat("lookup_coalesced/in_flight:", in_flight), "off", threads, "shared", 1);
      if (plain == nullptr || coalesced == nullptr || plain->ops_per_second <= 0) continue;
      const double ratio = coalesced->ops_per_second / plain->ops_per_second;
      std::printf(
          "  single-key lookups, %2d callers, coalesced (%d in flight) vs one call each: "
          "%.2fx (target >= 2x: %s); p99 %.1f vs %.1f us (%s)\n",
          threads, in_flight, ratio, ratio >= 2.0 ? "met" : "MISSED", coalesced->p99_us,
          plain->p99_us, coalesced->p99_us <= plain->p99_us ? "no worse" : "WORSE");
    }
  }
  double best_batch = 0;
  int best_threads = 0;
  for (const Cell& c : cells) {
    if (c.op == "batch_get" && c.batch == 128 && c.mode == "off" && KeysPerSecond(c) > best_batch) {
      best_batch = KeysPerSecond(c);
      best_threads = c.threads;
    }
  }
  if (best_batch > 0) {
    std::printf(
        "  BatchGetReplicaList of 128 keys: %.0f keys/s (%d callers; target >= 1M: %s)\n",
        best_batch, best_threads,
        best_batch >= 1e6
            ? "met"
            : absl::StrFormat("MISSED by %.0f%%", 100.0 * (1e6 - best_batch) / 1e6).c_str());
  }
  if (!csv_path.empty()) {
    std::ofstream out(csv_path);
    out << "op,mode,threads,channels,keys_per_call,calls_per_s,keys_per_s,p50_us,p99_us,p999_us,"
           "vs_ping\n";
    for (const Cell& c : cells) {
      out << absl::StrFormat("%s,%s,%d,%s,%d,%.0f,%.0f,%.1f,%.1f,%.1f,%.3f\n", c.op, c.mode,
                             c.threads, c.channels, c.batch, CallsPerSecond(c), KeysPerSecond(c),
                             c.p50_us, c.p99_us, c.p999_us, VsPing(c));
    }
    std::printf("\nwrote %s\n", csv_path.c_str());
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "[\n";
    for (size_t i = 0; i < cells.size(); ++i) {
      const Cell& c = cells[i];
      out << absl::StrFormat(
          "  {\"op\": \"%s\", \"mode\": \"%s\", \"threads\": %d, \"channels\": \"%s\", "
          "\"keys_per_call\": %d, \"calls_per_s\": %.0f, \"keys_per_s\": %.0f, \"p50_us\": %.1f, "
          "\"p99_us\": %.1f, \"p999_us\": %.1f, \"vs_ping\": %.3f}%s\n",
          c.op, c.mode, c.threads, c.channels, c.batch, CallsPerSecond(c), KeysPerSecond(c),
          c.p50_us, c.p99_us, c.p999_us, VsPing(c), i + 1 < cells.size() ? "," : "");
    }
    out << "]\n";
    std::printf("wrote %s\n", json_path.c_str());
  }
}

}  // namespace
}  // namespace heatsink::runtime

int main(int argc, char** argv) {
  // As heatsink-master runs (tools/runtime_flags.h): Abseil's mutex deadlock
  // detection, on in Debian's build, looks every lock up in one global graph.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  std::string csv_path;
  std::string json_path;
  // Our flags out, Google Benchmark's in.
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--out_csv=", 0) == 0) {
      csv_path = arg.substr(10);
    } else if (arg.rfind("--out_json=", 0) == 0) {
      json_path = arg.substr(11);
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  heatsink::runtime::Register();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  heatsink::runtime::PrintAndWrite(csv_path, json_path);
  heatsink::runtime::ShutdownAll();
  return 0;
}
