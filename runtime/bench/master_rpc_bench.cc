// Control-plane cost over gRPC on loopback, in one process: a master
// (ReplicatedMaster behind MasterServer) and GrpcMasterClient callers.
//
//   BM_EmptyCall        the baseline: an empty unary RPC (Master.Ping)
//   BM_GetReplicaList   HeatsinkClient::Lookup of one hot key (GetReplicaList
//                       through the client library), with dynamic
//                       replication `off` and `enforce`
//
// Each runs with 1 and 4 caller threads. After the benchmarks a summary
// prints, per thread count, calls per second, p50/p99 latency, the ratio of
// GetReplicaList to the empty call, and enforce vs off (target >= 0.95x).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "core/replication/replicated_master.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/runtime_env.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/master_handler.h"
#include "runtime/rpc/master_server.h"

namespace heatsink::runtime {
namespace {

constexpr ClientId kStore(1);
constexpr SegmentId kSegment(257);

// One master per mode, built on first use and kept for the whole run.
class Cluster {
 public:
  explicit Cluster(DynamicReplicationMode mode) {
    MasterKnobs master_knobs;
    ReplicationKnobs replication;
    replication.dynamic_replication_mode = mode;
    auto master = ReplicatedMaster::Create(env_.env(), master_knobs, replication, nullptr);
    HS_CHECK_OK(master.status());
    master_ = *std::move(master);
    handler_ = std::make_unique<MasterServiceHandler>(&master_->master(), master_.get());
    auto server = MasterServer::Start(handler_.get(), "127.0.0.1:0", RpcOptions{});
    HS_CHECK_OK(server.status());
    server_ = *std::move(server);
    // One store segment holding the hot key (its bytes are never read here).
    HS_CHECK_OK(master_->master().RegisterClient({kStore, "host-a", "a"}));
    MountSegmentRequest mount;
    mount.segment_id = kSegment;
    mount.name = "segment";
    mount.host = "host-a";
    mount.domain = "a";
    mount.capacity_bytes = 64 << 20;
    mount.transport_endpoint = "127.0.0.1:1";
    HS_CHECK_OK(master_->master().MountSegment(kStore, mount));
    PutStartRequest put;
    put.name = ObjectName{"", "hot"};
    put.size_bytes = 4096;
    auto started = master_->master().PutStart(kStore, put);
    HS_CHECK_OK(started.status());
    HS_CHECK_OK(master_->master().PutEnd(kStore, {put.name, started->version}));
  }
  ~Cluster() {
    server_->Shutdown(absl::Seconds(1));
    env_.Shutdown();
  }
  const std::string& address() const { return server_->address(); }

