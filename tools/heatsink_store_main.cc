// heatsink-store: a store process. Mounts one or more MEMORY segments of a
// configured size with the master, serves their bytes on a TCP data endpoint
// (reads, puts and incoming copies), heartbeats, and runs the core store
// worker's FetchTasks loop, executing REPLICA_COPY tasks over the TCP data
// mover, or, with --data-mover ucx, as UCX RMA puts into the target store's
// registered segment (RDMA verbs where a device exists, TCP otherwise, as
// UCX_TLS / UCX_NET_DEVICES select; every store it copies to must run UCX
// too). The domain comes from --domain, else HEATSINK_STORE_DOMAIN, else
// MOONCAKE_STORE_DOMAIN. Beside the TCP endpoint it serves the same segments
// over the gRPC store service (heatsink.v1.Store; clients with
// `data_path = grpc`) unless --no-data-service. With --segment-node the
// segments are mbind'ed to one NUMA node (the NIC's with "auto") and the
// process runs under MPOL_BIND|MPOL_F_STATIC_NODES there. With --memory the
// segments are the ADR-0019 head pool instead (runtime/numa/segment_head_pool.h):
// the first --memory bytes on the serving node, each --sub-memory region on
// its foreign node, every served read raising the scores of the chunks it
// covers, replica copies carrying the scores of their bytes to the target
// store (which raises its chunks to them unless --no-inherit-copy-score),
// and promotion threads moving the hottest blocks to the serving node
// without changing a segment address. With --data-tls-client-ca both data
// services apply the read rules of runtime/rpc/read_access.h (the owner, a
// copy lease the master confirms, or a reader of the objects' tenant); without
// it the store says once at start that readers are not checked. SIGHUP reads
// the PEM files again (the data services' and the client side's for new
// connections to other stores). SIGINT/SIGTERM stop
// it cleanly: its segments are unmounted (the master drops their replicas at
// once), then it exits.
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/status_macros.h"
#include "core/env/rng.h"
#include "runtime/env/runtime_env.h"
#include "runtime/numa/numa_head_memory.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/topology.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/metrics_endpoint.h"
#include "runtime/rpc/read_access.h"
#include "runtime/rpc/store_server.h"
#include "runtime/store/segment_directory_resolver.h"
#include "runtime/store/store_node.h"
#include "runtime/transport/tcp_knobs.h"
#include "runtime/transport/tls_stream.h"
#include "tools/numa_flags.h"
#include "tools/runtime_flags.h"

