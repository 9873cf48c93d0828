// Copy throughput of the data plane between two in-process stores on
// loopback, against the baseline of the same bytes pushed through one raw TCP
// socket in the same run (sender -> receiver buffer, then a one-byte
// acknowledgement, as a copy is acknowledged).
//
//   BM_RawSocket   the baseline
//   BM_TcpMover    TcpDataMover -> TcpDataServer (framed, chunked, acked)
//   BM_TlsMover    the same over TLS (tls_stream.h; certificates made at start
//                  by tools/make-certs.sh, skipped without `openssl`)
//   BM_UcxMover    UcxDataMover: TCP bootstrap, ucp_put_nbx + flush, commit
//
// After the benchmarks a summary prints each mover's throughput as a ratio of
// the raw socket's (target: UCX >= 0.7x raw over TCP), and TLS against clear.
//
// UCX transport: UCX_TLS and UCX_NET_DEVICES from the environment, defaulting
// here to tcp,self on lo. Both stores run in this process, so on an RDMA
// machine run it on a host with a verbs device, e.g. UCX_TLS=rc,self
// UCX_NET_DEVICES=mlx5_0:1 (the HCA loops the puts back); the raw baseline
// stays TCP, so there the ratio shows how far RDMA beats the kernel path and
// the UCX figure should approach line rate. docs/runtime.md has the steps.
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "core/base/check.h"
#include "core/base/mutex.h"
#include "runtime/env/notification.h"
#include "runtime/env/runtime_env.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/socket.h"
#include "runtime/transport/tcp_data_mover.h"
#include "runtime/transport/tcp_data_server.h"
#include "runtime/transport/tls_stream.h"
#include "runtime/transport/ucx_data_mover.h"

namespace heatsink::runtime {
namespace {

constexpr uint64_t kCopyBytes = uint64_t{64} << 20;
// Send and receive size of the raw baseline: the TCP mover's default chunk.
constexpr uint64_t kChunkBytes = uint64_t{1} << 20;
constexpr SegmentId kSource(1);
constexpr SegmentId kTarget(2);

// Bytes per second of each benchmark, measured over all its iterations.
Mutex g_mu;
std::map<std::string, double>& Throughputs() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_mu) {
  static auto* m = new std::map<std::string, double>();
  return *m;
}

void Record(benchmark::State& state, const std::string& name, double seconds) {
  const double bytes = static_cast<double>(state.iterations()) * static_cast<double>(kCopyBytes);
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  const double rate = seconds > 0 ? bytes / seconds : 0;
  state.counters["GiB_per_s"] = rate / (1 << 30);
  MutexLock lock(&g_mu);
  Throughputs()[name] = rate;
}

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void BM_RawSocket(benchmark::State& state) {
  absl::StatusOr<Socket> listener = ListenTcp("127.0.0.1", 0, 4);
  HS_CHECK_OK(listener.status());
  const int port = *LocalPort(*listener);
  // Page-aligned like segment memory, so the kernel copies are alike.
  AlignedSegmentAllocator allocator;
  absl::StatusOr<std::unique_ptr<SegmentBuffer>> source_buffer = allocator.Allocate(kCopyBytes);
  absl::StatusOr<std::unique_ptr<SegmentBuffer>> target_buffer = allocator.Allocate(kCopyBytes);
  HS_CHECK_OK(source_buffer.status());
  HS_CHECK_OK(target_buffer.status());
  uint8_t* const source = (*source_buffer)->data();
  uint8_t* const target = (*target_buffer)->data();
  std::atomic<bool> stop{false};
  std::thread receiver([&] {
    absl::StatusOr<Socket> s = AcceptTcp(*listener);
    HS_CHECK_OK(s.status());
    HS_CHECK_OK(ConfigureStream(*s, 0));
    while (true) {
      // Received in chunk-sized calls like the data server's frames: one
      // 64 MiB recv holds the socket lock through a long copy and measurably
      // slows the receive path, which would flatter the movers.
      for (uint64_t off = 0; off < kCopyBytes; off += kChunkBytes) {
        if (!RecvAll(*s, target + off, kChunkBytes).ok()) return;
      }
      const char ack = 1;
      if (!SendAll(*s, &ack, 1).ok()) return;
    }
  });
  absl::StatusOr<Socket> sender = ConnectTcp(absl::StrCat("127.0.0.1:", port), 1000, 0);
  HS_CHECK_OK(sender.status());
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = Now();
    for (uint64_t off = 0; off < kCopyBytes; off += kChunkBytes) {
      HS_CHECK_OK(SendAll(*sender, source + off, kChunkBytes));
    }
    char ack;
    HS_CHECK_OK(RecvAll(*sender, &ack, 1));
    seconds += Now() - t0;
  }
  sender->ShutdownBoth();
  receiver.join();
  Record(state, "raw", seconds);
}

struct Stores {
  RuntimeEnv env{RuntimeEnvOptions{.executor = {.threads = 1}}};  // the movers read its clock
  AlignedSegmentAllocator allocator;
  SegmentMemory a{&allocator, SegmentMemoryKnobs{}};
  SegmentMemory b{&allocator, SegmentMemoryKnobs{}};
  StaticEndpointResolver resolver;
  Stores() {
    HS_CHECK_OK(a.Create(kSource, kCopyBytes));
    HS_CHECK_OK(b.Create(kTarget, kCopyBytes));
  }
};

