// heatsink-load: a load generator for a real Heatsink cluster.
//
//   storm  (default): --threads readers in --domain hammer --keys hot keys
//          (written first) with Get (or, with --lookup-only, only the
//          master's GetReplicaList) for --duration-ms.
//   zipf:  writes --keys keys "zipf-<rank>", the coldest first (so with
//          --write-segments LOCAL,FOREIGN a head-pool store's local segment
//          fills with the cold tail and the hottest keys land in foreign
//          memory, as static local-first admission leaves them), then
//          --threads readers draw ranks from a Zipf law of exponent --zipf-s
//          (rank r read with weight 1/(r+1)^s) for --duration-ms.
//   trace: replays a Mooncake trace (JSONL with `hash_ids`): every request
//          reads its prefix blocks as keys "block-<id>", writing a block of
//          --value-bytes the first time it is missing (a prefill), reading
//          it afterwards (a cache hit).
// Prints throughput, latency percentiles (p50, p99, max), errors and how reads
// spread over segments.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "core/env/rng.h"
#include "core/replication/replication_knobs.h"
#include "nlohmann/json.hpp"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/steady_clock.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/grpc_store_client.h"
#include "runtime/transport/tls_stream.h"
#include "tools/runtime_flags.h"

namespace heatsink {
namespace {

struct Flags {
  std::string master = "127.0.0.1:50051";
  std::string mode = "storm";
  std::string trace;
  int threads = 8;
  int64_t duration_ms = 5000;
  std::string domain;
  std::string writer_domain;
  std::string host = "load";
  std::string tenant;
  int keys = 1;
  uint64_t value_bytes = 64 << 10;
  int put_batch = 1;  // keys per BatchPut when writing the keys (1: one Put each)
  bool lookup_only = false;
  std::string policy = "first";
  uint64_t client_id_base = 1'000'000;
  uint64_t client_id = 0;  // when set, every thread and the writer use it
  int64_t trace_requests_max = 100'000;
  std::string data_path = "tcp";
  double zipf_s = 1.0;
  uint64_t seed = 1;
  std::vector<uint64_t> write_segments;
  runtime::RpcOptions rpc;
  // How bytes move (shared by every client of the run).
  runtime::ObjectDataPath* data = nullptr;
  // The process's clock, read by every master client of the run.
  runtime::SteadyClock clock;
};

// The client id of reader thread `t`: --client-id when given (one identity,
// as a client certificate proves), else base + 1 + t.
ClientId ReaderId(const Flags& flags, int t) {
  if (flags.client_id != 0) return ClientId(flags.client_id);
  return ClientId(flags.client_id_base + 1 + static_cast<uint64_t>(t));
}

// The flags' RPC options for a client calling as `client`.
runtime::RpcOptions RpcAs(const Flags& flags, ClientId client) {
  runtime::RpcOptions rpc = flags.rpc;
  rpc.caller_client_id = client.value;
  return rpc;
}

// Longest pause between retries of a read answered UNAVAILABLE.
constexpr int64_t kUnavailableBackoffMaxMs = 200;
// How long a put answered UNAVAILABLE (no leader yet, a recovering master) is
// retried before the run gives up.
constexpr int64_t kPutRetryMs = 30'000;

struct ThreadResult {
  std::vector<int64_t> latencies_ns;
  // Longest run of UNAVAILABLE reads that a successful read ended (a master
  // failing over: from the first refused read to the next successful one).
  int64_t unavailable_max_ns = 0;
  int64_t errors = 0;
  int64_t bytes = 0;
  std::map<uint64_t, int64_t> reads_by_segment;
  std::string first_error;
};

std::string Value(uint64_t seed, uint64_t size) {
  Rng rng(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(rng.Next64());
  return out;
}

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Report(const Flags& flags, std::vector<ThreadResult>& results, int64_t elapsed_ns) {
  std::vector<int64_t> all;
  int64_t errors = 0, bytes = 0;
  std::map<uint64_t, int64_t> by_segment;
  std::string first_error;
  int64_t unavailable_max_ns = 0;
  for (ThreadResult& r : results) {
    unavailable_max_ns = std::max(unavailable_max_ns, r.unavailable_max_ns);
    all.insert(all.end(), r.latencies_ns.begin(), r.latencies_ns.end());
    errors += r.errors;
    bytes += r.bytes;
    for (const auto& [segment, n] : r.reads_by_segment) by_segment[segment] += n;
    if (first_error.empty()) first_error = r.first_error;
  }
  std::sort(all.begin(), all.end());
  auto pct = [&](double p) -> double {
    if (all.empty()) return 0;
    const size_t i = std::min(all.size() - 1, static_cast<size_t>(p * (all.size() - 1)));
    return static_cast<double>(all[i]) / 1e3;
  };
  const double seconds = static_cast<double>(elapsed_ns) / 1e9;
  std::printf("mode=%s op=%s threads=%d domain=%s data_path=%s\n", flags.mode.c_str(),
              flags.lookup_only ? "GetReplicaList" : "Get", flags.threads,
              flags.domain.empty() ? "default" : flags.domain.c_str(), flags.data_path.c_str());
  std::printf("ops=%zu errors=%lld seconds=%.3f ops_per_second=%.1f MiB_per_second=%.1f\n",
              all.size(), static_cast<long long>(errors), seconds,
              seconds > 0 ? static_cast<double>(all.size()) / seconds : 0.0,
              seconds > 0 ? static_cast<double>(bytes) / seconds / (1 << 20) : 0.0);
  std::printf("latency_us p50=%.1f p99=%.1f max=%.1f\n", pct(0.50), pct(0.99), pct(1.0));
  if (unavailable_max_ns > 0) {
    std::printf("unavailable_until_read_ms max=%.0f\n",
                static_cast<double>(unavailable_max_ns) / 1e6);
  }
  for (const auto& [segment, n] : by_segment) {
    std::printf("reads segment=%llu count=%lld\n", static_cast<unsigned long long>(segment),
                static_cast<long long>(n));
  }
  if (!first_error.empty()) std::printf("first_error=%s\n", first_error.c_str());
}

// The writer's options: --write-segments, else the segments of
// --writer-domain (at most two), else where the master allocates. NOT_FOUND
// when --writer-domain has no segment.
absl::StatusOr<runtime::HeatsinkClientOptions> WriterOptions(
    const Flags& flags, const runtime::HeatsinkClientOptions& base,
    runtime::GrpcMasterClient& writer_rpc) {
  runtime::HeatsinkClientOptions writer_options = base;
  for (uint64_t id : flags.write_segments) {
    writer_options.preferred_segments.push_back(SegmentId(id));
  }
  if (writer_options.preferred_segments.empty() && !flags.writer_domain.empty()) {
    absl::StatusOr<std::vector<SegmentView>> segments = writer_rpc.ListSegments();
    if (!segments.ok()) return segments.status();
    for (const SegmentView& s : *segments) {
      if (s.location.domain == flags.writer_domain &&
          writer_options.preferred_segments.size() < 2) {
        writer_options.preferred_segments.push_back(s.location.id);
      }
    }
    if (writer_options.preferred_segments.empty()) {
      return absl::NotFoundError(absl::StrCat("no segment in domain '", flags.writer_domain, "'"));
    }
  }
  return writer_options;
}

// Readers of `keys` until `duration_ms` is over; `pick(thread, rng)` chooses
// the index of the next key. Prints the report.
template <typename Pick>
int ReadFor(const Flags& flags, const runtime::HeatsinkClientOptions& base,
            const std::vector<std::string>& keys, Pick pick) {
  std::vector<ThreadResult> results(flags.threads);
  std::vector<std::unique_ptr<runtime::GrpcMasterClient>> rpcs;
  for (int t = 0; t < flags.threads; ++t) {
    absl::StatusOr<std::unique_ptr<runtime::GrpcMasterClient>> rpc =
        runtime::GrpcMasterClient::Connect(&flags.clock, flags.master,
                                           RpcAs(flags, ReaderId(flags, t)));
    if (!rpc.ok()) return 2;
    rpcs.push_back(*std::move(rpc));
  }
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  const int64_t start = NowNs();
  for (int t = 0; t < flags.threads; ++t) {
    threads.emplace_back([&, t] {
      runtime::HeatsinkClientOptions options = base;
      options.client_id = ReaderId(flags, t);
      runtime::HeatsinkClient client(rpcs[t].get(), flags.data, options);
      ThreadResult& r = results[t];
      Rng rng(flags.seed + static_cast<uint64_t>(t));
      int64_t unavailable_since = 0;  // first UNAVAILABLE read after a success
      int64_t backoff_ms = 0;
      for (uint64_t i = t; !stop.load(std::memory_order_relaxed); ++i) {
        const std::string& key = keys[pick(i, rng)];
        const int64_t begin = NowNs();
        absl::Status status;
        if (flags.lookup_only) {
          status = client.Lookup(key).status();
        } else {
          absl::StatusOr<runtime::GetResult> got = client.Get(key);
          status = got.status();
          if (got.ok()) {
            r.bytes += static_cast<int64_t>(got->bytes.size());
            ++r.reads_by_segment[got->segment.value];
          }
        }
        const int64_t end = NowNs();
        r.latencies_ns.push_back(end - begin);
        if (status.ok()) {
          if (unavailable_since > 0) {
            r.unavailable_max_ns = std::max(r.unavailable_max_ns, end - unavailable_since);
          }
          unavailable_since = 0;
          backoff_ms = 0;
        } else {
          ++r.errors;
          if (r.first_error.empty()) r.first_error = status.ToString();
        }
        // A master failing over or recovering: back off (10 ms, doubling up
        // to kUnavailableBackoffMaxMs) instead of spinning.
        if (absl::IsUnavailable(status)) {
          if (unavailable_since == 0) unavailable_since = begin;
          backoff_ms = std::min<int64_t>(backoff_ms == 0 ? 10 : backoff_ms * 2,
                                         kUnavailableBackoffMaxMs);
          std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(flags.duration_ms));
  stop.store(true);
  for (std::thread& t : threads) t.join();
  Report(flags, results, NowNs() - start);
  return 0;
}

// Writes `keys[order[i]]` for each i with values of --value-bytes; an
// existing key is kept.
int WriteKeys(const Flags& flags, const runtime::HeatsinkClientOptions& base,
              const std::vector<std::string>& keys, const std::vector<size_t>& order) {
  absl::StatusOr<std::unique_ptr<runtime::GrpcMasterClient>> writer_rpc =
      runtime::GrpcMasterClient::Connect(&flags.clock, flags.master, RpcAs(flags, base.client_id));
  if (!writer_rpc.ok()) {
    std::fprintf(stderr, "heatsink-load: %s\n", writer_rpc.status().ToString().c_str());
    return 2;
  }
  absl::StatusOr<runtime::HeatsinkClientOptions> writer_options =
      WriterOptions(flags, base, **writer_rpc);
  if (!writer_options.ok()) {
    std::fprintf(stderr, "heatsink-load: %s\n",
                 std::string(writer_options.status().message()).c_str());
    return 1;
  }
  runtime::HeatsinkClient writer(writer_rpc->get(), flags.data, *writer_options);
  // A key whose put was UNAVAILABLE (a store still joining) is put again,
  // alone, with backoff.
  const auto finish = [&](size_t k, absl::Status put) {
    for (int64_t waited_ms = 0, backoff_ms = 10;
         absl::IsUnavailable(put) && waited_ms < kPutRetryMs;
         waited_ms += backoff_ms, backoff_ms = std::min<int64_t>(backoff_ms * 2, 500)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
      put = writer.Put(keys[k], Value(k + 1, flags.value_bytes));
    }
    if (!put.ok() && put.code() != absl::StatusCode::kAlreadyExists) {
      std::fprintf(stderr, "heatsink-load: put %s: %s\n", keys[k].c_str(), put.ToString().c_str());
      return false;
    }
    return true;
  };
  const size_t batch = static_cast<size_t>(flags.put_batch);
  size_t calls = 0;  // Put or BatchPut calls, retries aside
  for (size_t first = 0; first < order.size(); first += batch) {
    const size_t last = std::min(order.size(), first + batch);
    ++calls;
    if (batch == 1) {
      const size_t k = order[first];
      if (!finish(k, writer.Put(keys[k], Value(k + 1, flags.value_bytes)))) return 1;
      continue;
    }
    std::vector<std::string> names;
    std::vector<std::string> values;
    for (size_t i = first; i < last; ++i) {
      names.push_back(keys[order[i]]);
      values.push_back(Value(order[i] + 1, flags.value_bytes));
    }
    const std::vector<absl::string_view> views(values.begin(), values.end());
    absl::StatusOr<std::vector<absl::Status>> puts = writer.BatchPut(names, views);
    if (!puts.ok()) {
      std::fprintf(stderr, "heatsink-load: batch put of %zu keys from %s: %s\n", names.size(),
                   names.front().c_str(), puts.status().ToString().c_str());
      return 1;
    }
    for (size_t i = first; i < last; ++i) {
      if (!finish(order[i], (*puts)[i - first])) return 1;
    }
  }
  std::printf("writes keys=%zu calls=%zu\n", order.size(), calls);
  return 0;
}

int RunZipf(const Flags& flags, const runtime::HeatsinkClientOptions& base) {
  std::vector<std::string> keys;
  std::vector<size_t> coldest_first;
  // cumulative[r]: the weight of ranks 0..r, normalised to end at 1.
  std::vector<double> cumulative;
  double total = 0;
  for (int r = 0; r < flags.keys; ++r) {
    keys.push_back(absl::StrCat("zipf-", r));
    coldest_first.push_back(static_cast<size_t>(flags.keys - 1 - r));
    total += 1.0 / std::pow(static_cast<double>(r + 1), flags.zipf_s);
    cumulative.push_back(total);
  }
  for (double& c : cumulative) c /= total;
  if (int rc = WriteKeys(flags, base, keys, coldest_first); rc != 0) return rc;
  return ReadFor(flags, base, keys, [&](uint64_t, Rng& rng) {
    const double u = rng.NextDouble01();
    const size_t r = static_cast<size_t>(std::upper_bound(cumulative.begin(), cumulative.end(), u) -
                                         cumulative.begin());
    return std::min(r, cumulative.size() - 1);
  });
}

int RunStorm(const Flags& flags, const runtime::HeatsinkClientOptions& base) {
  std::vector<std::string> keys;
  std::vector<size_t> order;
  for (int k = 0; k < flags.keys; ++k) {
    keys.push_back(absl::StrCat("hot-", k));
    order.push_back(static_cast<size_t>(k));
  }
  if (int rc = WriteKeys(flags, base, keys, order); rc != 0) return rc;
  return ReadFor(flags, base, keys, [&](uint64_t i, Rng&) { return i % keys.size(); });
}

int RunTrace(const Flags& flags, const runtime::HeatsinkClientOptions& base) {
  std::ifstream in(flags.trace);
  if (!in) {
    std::fprintf(stderr, "heatsink-load: cannot read trace '%s'\n", flags.trace.c_str());
    return 2;
  }
  std::vector<std::vector<uint64_t>> requests;
  std::string line;
  int64_t number = 0;
  while (std::getline(in, line) &&
         static_cast<int64_t>(requests.size()) < flags.trace_requests_max) {
    ++number;
    if (line.empty()) continue;
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object() || !record.contains("hash_ids") ||
        !record["hash_ids"].is_array()) {
      std::fprintf(stderr, "heatsink-load: %s:%lld: not a trace record\n", flags.trace.c_str(),
                   static_cast<long long>(number));
      return 2;
    }
    std::vector<uint64_t> blocks;
    for (const nlohmann::json& id : record["hash_ids"]) {
      if (!id.is_number_unsigned()) continue;
      blocks.push_back(id.get<uint64_t>());
    }
    requests.push_back(std::move(blocks));
  }
  std::vector<ThreadResult> results(flags.threads);
  std::vector<std::thread> threads;
  std::atomic<size_t> next{0};
  const int64_t start = NowNs();
  for (int t = 0; t < flags.threads; ++t) {
    threads.emplace_back([&, t] {
      absl::StatusOr<std::unique_ptr<runtime::GrpcMasterClient>> rpc =
          runtime::GrpcMasterClient::Connect(&flags.clock, flags.master,
                                             RpcAs(flags, ReaderId(flags, t)));
      if (!rpc.ok()) return;
      runtime::HeatsinkClientOptions options = base;
      options.client_id = ReaderId(flags, t);
      runtime::HeatsinkClient client(rpc->get(), flags.data, options);
      ThreadResult& r = results[t];
      for (size_t i = next.fetch_add(1); i < requests.size(); i = next.fetch_add(1)) {
        for (uint64_t block : requests[i]) {
          const std::string key = absl::StrCat("block-", block);
          const int64_t begin = NowNs();
          absl::StatusOr<runtime::GetResult> got = client.Get(key);
          absl::Status status = got.status();
          if (got.ok()) {
            r.bytes += static_cast<int64_t>(got->bytes.size());
            ++r.reads_by_segment[got->segment.value];
          } else if (status.code() == absl::StatusCode::kNotFound) {
            status = client.Put(key, Value(block, flags.value_bytes));
            if (status.code() == absl::StatusCode::kAlreadyExists) status = absl::OkStatus();
          }
          r.latencies_ns.push_back(NowNs() - begin);
          if (!status.ok()) {
            ++r.errors;
            if (r.first_error.empty()) r.first_error = status.ToString();
          }
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  Report(flags, results, NowNs() - start);
  return 0;
}

// The flags that shape the keys, their values and the reads of them.
void AddWorkloadFlags(CLI::App& app, Flags& flags) {
  app.add_option("--zipf-s", flags.zipf_s,
                 "zipf: exponent of the Zipf law; rank r (0 = hottest) is read with weight "
                 "1/(r+1)^s")
      ->capture_default_str();
  app.add_option("--seed", flags.seed, "zipf: seed of the readers' draws (reader i uses seed+i)")
      ->capture_default_str();
  app.add_option("--host", flags.host, "host id the readers report")->capture_default_str();
  app.add_option("--tenant", flags.tenant, "tenant of every key (empty = default)");
  app.add_option("--keys", flags.keys, "hot keys in the storm")
      ->capture_default_str()
      ->check(CLI::Range(1, 1'000'000));
  app.add_option("--value-bytes", flags.value_bytes, "size of each written value")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  app.add_option("--put-batch", flags.put_batch,
                 "storm and zipf: write the keys in BatchPut calls of this many keys (1: one Put "
                 "per key)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_flag("--lookup-only", flags.lookup_only,
               "storm: only ask the master for replica lists (no data-plane reads)");
}

// What CLI11's checks cannot say: combinations and the RPC options.
absl::Status CheckFlags(const Flags& flags) {
  absl::Status status = flags.rpc.Validate();
  if (status.ok()) status = tools::CheckMasterFlag(flags.master);
  if (status.ok() && flags.mode == "trace" && flags.trace.empty()) {
    status = absl::InvalidArgumentError("--mode trace needs --trace FILE");
  }
  if (status.ok() && (!std::isfinite(flags.zipf_s) || flags.zipf_s <= 0 || flags.zipf_s > 10)) {
    status = absl::InvalidArgumentError(
        absl::StrCat("--zipf-s must be finite and in (0, 10], got ", flags.zipf_s));
  }
  if (status.ok() && flags.mode == "trace" && !flags.write_segments.empty()) {
    status = absl::InvalidArgumentError("--write-segments applies to storm and zipf");
  }
  return status;
}

}  // namespace
}  // namespace heatsink

int main(int argc, char** argv) {
  using namespace heatsink;
  Flags flags;
  CLI::App app{"heatsink-load: drive a Heatsink cluster and print throughput and latency."};
  app.add_option("--master", flags.master,
                 "master gRPC address host:port, or etcd://host:port[,host:port]/prefix to "
                 "follow the master elected there (heatsink-master --etcd)")
      ->capture_default_str();
  app.add_option("--mode", flags.mode,
                 "storm (hot-key reads), zipf (skewed reads over --keys keys, written coldest "
                 "first) or trace (Mooncake trace replay)")
      ->capture_default_str()
      ->check(CLI::IsMember({"storm", "zipf", "trace"}));
  app.add_option("--trace", flags.trace, "Mooncake trace JSONL file (mode trace)");
  app.add_option("--trace-requests-max", flags.trace_requests_max,
                 "replay at most this many trace records")
      ->capture_default_str();
  app.add_option("--threads", flags.threads, "reader threads, one client identity each")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  app.add_option("--duration-ms", flags.duration_ms, "how long the storm runs")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{1}, int64_t{86'400'000}));
  app.add_option("--domain", flags.domain, "domain the readers report (the heat's origin)");
  app.add_option("--writer-domain", flags.writer_domain,
                 "storm: write the hot keys into segments of this domain (default: where the "
                 "master allocates)");
  app.add_option("--write-segments", flags.write_segments,
                 "storm and zipf: segment ids the writes ask for, in order (at most the "
                 "master's preferred_segments_max; overrides --writer-domain)")
      ->delimiter(',');
  AddWorkloadFlags(app, flags);
  app.add_option("--policy", flags.policy, "replica selection: first or spread")
      ->capture_default_str()
      ->check(CLI::IsMember({"first", "spread"}));
  app.add_option("--client-id-base", flags.client_id_base,
                 "reader i uses client id base+1+i; the writer uses base")
      ->capture_default_str();
  app.add_option("--client-id", flags.client_id,
                 "every reader and the writer call as this one client (the id a client "
                 "certificate proves when the master requires certificates); overrides "
                 "--client-id-base");
  app.add_option("--data-path", flags.data_path,
                 "how bytes move: tcp (the stores' framed TCP endpoints) or grpc (their "
                 "heatsink.v1.Store service)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tcp", "grpc"}));
  tools::AddRpcFlags(app, flags.rpc, /*server=*/false);
  bool keep_deadlock_detection = false;
  tools::AddDeadlockDetectionFlag(app, keep_deadlock_detection);
  CLI11_PARSE(app, argc, argv);
  tools::ApplyDeadlockDetection(keep_deadlock_detection);

  const absl::Status status = CheckFlags(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "heatsink-load: %s\n", std::string(status.message()).c_str());
    return 2;
  }
  runtime::HeatsinkClientOptions base;
  base.client_id = ClientId(flags.client_id != 0 ? flags.client_id : flags.client_id_base);
  base.host = flags.host;
  base.domain = flags.domain;
  base.tenant = flags.tenant;
  base.replica_selection_policy = *ParseReplicaSelectionPolicy(flags.policy);
  if (!flags.rpc.tls.ca_path.empty()) {
    // Stores whose TCP data endpoint speaks TLS ("tls://") are reached with
    // the control plane's PEM files.
    absl::StatusOr<std::shared_ptr<const runtime::TlsContext>> tls = runtime::TlsContext::Create(
        runtime::TlsContext::Side::kClient,
        {flags.rpc.tls.cert_path, flags.rpc.tls.key_path, flags.rpc.tls.ca_path});
    if (!tls.ok()) {
      std::fprintf(stderr, "heatsink-load: --tls-ca/--tls-cert/--tls-key: %s\n",
                   std::string(tls.status().message()).c_str());
      return 2;
    }
    base.tcp.tls_client = *std::move(tls);
  }
  absl::StatusOr<std::unique_ptr<runtime::ObjectDataPath>> data =
      runtime::MakeObjectDataPath(flags.data_path, flags.rpc, base.tcp);
  if (!data.ok()) {
    std::fprintf(stderr, "heatsink-load: %s\n", std::string(data.status().message()).c_str());
    return 2;
  }
  flags.data = data->get();
  if (flags.mode == "zipf") return RunZipf(flags, base);
  return flags.mode == "storm" ? RunStorm(flags, base) : RunTrace(flags, base);
}