namespace heatsink {
namespace {

std::string DefaultHost() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

std::string DomainFromEnvironment() {
  for (const char* variable : {"HEATSINK_STORE_DOMAIN", "MOONCAKE_STORE_DOMAIN"}) {
    const char* value = std::getenv(variable);
    if (value != nullptr && value[0] != '\0') return value;
  }
  return "";
}

// --segment-node: "auto" (the NIC's node) or a node id, checked against the
// topology (hwloc, or --topology-xml): the node exists, has memory, and can
// hold every segment.
absl::StatusOr<int> ResolveSegmentNode(const std::string& flag, const std::string& topology_xml,
                                       uint64_t total_bytes) {
  int requested = -1;
  if (flag != "auto" && (!absl::SimpleAtoi(flag, &requested) || requested < 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--segment-node must be none, auto or a node id, got '", flag, "'"));
  }
  runtime::TopologyOptions topology_options;
  topology_options.xml_path = topology_xml;
  absl::StatusOr<Topology> topology = runtime::LoadTopology(topology_options);
  if (!topology.ok()) return topology.status();
  return runtime::PlanSegmentNode(*topology, requested, total_bytes);
}

// One line of the head pool's counters.
std::string DescribeHeadPool(runtime::SegmentHeadPool& pool) {
  const TieringStats t = pool.manager().stats();
  const runtime::PromotionServiceStats p = pool.service_stats();
  const runtime::SegmentHeadPoolStats s = pool.stats();
  return absl::StrCat("reads served ", s.reads, " (chunk reads local ", t.reads_local, ", foreign ",
                      t.reads_foreign, ", local-hit fraction ",
                      absl::StrFormat("%.3f", t.LocalHitFraction()), "), exchanges ", t.exchanges,
                      " (", t.exchange_bytes >> 20, " MiB moved, ", p.failed,
                      " failed), decay passes ", t.decay_passes, ", copies carrying scores out ",
                      s.copies_scored_out, ", in ", s.copies_scored_in, " (", s.chunk_scores_raised,
                      " chunks raised)");
}

std::string DescribeShare(const runtime::ServedHeadBytes& served) {
  return absl::StrFormat("%.2f%% of %.1f MiB", 100.0 * served.remote_share(),
                         static_cast<double>(served.total_bytes()) / (1 << 20));
}

// One line of the head pool's remote share: of the head bytes served since
// `last` (and before the first exchange, since the last one), the share read
// from blocks on a node other than the serving node, and whether the kernel
// has every block's pages where the pool counts them (move_pages).
std::string DescribeRemoteShare(runtime::SegmentHeadPool& pool, runtime::ServedHeadBytes* last,
                                const std::string& window) {
  const runtime::SegmentHeadPoolStats s = pool.stats();
  const absl::Status placed = pool.VerifyPlacement();
  std::string line = absl::StrCat(
      "remote share ", DescribeShare(s.served - *last), " served ", window, "; ",
      DescribeShare(s.served_before_exchange), " before the first exchange, ",
      DescribeShare(s.served_since_exchange), " since the last (", s.exchanges, " exchanges); ",
      placed.ok() ? std::string("every page on its block's node (move_pages)")
                  : absl::StrCat("page check: ", placed.message()));
  *last = s.served;
  return line;
}

// The TLS contexts of the framed TCP data path, kept to reload them on SIGHUP.
struct DataTls {
  std::shared_ptr<runtime::TlsContext> server;
  std::shared_ptr<runtime::TlsContext> client;
};

// TLS of the framed TCP data path (tls_stream.h) from the same PEM flags as
// the gRPC store service (this store's data endpoint) and the control plane
// (its copies to other stores' endpoints).
absl::Status SetDataTls(const runtime::RpcOptions& rpc, const runtime::RpcOptions& data_rpc,
                        runtime::TcpTransportKnobs* tcp, DataTls* contexts) {
  if (!data_rpc.tls.cert_path.empty()) {
    absl::StatusOr<std::shared_ptr<runtime::TlsContext>> server = runtime::TlsContext::Create(
        runtime::TlsContext::Side::kServer,
        {data_rpc.tls.cert_path, data_rpc.tls.key_path, data_rpc.tls.client_ca_path});
    if (!server.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--data-tls-cert/--data-tls-key/--data-tls-client-ca: ", server.status().message()));
    }
    contexts->server = *std::move(server);
    tcp->tls_server = contexts->server;
  }
  if (!rpc.tls.ca_path.empty()) {
    absl::StatusOr<std::shared_ptr<runtime::TlsContext>> client = runtime::TlsContext::Create(
        runtime::TlsContext::Side::kClient, {rpc.tls.cert_path, rpc.tls.key_path, rpc.tls.ca_path});
    if (!client.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--tls-ca/--tls-cert/--tls-key: ", client.status().message()));
    }
    contexts->client = *std::move(client);
    tcp->tls_client = contexts->client;
  }
  return absl::OkStatus();
}

// SIGHUP: every PEM file again. Each part that does not load keeps its
// previous files and says so.
void ReloadTls(runtime::StoreServer* data_service, const DataTls& contexts,
               runtime::GrpcMasterClient* master, bool master_tls) {
  const auto report = [](const char* what, const absl::Status& status) {
    if (status.ok()) {
      std::printf("heatsink-store: reload (SIGHUP): %s read again; new connections use them\n",
                  what);
    } else {
      std::printf("heatsink-store: reload (SIGHUP): %s: %s; the previous ones stay\n", what,
                  std::string(status.message()).c_str());
    }
  };
  if (data_service != nullptr) {
    const absl::Status status = data_service->ReloadTls();
    if (status.code() != absl::StatusCode::kFailedPrecondition) {
      report("gRPC data service --data-tls-cert/--data-tls-key/--data-tls-client-ca", status);
    }
  }
  if (contexts.server != nullptr) {
    report("TCP data endpoint --data-tls-cert/--data-tls-key/--data-tls-client-ca",
           contexts.server->Reload());
  }
  if (contexts.client != nullptr) {
    report("client side (copies to other stores) --tls-ca/--tls-cert/--tls-key",
           contexts.client->Reload());
  }
  if (master_tls) {
    report("channel to the master --tls-ca/--tls-cert/--tls-key", master->ReloadTls());
  }
  std::fflush(stdout);
}

std::vector<MetricFamily> ReadRuleMetrics(const runtime::ReadAccess* access) {
  std::vector<MetricFamily> out;
  runtime::AppendScalar(out, "store_reads_permission_denied_total",
                        "Reads refused by the store's read rules (nothing sent), both data "
                        "services.",
                        MetricType::kCounter, static_cast<int64_t>(access->refused()));
  return out;
}

// Every flag of heatsink-store, as given on the command line.
struct StoreFlags {
  std::string master_address = "127.0.0.1:50051";
  uint64_t client_id = 0;
  std::string host = DefaultHost();
  std::string domain;
  int segments = 1;
  uint64_t segment_mib = 256;
  uint64_t first_segment_id = 0;
  std::vector<std::string> settings;
  std::string endpoint_file;
  int threads = 2;
  int64_t heartbeat_interval_ms = 1000;
  int64_t fetch_interval_ms = 100;
  bool list_knobs = false;
  runtime::RpcOptions rpc;
  runtime::TcpTransportKnobs tcp;
  std::string data_service_listen;
  bool no_data_service = false;
  runtime::RpcOptions data_rpc;
  runtime::StoreServiceOptions data_service;
  std::string data_mover = "tcp";
  uint64_t ucx_put_chunk_mib = 8;
  std::string segment_node = "none";
  runtime::NumaMemoryOptions segment_memory;
  bool segment_commit_on_write = false;
  std::string topology_xml;
  runtime::NumaConfigFlags head_pool;
  int64_t head_pool_report_s = 0;
  std::string metrics_listen;
  TieringKnobs tiering;
  bool inherit_copy_score = true;
  std::vector<std::string> tenant_flags;
  bool keep_deadlock_detection = false;
};

constexpr const char* kStoreDescription =
    "heatsink-store: a Heatsink store (MEMORY segments, TCP data plane, copy tasks over TCP "
    "or UCX).\n"
    "Data-plane knobs use their registry names, e.g. --set chunk_bytes=1048576; "
    "--list-knobs prints them all.\n"
    "With --data-tls-client-ca both data services check who reads which range (the store "
    "itself, a copy-lease holder the master confirms, a reader of the objects' tenant; "
    "docs/runtime.md \"Who may read a range\"). SIGHUP reads every PEM file again "
    "(--data-tls-*, --tls-*): new connections, to and from this store, use them.";

// The master, this store's identity and its segments' size and memory.
void AddNodeFlags(CLI::App& app, StoreFlags& f) {
  app.add_option("--master", f.master_address,
                 "master gRPC address host:port, or etcd://host:port[,host:port]/prefix to "
                 "follow the master elected there (heatsink-master --etcd): the store calls "
                 "the leader, and registers again with its manifest when a new one leads")
      ->capture_default_str();
  app.add_option("--client-id", f.client_id,
                 "this store's client id (non-zero, below 2^56; default: derived from host and "
                 "process id). Give a fixed id so a restarted store is recognised.");
  app.add_option("--host", f.host, "host id reported to the master")->capture_default_str();
  app.add_option("--domain", f.domain,
                 "domain of this store (default: $HEATSINK_STORE_DOMAIN, then "
                 "$MOONCAKE_STORE_DOMAIN, then the default domain)");
  app.add_option("--segments", f.segments, "number of segments to mount")
      ->capture_default_str()
      ->check(CLI::Range(1, runtime::kStoreSegmentsMax));
  app.add_option("--first-segment-id", f.first_segment_id,
                 "the segments' ids are this, +1, ... (0: client id x 256 + index + 1, apart "
                 "from every other store's); ids given here must be unique across the stores")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 62));
  app.add_option("--segment-mib", f.segment_mib,
                 "size of each segment in MiB (with --memory: the head pool split into "
                 "--segments equal parts)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--segment-node", f.segment_node,
                 "NUMA node the segments are bound to: none (plain heap memory), auto (the "
                 "NIC's node, as hwloc reports it) or a node id. A bound store faults its "
                 "segments in at start (a node without room fails here) and runs with "
                 "set_mempolicy(MPOL_BIND|MPOL_F_STATIC_NODES) on that node.")
      ->capture_default_str();
  app.add_flag("--segment-huge-pages", f.segment_memory.huge_pages,
               "bound segments on explicit 2 MiB huge pages (reserve them first in "
               "/sys/devices/system/node/nodeN/hugepages)");
  app.add_flag("--segment-mlock", f.segment_memory.mlock,
               "lock bound segments in RAM (needs RLIMIT_MEMLOCK)");
  app.add_flag("--segment-commit-on-write", f.segment_commit_on_write,
               "plain segments take RAM as bytes land in them instead of being faulted in at "
               "start: segments may then add up to more than the machine's memory, as long as "
               "the data written fits (pages once written stay resident). Not with "
               "--segment-node or the head pool.");
  app.add_option("--topology-xml", f.topology_xml,
                 "hwloc XML to plan --segment-node or the head pool against instead of this "
                 "machine");
}

// The ADR-0019 head pool over the segments.
void AddStoreHeadPoolFlags(CLI::App& app, StoreFlags& f) {
  runtime::AddHeadPoolFlags(&app, &f.head_pool);
  app.get_option("--memory")
      ->description(
          "turns the segments into the ADR-0019 head pool: bytes of its preferred region on the "
          "serving node (K/M/G); with --sub-memory the foreign regions. The segments are the "
          "pool split into --segments equal parts; --segment-huge-pages and --segment-mlock "
          "apply; every served read raises the scores of the --ram-head chunks it covers")
      ->default_str("");
  app.add_option("--head-pool-report-s", f.head_pool_report_s,
                 "with --memory: print the head pool's reads, local-hit fraction and exchanges, "
                 "and its remote share (served head bytes read from a node other than the serving "
                 "node: in the interval, before the first exchange, since the last; every page's "
                 "node checked with move_pages) every this many seconds (0: only at exit)")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{0}, int64_t{86400}));
  app.add_flag("--inherit-copy-score,!--no-inherit-copy-score", f.inherit_copy_score,
               "with --memory: a replica copy landing here raises the chunks it covers to the "
               "decayed scores its bytes had on the source store (a source without a head pool "
               "carries none), times --set copy_score_inheritance (default 1.0); "
               "--no-inherit-copy-score is copy_score_inheritance=0; this store's own copies "
               "out carry its scores either way")
      ->capture_default_str();
}