double RunCopies(benchmark::State& state, DataMover& mover) {
  double seconds = 0;
  for (auto _ : state) {
    const double t0 = Now();
    Notification done;
    absl::Status result;
    mover.StartCopy(CopyRange{kSource, 0, kTarget, 0, kCopyBytes}, [&](absl::Status s) {
      result = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    HS_CHECK_OK(result);
    seconds += Now() - t0;
  }
  return seconds;
}

// Copies between two in-process stores through a TCP data server and mover
// with `knobs` (clear or TLS), reported under `label`.
void RunTcpCopies(benchmark::State& state, const TcpTransportKnobs& knobs, const char* label) {
  Stores stores;
  auto server = TcpDataServer::Start(stores.env.env()->clock, &stores.b, knobs);
  HS_CHECK_OK(server.status());
  HS_CHECK_OK(stores.resolver.Set(kTarget, (*server)->endpoint()));
  TcpDataMover mover(stores.env.env()->clock, &stores.a, &stores.resolver, knobs);
  const double seconds = RunCopies(state, mover);
  mover.Shutdown();
  (*server)->Shutdown();
  Record(state, label, seconds);
}

void BM_TcpMover(benchmark::State& state) { RunTcpCopies(state, TcpTransportKnobs(), "tcp"); }

// A CA, a server certificate for 127.0.0.1 and a client certificate, made
// once per run in a temporary directory; empty when `openssl` is missing.
std::string CertificateDir() {
  static const std::string dir = [] {
    const std::string d = (std::filesystem::temp_directory_path() /
                           absl::StrCat("heatsink_bench_tls_", getpid()))
                              .string();
    const std::string command = absl::StrCat(HEATSINK_SOURCE_DIR, "/tools/make-certs.sh cluster ",
                                             d, " 1 > /dev/null 2>&1");
    return std::system(command.c_str()) == 0 ? d : std::string();
  }();
  return dir;
}

void BM_TlsMover(benchmark::State& state) {
  const std::string dir = CertificateDir();
  if (dir.empty()) {
    state.SkipWithError("openssl is not installed: no certificates for TLS");
    return;
  }
  TcpTransportKnobs knobs;
  auto server_tls = TlsContext::Create(
      TlsContext::Side::kServer, {dir + "/master.pem", dir + "/master.key", dir + "/ca.pem"});
  auto client_tls = TlsContext::Create(
      TlsContext::Side::kClient, {dir + "/client-1.pem", dir + "/client-1.key", dir + "/ca.pem"});
  HS_CHECK_OK(server_tls.status());
  HS_CHECK_OK(client_tls.status());
  knobs.tls_server = *server_tls;
  knobs.tls_client = *client_tls;
  RunTcpCopies(state, knobs, "tls");
}

void BM_UcxMover(benchmark::State& state) {
  Stores stores;
  UcxMoverOptions options;
  auto source = UcxDataMover::Create(stores.env.env()->clock, &stores.a, &stores.resolver, options);
  HS_CHECK_OK(source.status());
  auto target = UcxDataMover::Create(stores.env.env()->clock, &stores.b, &stores.resolver, options);
  HS_CHECK_OK(target.status());
  auto server =
      TcpDataServer::Start(stores.env.env()->clock, &stores.b, options.tcp, target->get());
  HS_CHECK_OK(server.status());
  HS_CHECK_OK(stores.resolver.Set(kTarget, (*server)->endpoint()));
  const double seconds = RunCopies(state, **source);
  (*server)->Shutdown();
  (*source)->Shutdown();
  (*target)->Shutdown();
  Record(state, "ucx", seconds);
}

BENCHMARK(BM_RawSocket)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_TcpMover)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_TlsMover)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_UcxMover)->UseRealTime()->Unit(benchmark::kMillisecond)->MinTime(2.0);

void PrintSummary() {
  MutexLock lock(&g_mu);
  const auto& t = Throughputs();
  auto it = t.find("raw");
  if (it == t.end() || it->second <= 0) {
    std::printf("\nno raw-socket baseline in this run; no ratios\n");
    return;
  }
  const double raw = it->second;
  std::printf("\nCopy throughput of %llu MiB objects vs raw loopback socket (same run):\n",
              static_cast<unsigned long long>(kCopyBytes >> 20));
  std::printf("  %-4s %8.2f GiB/s  1.00x (baseline)\n", "raw", raw / (1 << 30));
  for (const char* name : {"tcp", "tls", "ucx"}) {
    auto m = t.find(name);
    if (m == t.end()) continue;
    std::printf("  %-4s %8.2f GiB/s  %.2fx raw%s\n", name, m->second / (1 << 30), m->second / raw,
                std::string(name) == "ucx" ? (m->second / raw >= 0.7 ? "  (target >= 0.7x: met)"
                                                                     : "  (target >= 0.7x: MISSED)")
                                           : "");
  }
  auto tcp = t.find("tcp");
  auto tls = t.find("tls");
  if (tcp != t.end() && tls != t.end() && tcp->second > 0) {
    std::printf("  tls / tcp (clear): %.2fx\n", tls->second / tcp->second);
  }
}

}  // namespace
}  // namespace heatsink::runtime

int main(int argc, char** argv) {
  // As the stores run: without Abseil's lock-order checks (tools/runtime_flags.h).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  setenv("UCX_TLS", "tcp,self", /*overwrite=*/0);
  setenv("UCX_NET_DEVICES", "lo", 0);
  std::printf("UCX_TLS=%s UCX_NET_DEVICES=%s\n", getenv("UCX_TLS"), getenv("UCX_NET_DEVICES"));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  heatsink::runtime::PrintSummary();
  return 0;
}
