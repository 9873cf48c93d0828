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
// process runs under MPOL_BIND|MPOL_F_STATIC_NODES there. SIGINT/SIGTERM stop
// it cleanly: its segments are unmounted (the master drops their replicas at
// once), then it exits.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/env/rng.h"
#include "runtime/env/runtime_env.h"
#include "runtime/numa/numa_head_memory.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/topology.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/store_server.h"
#include "runtime/store/segment_directory_resolver.h"
#include "runtime/store/store_node.h"
#include "runtime/transport/tcp_knobs.h"
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

}  // namespace
}  // namespace heatsink

int main(int argc, char** argv) {
  using namespace heatsink;
  tools::BlockTerminationSignals();
  std::string master_address = "127.0.0.1:50051";
  uint64_t client_id = 0;
  std::string host = DefaultHost();
  std::string domain;
  int segments = 1;
  uint64_t segment_mib = 256;
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
  std::string topology_xml;

  CLI::App app{
      "heatsink-store: a Heatsink store (MEMORY segments, TCP data plane, copy tasks over TCP "
      "or UCX).\n"
      "Data-plane knobs use their registry names, e.g. --set chunk_bytes=1048576; "
      "--list-knobs prints them all."};
  app.add_option("--master", master_address, "master gRPC address host:port")
      ->capture_default_str();
  app.add_option("--client-id", client_id,
                 "this store's client id (non-zero, below 2^56; default: derived from host and "
                 "process id). Give a fixed id so a restarted store is recognised.");
  app.add_option("--host", host, "host id reported to the master")->capture_default_str();
  app.add_option("--domain", domain,
                 "domain of this store (default: $HEATSINK_STORE_DOMAIN, then "
                 "$MOONCAKE_STORE_DOMAIN, then the default domain)");
  app.add_option("--segments", segments, "number of segments to mount")
      ->capture_default_str()
      ->check(CLI::Range(1, runtime::kStoreSegmentsMax));
  app.add_option("--segment-mib", segment_mib, "size of each segment in MiB")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 20));
  app.add_option("--segment-node", segment_node,
                 "NUMA node the segments are bound to: none (plain heap memory), auto (the "
                 "NIC's node, as hwloc reports it) or a node id. A bound store faults its "
                 "segments in at start (a node without room fails here) and runs with "
                 "set_mempolicy(MPOL_BIND|MPOL_F_STATIC_NODES) on that node.")
      ->capture_default_str();
  app.add_flag("--segment-huge-pages", segment_memory.huge_pages,
               "bound segments on explicit 2 MiB huge pages (reserve them first in "
               "/sys/devices/system/node/nodeN/hugepages)");
  app.add_flag("--segment-mlock", segment_memory.mlock,
               "lock bound segments in RAM (needs RLIMIT_MEMLOCK)");
  app.add_option("--topology-xml", topology_xml,
                 "hwloc XML to plan --segment-node against instead of this machine");
  app.add_option("--data-host", tcp.listen_host, "address the TCP data endpoint binds")
      ->capture_default_str();
  app.add_option("--data-port", tcp.listen_port, "port of the TCP data endpoint (0 = any free)")
      ->capture_default_str();
  app.add_option("--data-mover", data_mover,
                 "how this store copies replicas to other stores: tcp (framed TCP) or ucx (UCX "
                 "RMA puts into the target's registered segment; RDMA verbs where a device "
                 "exists, else what UCX_TLS allows, e.g. UCX_TLS=tcp,self UCX_NET_DEVICES=lo on "
                 "loopback). Every store a ucx store copies to must run ucx too.")
      ->capture_default_str()
      ->check(CLI::IsMember({"tcp", "ucx"}));
  app.add_option("--ucx-put-chunk-mib", ucx_put_chunk_mib,
                 "ucx: size of each RMA put of a copy (all in flight at once, one flush)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 12));
  app.add_option("--set", settings, "data-plane knob override name=value; repeatable");
  app.add_option("--endpoint-file", endpoint_file,
                 "write the data endpoint, client id and gRPC store service endpoint (one per "
                 "line; the last empty without the service) here once running");
  app.add_option("--threads", threads, "executor threads (heartbeats, task fetching)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--heartbeat-interval-ms", heartbeat_interval_ms,
                 "heartbeat period; the master's client_live_ttl_sec must cover a few")
      ->capture_default_str();
  app.add_option("--fetch-interval-ms", fetch_interval_ms, "FetchTasks period")
      ->capture_default_str();
  app.add_option("--data-service-listen", data_service_listen,
                 "address of the gRPC store service (heatsink.v1.Store) serving the same "
                 "segments (default: the --data-host address, any free port)");
  app.add_flag("--no-data-service", no_data_service, "serve no gRPC store service");
  app.add_option("--data-chunk-bytes", data_service.data_chunk_bytes,
                 "largest data piece of one gRPC store message")
      ->capture_default_str();
  app.add_option("--data-tls-cert", data_rpc.tls.cert_path,
                 "PEM certificate chain of the gRPC store service (enables TLS)");
  app.add_option("--data-tls-key", data_rpc.tls.key_path, "PEM private key of --data-tls-cert");
  app.add_option("--data-tls-client-ca", data_rpc.tls.client_ca_path,
                 "PEM CA for client certificates of the gRPC store service");
  app.add_flag("--list-knobs", list_knobs, "print every data-plane knob and exit");
  tools::AddRpcFlags(app, rpc, /*server=*/false);
  bool keep_deadlock_detection = false;
  tools::AddDeadlockDetectionFlag(app, keep_deadlock_detection);
  CLI11_PARSE(app, argc, argv);
  tools::ApplyDeadlockDetection(keep_deadlock_detection);

  const std::vector<tools::KnobSetter> registries = {
      [&](absl::string_view n, absl::string_view v) {
        return runtime::TcpTransportKnobs::Registry().Set(tcp, n, v);
      },
  };
  absl::Status status = absl::OkStatus();
  for (const std::string& setting : settings) {
    status = tools::ApplySetting(setting, "--set", registries);
    if (!status.ok()) break;
  }
  if (list_knobs && status.ok()) {
    tools::PrintKnobs(tcp, runtime::TcpTransportKnobs::Registry());
    return 0;
  }
  if (domain.empty()) domain = DomainFromEnvironment();
  if (client_id == 0) {
    client_id = (StableHash(absl::StrCat(host, "/", getpid())) >> 8) | 1;
  }
  runtime::StoreNodeOptions options;
  options.client_id = ClientId(client_id);
  options.host = host;
  options.domain = domain;
  options.segments = segments;
  options.segment_bytes = segment_mib << 20;
  options.tcp = tcp;
  options.data_mover =
      data_mover == "ucx" ? runtime::StoreDataMover::kUcx : runtime::StoreDataMover::kTcp;
  options.ucx_put_chunk_bytes = ucx_put_chunk_mib << 20;
  options.worker.heartbeat_interval_ms = heartbeat_interval_ms;
  options.worker.fetch_interval_ms = fetch_interval_ms;
  options.segment_memory = segment_memory;
  if (status.ok() && segment_node != "none") {
    absl::StatusOr<int> node = ResolveSegmentNode(
        segment_node, topology_xml, static_cast<uint64_t>(segments) * (segment_mib << 20));
    if (node.ok()) {
      options.segment_node = *node;
    } else {
      status = node.status();
    }
  }
  if (status.ok()) status = options.Validate();
  if (status.ok()) status = rpc.Validate();
  data_rpc.message_bytes_max = rpc.message_bytes_max;
  if (status.ok() && !no_data_service) status = data_service.Validate(data_rpc);
  if (data_service_listen.empty()) data_service_listen = absl::StrCat(tcp.listen_host, ":0");
  if (!status.ok()) {
    std::fprintf(stderr, "heatsink-store: %s\n", std::string(status.message()).c_str());
    return 2;
  }

  // ADR-0019: the serving process binds its own memory policy to the node
  // before any thread or index exists (every thread started later inherits
  // it).
  if (options.segment_node >= 0) {
    if (absl::Status s = runtime::BindServingPolicy(options.segment_node); !s.ok()) {
      std::fprintf(stderr, "heatsink-store: --segment-node %d: %s\n", options.segment_node,
                   std::string(s.message()).c_str());
      return 2;
    }
  }
  absl::StatusOr<std::unique_ptr<runtime::GrpcMasterClient>> master =
      runtime::GrpcMasterClient::Connect(master_address, rpc);
  if (!master.ok()) {
    std::fprintf(stderr, "heatsink-store: %s\n", master.status().ToString().c_str());
    return 2;
  }
  runtime::GrpcMasterClient* master_raw = master->get();
  runtime::SegmentDirectoryResolver resolver([master_raw] { return master_raw->ListSegments(); });
  runtime::RuntimeEnv env(runtime::RuntimeEnvOptions{.executor = {.threads = threads}});
  // The gRPC store service over the node's segment memory, started before
  // the segments are mounted so that every mount carries its endpoint.
  runtime::SegmentDataServiceFactory grpc_data_service;
  if (!no_data_service) {
    grpc_data_service = [&](runtime::SegmentMemory* memory)
        -> absl::StatusOr<std::unique_ptr<runtime::SegmentDataService>> {
      absl::StatusOr<std::unique_ptr<runtime::StoreServer>> server =
          runtime::StoreServer::Start(memory, data_service_listen, data_rpc, data_service);
      if (!server.ok()) return server.status();
      return std::unique_ptr<runtime::SegmentDataService>(*std::move(server));
    };
  }
  absl::StatusOr<std::unique_ptr<runtime::StoreNode>> node = runtime::StoreNode::Start(
      env.env(), master_raw, &resolver, options, grpc_data_service);
  if (!node.ok()) {
    std::fprintf(stderr, "heatsink-store: %s\n", node.status().ToString().c_str());
    return 1;
  }
  const std::string data_service_endpoint = (*node)->data_service_endpoint();
  std::printf(
      "heatsink-store: client %llu (host %s, domain %s), %d x %llu MiB%s, data on %s%s%s, "
      "copies over %s, master %s\n",
      static_cast<unsigned long long>(client_id), host.c_str(),
      domain.empty() ? "default" : domain.c_str(), segments,
      static_cast<unsigned long long>(segment_mib),
      options.segment_node >= 0 ? absl::StrCat(" on NUMA node ", options.segment_node).c_str() : "",
      (*node)->data_endpoint().c_str(), data_service_endpoint.empty() ? "" : " and gRPC ",
      data_service_endpoint.c_str(), data_mover.c_str(), master_address.c_str());
  std::fflush(stdout);
  if (!endpoint_file.empty()) {
    absl::Status written = tools::WriteFileAtomically(
        endpoint_file, absl::StrCat((*node)->data_endpoint(), "\n", client_id, "\n",
                                    data_service_endpoint, "\n"));
    if (!written.ok()) {
      std::fprintf(stderr, "heatsink-store: %s\n", written.ToString().c_str());
      return 1;
    }
  }

  const int signal = tools::WaitForTerminationSignal();
  const StoreWorkerStats stats = (*node)->worker().stats();
  std::printf("heatsink-store: signal %d, shutting down (copies completed %lld, failed %lld)\n",
              signal, static_cast<long long>(stats.copies_completed),
              static_cast<long long>(stats.copies_failed));
  std::fflush(stdout);
  (*node)->Unmount();
  (*node)->Stop();
  env.Shutdown();
  node->reset();
  return 0;
}