// The TCP data endpoint, the copy mover, knobs and the worker's timing.
void AddDataPlaneFlags(CLI::App& app, StoreFlags& f) {
  app.add_option("--metrics-listen", f.metrics_listen,
                 "serve metrics (/metrics, Prometheus text) on host:port: the read rules' "
                 "refusals (heatsink_store_reads_permission_denied_total) and, with --memory, "
                 "the head pool's");
  app.add_option("--data-host", f.tcp.listen_host, "address the TCP data endpoint binds")
      ->capture_default_str();
  app.add_option("--data-port", f.tcp.listen_port, "port of the TCP data endpoint (0 = any free)")
      ->capture_default_str();
  app.add_option("--data-mover", f.data_mover,
                 "how this store copies replicas to other stores: tcp (framed TCP) or ucx (UCX "
                 "RMA puts into the target's registered segment; RDMA verbs where a device "
                 "exists, else what UCX_TLS allows, e.g. UCX_TLS=tcp,self UCX_NET_DEVICES=lo on "
                 "loopback). Every store a ucx store copies to must run ucx too.")
      ->capture_default_str()
      ->check(CLI::IsMember({"tcp", "ucx"}));
  app.add_option("--ucx-put-chunk-mib", f.ucx_put_chunk_mib,
                 "ucx: size of each RMA put of a copy (all in flight at once, one flush)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 12));
  app.add_option("--set", f.settings, "data-plane knob override name=value; repeatable");
  app.add_option("--endpoint-file", f.endpoint_file,
                 "write the data endpoint, client id and gRPC store service endpoint (one per "
                 "line; the last empty without the service) here once running");
  app.add_option("--threads", f.threads, "executor threads (heartbeats, task fetching)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--heartbeat-interval-ms", f.heartbeat_interval_ms,
                 "heartbeat period; the master's client_live_ttl_sec must cover a few")
      ->capture_default_str();
  app.add_option("--fetch-interval-ms", f.fetch_interval_ms, "FetchTasks period")
      ->capture_default_str();
  app.add_flag("--list-knobs", f.list_knobs, "print every data-plane knob and exit");
}

// The gRPC store service, TLS of both data services and the read rules.
void AddDataServiceFlags(CLI::App& app, StoreFlags& f) {
  app.add_option("--data-service-listen", f.data_service_listen,
                 "address of the gRPC store service (heatsink.v1.Store) serving the same "
                 "segments (default: the --data-host address, any free port)");
  app.add_flag("--no-data-service", f.no_data_service, "serve no gRPC store service");
  app.add_option("--data-chunk-bytes", f.data_service.data_chunk_bytes,
                 "largest data piece of one gRPC store message")
      ->capture_default_str();
  app.add_option("--data-tls-cert", f.data_rpc.tls.cert_path,
                 "PEM certificate chain of the gRPC store service and the TCP data endpoint "
                 "(enables TLS on both)");
  app.add_option("--data-tls-key", f.data_rpc.tls.key_path, "PEM private key of --data-tls-cert");
  app.add_option("--data-tls-client-ca", f.data_rpc.tls.client_ca_path,
                 "PEM CA for client certificates of the gRPC store service and the TCP data "
                 "endpoint (requires them). The data services then check who reads which "
                 "range: the store itself, a holder of a copy lease the master confirms, or a "
                 "reader of the objects' tenant (docs/runtime.md). SIGHUP reads every PEM file "
                 "of the store again (--data-tls-*, --tls-*): new connections use them, open "
                 "ones keep theirs; a file that does not load changes nothing.");
  app.add_option("--tls-trust-domain", f.data_rpc.tls.trust_domain,
                 "SPIFFE trust domain of readers' certificates "
                 "(spiffe://DOMAIN/heatsink/client/ID)")
      ->capture_default_str();
  app.add_option("--tenant", f.tenant_flags,
                 "ID=TENANT: a reader whose certificate names no tenant belongs to TENANT "
                 "(as heatsink-master --tenant); repeatable. Without a binding or a tenant in "
                 "its certificate, a reader belongs to the default tenant.");
}

// What the flags configure, checked. Not movable: the binder points at the
// topology.
struct StoreSetup {
  runtime::StoreNodeOptions options;
  std::optional<Topology> topology;  // with the head pool; outlives the binder
  std::optional<runtime::LinuxThreadBinder> binder;
  DataTls data_tls;
  runtime::TenantBindings tenants;
  // The read rules need the readers' certificates.
  bool readers_proven = false;
};

// --master and every --set, in order; the first error.
absl::Status ApplySettings(StoreFlags& f) {
  const std::vector<tools::KnobSetter> registries = {
      [&](absl::string_view n, absl::string_view v) {
        return runtime::TcpTransportKnobs::Registry().Set(f.tcp, n, v);
      },
      [&](absl::string_view n, absl::string_view v) {
        return TieringKnobs::Registry().Set(f.tiering, n, v);
      },
  };
  HS_RETURN_IF_ERROR(tools::CheckMasterFlag(f.master_address));
  for (const std::string& setting : f.settings) {
    HS_RETURN_IF_ERROR(tools::ApplySetting(setting, "--set", registries));
  }
  return absl::OkStatus();
}

// The node's options straight from the flags (before the head pool, the
// NUMA node and TLS are worked out).
void FillNodeOptions(StoreFlags& f, runtime::StoreNodeOptions& options) {
  options.client_id = ClientId(f.client_id);
  options.host = f.host;
  options.domain = f.domain;
  options.segments = f.segments;
  options.first_segment_id = f.first_segment_id;
  options.segment_bytes = f.segment_mib << 20;
  options.tcp = f.tcp;
  // The gRPC store service's copies yield as the TCP ones do; the
  // foreground tracker they share is made on the Env's clock (Run).
  f.data_service.copy_yield_max_ms = options.tcp.copy_yield_max_ms;
  f.data_service.copy_yield_quiet_us = options.tcp.copy_yield_quiet_us;
  options.data_mover =
      f.data_mover == "ucx" ? runtime::StoreDataMover::kUcx : runtime::StoreDataMover::kTcp;
  options.ucx_put_chunk_bytes = f.ucx_put_chunk_mib << 20;
  options.worker.heartbeat_interval_ms = f.heartbeat_interval_ms;
  options.worker.fetch_interval_ms = f.fetch_interval_ms;
  options.segment_memory = f.segment_memory;
  options.segment_commit = f.segment_commit_on_write ? runtime::SegmentCommit::kOnWrite
                                                     : runtime::SegmentCommit::kAtCreate;
}

// --memory: plans the head pool on the topology and makes the segments its
// equal parts (f.segment_mib follows).
absl::Status ConfigureHeadPool(const CLI::App& app, StoreFlags& f, StoreSetup& setup) {
  if (f.segment_node != "none") {
    return absl::InvalidArgumentError(
        "--segment-node binds every segment to one node; with --memory the head pool places "
        "them region by region (give --serving-node instead)");
  }
  f.head_pool.topology_xml = f.topology_xml;
  absl::StatusOr<Topology> loaded = runtime::LoadFor(f.head_pool);
  if (!loaded.ok()) return loaded.status();
  HS_ASSIGN_OR_RETURN(const TieringKnobs knobs, runtime::KnobsFor(f.head_pool, f.tiering));
  HS_ASSIGN_OR_RETURN(runtime::NumaPlacement placement,
                      runtime::PlanFor(*loaded, knobs, f.head_pool));
  setup.topology = *std::move(loaded);
  setup.binder.emplace(&*setup.topology);
  runtime::SegmentHeadPoolOptions pool;
  pool.knobs = knobs;
  pool.placement = std::move(placement);
  pool.memory = f.segment_memory;
  pool.binder = &*setup.binder;
  // --no-inherit-copy-score is --set copy_score_inheritance=0.
  pool.inherit_copy_score = f.inherit_copy_score && knobs.copy_score_inheritance > 0;
  const uint64_t total = pool.total_bytes();
  if (app.count("--segment-mib") > 0 &&
      total != static_cast<uint64_t>(f.segments) * (f.segment_mib << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--segments ", f.segments, " x --segment-mib ", f.segment_mib, " is not the head pool's ",
        total >> 20, " MiB (--memory + --sub-memory); leave --segment-mib out"));
  }
  setup.options.segment_bytes = total / static_cast<uint64_t>(f.segments);
  f.segment_mib = setup.options.segment_bytes >> 20;
  setup.options.head_pool = std::move(pool);
  return absl::OkStatus();
}