 private:
  RuntimeEnv env_{RuntimeEnvOptions{.executor = {.threads = 2}}};
  std::unique_ptr<ReplicatedMaster> master_;
  std::unique_ptr<MasterServiceHandler> handler_;
  std::unique_ptr<MasterServer> server_;
};

Cluster& ClusterFor(DynamicReplicationMode mode) {
  static std::mutex mu;
  static std::map<DynamicReplicationMode, std::unique_ptr<Cluster>>* clusters =
      new std::map<DynamicReplicationMode, std::unique_ptr<Cluster>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<Cluster>& c = (*clusters)[mode];
  if (c == nullptr) c = std::make_unique<Cluster>(mode);
  return *c;
}

struct Result {
  double calls_per_second = 0;
  double p50_us = 0;
  double p99_us = 0;
};

std::mutex g_mu;
std::map<std::string, Result>& Results() {
  static auto* results = new std::map<std::string, Result>();
  return *results;
}
std::map<std::string, std::vector<int64_t>>& Samples() {
  static auto* samples = new std::map<std::string, std::vector<int64_t>>();
  return *samples;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Runs `call` per iteration, timing each; thread 0 publishes the result.
template <typename Call>
void Measure(benchmark::State& state, const std::string& name, Call call) {
  std::vector<int64_t> latencies;
  latencies.reserve(1 << 16);
  const int64_t begin = NowNs();
  for (auto _ : state) {
    const int64_t t0 = NowNs();
    absl::Status status = call();
    latencies.push_back(NowNs() - t0);
    if (!status.ok()) {
      state.SkipWithError(status.ToString().c_str());
      break;
    }
  }
  const int64_t elapsed = NowNs() - begin;
  const std::string key = absl::StrCat(name, "/threads:", state.threads());
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<int64_t>& all = Samples()[key];
  if (state.thread_index() == 0) all.clear();
  all.insert(all.end(), latencies.begin(), latencies.end());
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  Result& r = Results()[key];
  if (!sorted.empty()) {
    r.p50_us = sorted[sorted.size() / 2] / 1e3;
    r.p99_us = sorted[std::min(sorted.size() - 1, sorted.size() * 99 / 100)] / 1e3;
  }
  if (state.thread_index() == 0) {
    r.calls_per_second = static_cast<double>(state.iterations()) * state.threads() /
                         (static_cast<double>(elapsed) / 1e9);
    state.counters["p50_us"] = r.p50_us;
    state.counters["p99_us"] = r.p99_us;
  }
}

void BM_EmptyCall(benchmark::State& state) {
  Cluster& cluster = ClusterFor(DynamicReplicationMode::kOff);
  auto client = GrpcMasterClient::Connect(cluster.address(), RpcOptions{});
  HS_CHECK_OK(client.status());
  Measure(state, "empty", [&] { return (*client)->Ping(); });
  state.counters["calls_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void GetReplicaList(benchmark::State& state, DynamicReplicationMode mode, const char* name) {
  Cluster& cluster = ClusterFor(mode);
  auto rpc = GrpcMasterClient::Connect(cluster.address(), RpcOptions{});
  HS_CHECK_OK(rpc.status());
  HeatsinkClientOptions options;
  options.client_id = ClientId(1000 + state.thread_index());
  options.domain = "b";
  HeatsinkClient client(rpc->get(), options);
  Measure(state, name, [&] { return client.Lookup("hot").status(); });
  state.counters["calls_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void BM_GetReplicaList_Off(benchmark::State& state) {
  GetReplicaList(state, DynamicReplicationMode::kOff, "get_replica_list_off");
}
void BM_GetReplicaList_Enforce(benchmark::State& state) {
  GetReplicaList(state, DynamicReplicationMode::kEnforce, "get_replica_list_enforce");
}

BENCHMARK(BM_EmptyCall)->Threads(1)->Threads(4)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_GetReplicaList_Off)->Threads(1)->Threads(4)->UseRealTime()->MinTime(1.0);
BENCHMARK(BM_GetReplicaList_Enforce)->Threads(1)->Threads(4)->UseRealTime()->MinTime(1.0);

void PrintSummary() {
  std::lock_guard<std::mutex> lock(g_mu);
  const auto& results = Results();
  for (int threads : {1, 4}) {
    const std::string suffix = absl::StrCat("/threads:", threads);
    auto empty = results.find("empty" + suffix);
    if (empty == results.end() || empty->second.calls_per_second <= 0) continue;
    std::printf("\nControl-plane calls, %d caller thread(s), loopback gRPC (same run):\n", threads);
    std::printf("  %-26s %10.0f calls/s  p50 %7.1f us  p99 %7.1f us  1.00x (baseline)\n",
                "empty call", empty->second.calls_per_second, empty->second.p50_us,
                empty->second.p99_us);
    for (const char* name : {"get_replica_list_off", "get_replica_list_enforce"}) {
      auto it = results.find(name + suffix);
      if (it == results.end()) continue;
      std::printf("  %-26s %10.0f calls/s  p50 %7.1f us  p99 %7.1f us  %.2fx empty\n", name,
                  it->second.calls_per_second, it->second.p50_us, it->second.p99_us,
                  it->second.calls_per_second / empty->second.calls_per_second);
    }
    auto off = results.find("get_replica_list_off" + suffix);
    auto enforce = results.find("get_replica_list_enforce" + suffix);
    if (off != results.end() && enforce != results.end() && off->second.calls_per_second > 0) {
      const double ratio = enforce->second.calls_per_second / off->second.calls_per_second;
      std::printf("  enforce vs off: %.3fx (target >= 0.95x: %s)\n", ratio,
                  ratio >= 0.95 ? "met" : "MISSED");
    }
  }
}

}  // namespace
}  // namespace heatsink::runtime

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  heatsink::runtime::PrintSummary();
  return 0;
}