// The head pool or the segments' NUMA node, whichever the flags ask for.
absl::Status ConfigureMemory(const CLI::App& app, StoreFlags& f, StoreSetup& setup) {
  if (app.count("--memory") > 0) return ConfigureHeadPool(app, f, setup);
  if (f.head_pool_report_s > 0) {
    return absl::InvalidArgumentError("--head-pool-report-s needs --memory");
  }
  if (app.count("--inherit-copy-score") > 0) {
    // Only a head pool keeps scores; without one the flag would say nothing.
    return absl::InvalidArgumentError(
        "--inherit-copy-score and --no-inherit-copy-score need --memory (only the head pool "
        "keeps scores)");
  }
  if (f.segment_node != "none") {
    HS_ASSIGN_OR_RETURN(
        setup.options.segment_node,
        ResolveSegmentNode(f.segment_node, f.topology_xml,
                           static_cast<uint64_t>(f.segments) * (f.segment_mib << 20)));
  }
  return absl::OkStatus();
}

// TLS of both data services, the tenant bindings and the trust domain.
absl::Status ConfigureSecurity(StoreFlags& f, StoreSetup& setup) {
  HS_RETURN_IF_ERROR(SetDataTls(f.rpc, f.data_rpc, &setup.options.tcp, &setup.data_tls));
  for (const std::string& flag : f.tenant_flags) {
    if (absl::Status bound = setup.tenants.BindFromFlag(flag); !bound.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--tenant: ", bound.message()));
    }
  }
  HS_RETURN_IF_ERROR(runtime::ValidateTrustDomain(f.data_rpc.tls.trust_domain));
  setup.readers_proven =
      !f.data_rpc.tls.cert_path.empty() && !f.data_rpc.tls.client_ca_path.empty();
  if (setup.tenants.enabled() && !setup.readers_proven) {
    return absl::InvalidArgumentError(
        "--tenant needs --data-tls-cert and --data-tls-client-ca (readers proven by "
        "certificates)");
  }
  return absl::OkStatus();
}

// Everything after the settings: defaults from the environment, the node's
// options, memory, security, and every check; the first error.
absl::Status Configure(const CLI::App& app, StoreFlags& f, StoreSetup& setup) {
  if (f.domain.empty()) f.domain = DomainFromEnvironment();
  if (f.client_id == 0) {
    f.client_id = (StableHash(absl::StrCat(f.host, "/", getpid())) >> 8) | 1;
  }
  FillNodeOptions(f, setup.options);
  HS_RETURN_IF_ERROR(ConfigureMemory(app, f, setup));
  HS_RETURN_IF_ERROR(ConfigureSecurity(f, setup));
  HS_RETURN_IF_ERROR(setup.options.Validate());
  HS_RETURN_IF_ERROR(f.rpc.Validate());
  f.data_rpc.message_bytes_max = f.rpc.message_bytes_max;
  if (!f.no_data_service) HS_RETURN_IF_ERROR(f.data_service.Validate(f.data_rpc));
  if (f.data_service_listen.empty()) {
    f.data_service_listen = absl::StrCat(f.tcp.listen_host, ":0");
  }
  return absl::OkStatus();
}

// The read rules (read_access.h) of both data services, when the readers
// prove who they are; says which at start.
std::unique_ptr<runtime::ReadAccess> MakeReadAccess(const StoreFlags& f, const StoreSetup& setup,
                                                    Env* env, runtime::GrpcMasterClient* master) {
  if (!setup.readers_proven) {
    std::printf(
        "heatsink-store: readers are not checked: without --data-tls-cert and "
        "--data-tls-client-ca any client that reaches the data services may read any "
        "range\n");
    return nullptr;
  }
  runtime::ReadAccessOptions access;
  access.owner = ClientId(f.client_id);
  access.trust_domain = f.data_rpc.tls.trust_domain;
  access.tenants = setup.tenants;
  access.manifest_wait_ms = std::max<int64_t>(1'000, 3 * f.fetch_interval_ms);
  const uint64_t client_id = f.client_id;
  auto read_access = std::make_unique<runtime::ReadAccess>(
      env, std::move(access), [master, client_id](const CopyLeaseQuery& query) {
        return master->CheckCopyLease(ClientId(client_id), query);
      });
  std::printf(
      "heatsink-store: readers checked: the store itself, copy-lease holders the "
      "master confirms, readers of the objects' tenant (spiffe://%s/heatsink/...)\n",
      f.data_rpc.tls.trust_domain.c_str());
  return read_access;
}

// --metrics-listen: the head pool's, the read rules' and the foreground
// metrics.
absl::StatusOr<std::unique_ptr<runtime::MetricsEndpoint>> StartMetrics(
    const std::string& listen, runtime::SegmentHeadPool* pool, const runtime::ReadAccess* access,
    const runtime::ForegroundTraffic* foreground) {
  HS_ASSIGN_OR_RETURN(std::unique_ptr<runtime::MetricsEndpoint> metrics,
                      runtime::MetricsEndpoint::Start(listen, [pool, access, foreground] {
                        std::vector<MetricFamily> out;
                        if (pool != nullptr) out = pool->metrics().Snapshot();
                        if (access != nullptr) {
                          for (MetricFamily& family : ReadRuleMetrics(access)) {
                            out.push_back(std::move(family));
                          }
                        }
                        for (MetricFamily& family : runtime::ForegroundMetrics(*foreground)) {
                          out.push_back(std::move(family));
                        }
                        return out;
                      }));
  std::printf("heatsink-store: metrics on port %d\n", metrics->port());
  return metrics;
}

// The line that says the store runs, and the head pool's layout.
void PrintStarted(const StoreFlags& f, const StoreSetup& setup, runtime::StoreNode& node) {
  const std::string data_service_endpoint = node.data_service_endpoint();
  std::printf(
      "heatsink-store: client %llu (host %s, domain %s), %d x %llu MiB%s, data on %s%s%s, "
      "copies over %s, master %s\n",
      static_cast<unsigned long long>(f.client_id), f.host.c_str(),
      f.domain.empty() ? "default" : f.domain.c_str(), f.segments,
      static_cast<unsigned long long>(f.segment_mib),
      setup.options.segment_node >= 0
          ? absl::StrCat(" on NUMA node ", setup.options.segment_node).c_str()
          : "",
      node.data_endpoint().c_str(), data_service_endpoint.empty() ? "" : " and gRPC ",
      data_service_endpoint.c_str(), f.data_mover.c_str(), f.master_address.c_str());
  if (runtime::SegmentHeadPool* pool = node.head_pool(); pool != nullptr) {
    std::printf("heatsink-store: head pool, %s, %s chunks of %llu KiB:\n%s",
                pool->manager().knobs().no_numa_promotion ? "promotion off" : "promotion on",
                absl::StrCat(pool->manager().key_count()).c_str(),
                static_cast<unsigned long long>(pool->manager().knobs().ram_head_bytes >> 10),
                runtime::DescribePlacement(pool->options().placement).c_str());
  }
}

// Serves until SIGINT or SIGTERM (returned); SIGHUP reloads the PEM files,
// and with --head-pool-report-s the head pool reports every interval.
int ServeUntilSignal(const StoreFlags& f, const StoreSetup& setup, runtime::StoreNode& node,
                     runtime::StoreServer* grpc_server, runtime::GrpcMasterClient* master) {
  runtime::SegmentHeadPool* pool = node.head_pool();
  int signal = 0;
  runtime::ServedHeadBytes reported;  // served bytes at the last report
  if (pool != nullptr && f.head_pool_report_s > 0) {
    while ((signal = tools::WaitForTerminationSignalFor(f.head_pool_report_s * 1000,
                                                        /*reload=*/true)) == 0 ||
           signal == SIGHUP) {
      if (signal == SIGHUP) {
        ReloadTls(grpc_server, setup.data_tls, master, f.rpc.tls.client_enabled());
        continue;
      }
      std::printf("heatsink-store: head pool: %s\n", DescribeHeadPool(*pool).c_str());
      std::printf("heatsink-store: head pool %s\n",
                  DescribeRemoteShare(*pool, &reported,
                                      absl::StrCat("in the last ", f.head_pool_report_s, " s"))
                      .c_str());
      std::fflush(stdout);
    }
    return signal;
  }
  for (signal = tools::WaitForTerminationOrReloadSignal(); signal == SIGHUP;
       signal = tools::WaitForTerminationOrReloadSignal()) {
    ReloadTls(grpc_server, setup.data_tls, master, f.rpc.tls.client_enabled());
  }
  return signal;
}

// What the store did, said on the way out.
void PrintStopped(int signal, runtime::StoreNode& node, int64_t serving_s) {
  const StoreWorkerStats stats = node.worker().stats();
  std::printf("heatsink-store: signal %d, shutting down (copies completed %lld, failed %lld)\n",
              signal, static_cast<long long>(stats.copies_completed),
              static_cast<long long>(stats.copies_failed));
  if (runtime::SegmentHeadPool* pool = node.head_pool(); pool != nullptr) {
    std::printf("heatsink-store: head pool: %s\n", DescribeHeadPool(*pool).c_str());
    runtime::ServedHeadBytes reported;
    std::printf(
        "heatsink-store: head pool %s\n",
        DescribeRemoteShare(*pool, &reported, absl::StrCat("since start (", serving_s, " s)"))
            .c_str());
  }
  std::fflush(stdout);
}

// Connects to the master, starts the node and its services, serves until a
// termination signal and stops cleanly. The process's exit code.
int Run(StoreFlags& f, StoreSetup& setup) {
  // ADR-0019: the serving process binds its own memory policy to the node
  // before any thread or index exists (every thread started later inherits
  // it).
  const int serving_node = setup.options.head_pool.has_value()
                               ? setup.options.head_pool->placement.serving_node
                               : setup.options.segment_node;
  if (serving_node >= 0) {
    if (absl::Status s = runtime::BindServingPolicy(serving_node); !s.ok()) {
      std::fprintf(stderr, "heatsink-store: serving NUMA node %d: %s\n", serving_node,
                   std::string(s.message()).c_str());
      return 2;
    }
  }
  // The Env first: the master client, the resolver and the foreground
  // tracker read its clock.
  runtime::RuntimeEnv env(runtime::RuntimeEnvOptions{.executor = {.threads = f.threads}});
  // One count of foreground reads for the TCP endpoint, the gRPC store
  // service and the mover's copies (docs/runtime.md, "Foreground first").
  setup.options.tcp.foreground = std::make_shared<runtime::ForegroundTraffic>(env.env()->clock);
  f.data_service.foreground = setup.options.tcp.foreground;
  absl::StatusOr<std::unique_ptr<runtime::GrpcMasterClient>> master =
      runtime::GrpcMasterClient::Connect(env.env()->clock, f.master_address, f.rpc);
  if (!master.ok()) {
    std::fprintf(stderr, "heatsink-store: %s\n", master.status().ToString().c_str());
    return 2;
  }
  runtime::GrpcMasterClient* master_raw = master->get();
  runtime::SegmentDirectoryResolver resolver(env.env()->clock,
                                             [master_raw] { return master_raw->ListSegments(); });
  std::unique_ptr<runtime::ReadAccess> read_access =
      MakeReadAccess(f, setup, env.env(), master_raw);
  setup.options.read_gate = read_access.get();
  std::fflush(stdout);
  runtime::StoreServer* grpc_server = nullptr;
  // The gRPC store service over the node's segment memory, started before
  // the segments are mounted so that every mount carries its endpoint.
  runtime::SegmentDataServiceFactory grpc_data_service;
  if (!f.no_data_service) {
    grpc_data_service = [&](runtime::SegmentMemory* memory)
        -> absl::StatusOr<std::unique_ptr<runtime::SegmentDataService>> {
      HS_ASSIGN_OR_RETURN(std::unique_ptr<runtime::StoreServer> server,
                          runtime::StoreServer::Start(memory, f.data_service_listen, f.data_rpc,
                                                      f.data_service, read_access.get()));
      grpc_server = server.get();
      return std::unique_ptr<runtime::SegmentDataService>(std::move(server));
    };
  }
  absl::StatusOr<std::unique_ptr<runtime::StoreNode>> node =
      runtime::StoreNode::Start(env.env(), master_raw, &resolver, setup.options, grpc_data_service);
  if (!node.ok()) {
    std::fprintf(stderr, "heatsink-store: %s\n", node.status().ToString().c_str());
    return 1;
  }
  if (read_access != nullptr) read_access->AttachWorker(&(*node)->worker());
  PrintStarted(f, setup, **node);
  std::unique_ptr<runtime::MetricsEndpoint> metrics;
  if (!f.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<runtime::MetricsEndpoint>> started =
        StartMetrics(f.metrics_listen, (*node)->head_pool(), read_access.get(),
                     setup.options.tcp.foreground.get());
    if (!started.ok()) {
      std::fprintf(stderr, "heatsink-store: --metrics-listen: %s\n",
                   started.status().ToString().c_str());
      return 1;
    }
    metrics = *std::move(started);
  }
  std::fflush(stdout);
  if (!f.endpoint_file.empty()) {
    absl::Status written = tools::WriteFileAtomically(
        f.endpoint_file, absl::StrCat((*node)->data_endpoint(), "\n", f.client_id, "\n",
                                      (*node)->data_service_endpoint(), "\n"));
    if (!written.ok()) {
      std::fprintf(stderr, "heatsink-store: %s\n", written.ToString().c_str());
      return 1;
    }
  }
  const int64_t started_s = env.env()->clock->NowNs() / 1'000'000'000;
  const int signal = ServeUntilSignal(f, setup, **node, grpc_server, master_raw);
  PrintStopped(signal, **node, env.env()->clock->NowNs() / 1'000'000'000 - started_s);
  metrics.reset();
  (*node)->Unmount();
  (*node)->Stop();
  env.Shutdown();
  node->reset();
  return 0;
}

}  // namespace
}  // namespace heatsink

int main(int argc, char** argv) {
  using namespace heatsink;
  tools::BlockTerminationSignals();
  tools::BlockReloadSignal();
  StoreFlags f;
  CLI::App app{kStoreDescription};
  AddNodeFlags(app, f);
  AddStoreHeadPoolFlags(app, f);
  AddDataPlaneFlags(app, f);
  AddDataServiceFlags(app, f);
  tools::AddRpcFlags(app, f.rpc, /*server=*/false);
  tools::AddDeadlockDetectionFlag(app, f.keep_deadlock_detection);
  CLI11_PARSE(app, argc, argv);
  tools::ApplyDeadlockDetection(f.keep_deadlock_detection);

  absl::Status status = ApplySettings(f);
  if (f.list_knobs && status.ok()) {
    tools::PrintKnobs(f.tcp, runtime::TcpTransportKnobs::Registry());
    tools::PrintKnobs(f.tiering, TieringKnobs::Registry());
    return 0;
  }
  StoreSetup setup;
  if (status.ok()) status = Configure(app, f, setup);
  if (!status.ok()) {
    std::fprintf(stderr, "heatsink-store: %s\n", std::string(status.message()).c_str());
    return 2;
  }
  return Run(f, setup);
}
