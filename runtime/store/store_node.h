// File: runtime/store/store_node.h
//
// One store process's parts, wired together: segment memory (plain aligned
// memory, or memory bound to one NUMA node with segment_node), the TCP
// data endpoint serving those segments (remote writes of copies and puts,
// reads), the data mover that pushes this store's replicas to other stores
// (TCP, or UCX RMA puts into the target's registered segment; with UCX the
// endpoint also grants peers remote writes into this store's segments, so
// every store a UCX store copies to must run UCX too), and the core
// StoreWorker that registers, mounts, heartbeats and runs
// REPLICA_COPY tasks (CopyStart -> transfer -> CopyEnd, or the Dynamic* calls
// for leased tasks). Optionally a second data service over the same segment
// memory (the gRPC store service of runtime/rpc/store_server.h), started
// before the segments are mounted so that its endpoint travels in every
// mount (SegmentLocation::data_service_endpoint).
//
// Segment ids: segment i (0-based) of client c is c * 256 + i + 1, so ids
// never collide between stores with distinct client ids (client ids must be
// below 2^56 and segments at most 255).
//
// Head pool: with StoreNodeOptions::head_pool the segments are the ADR-0019
// head pool (runtime/numa/segment_head_pool.h): their blocks sit on the
// serving and foreign NUMA nodes region by region, every read the node
// serves raises the scores of the chunks it covers, replica copies carry
// the scores of their bytes from store to store (score inheritance; see
// segment_head_pool.h), and the promotion threads move the hottest blocks to
// the serving node without changing any segment address.
//
// Restart: Start() first unmounts, as their owner, any of this client's
// segments the master still holds from a previous run of the store (their
// bytes died with it), so a store restarted under the same client id is
// serving again at once instead of waiting for the master to reap it.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto node, StoreNode::Start(env, master, resolver, options));
//   ... node->data_endpoint() ...
//   node->Stop();
//
// Thread safety: thread-safe. REQUIRES: env, master and resolver outlive the
// node; the node is stopped (or destroyed) before the Env's executor shuts
// down.
#ifndef HEATSINK_RUNTIME_STORE_STORE_NODE_H_
#define HEATSINK_RUNTIME_STORE_STORE_NODE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/env.h"
#include "core/worker/master_client.h"
#include "core/worker/store_worker.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/numa/bound_mapping.h"
#include "runtime/numa/segment_head_pool.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/read_gate.h"
#include "runtime/transport/tcp_data_mover.h"
#include "runtime/transport/tcp_data_server.h"
#include "runtime/transport/tcp_knobs.h"
#include "runtime/transport/ucx_data_mover.h"
#include "runtime/transport/ucx_worker.h"

namespace heatsink::runtime {

inline constexpr int kStoreSegmentsMax = 255;

enum class StoreDataMover { kTcp, kUcx };
// "tcp" / "ucx".
absl::string_view StoreDataMoverName(StoreDataMover mover);

struct StoreNodeOptions {
  ClientId client_id;  // required, below 2^56
  HostId host = "localhost";
  Domain domain;  // empty = default
  int segments = 1;
  uint64_t segment_bytes = 64ull << 20;
  // The segments' ids are first_segment_id, +1, ...; 0 derives them from the
  // client id (StoreSegmentId), which keeps every store's ids apart. A
  // deployment that gives ids itself must keep them unique across stores
  // (the replay gives the simulator's, so placement breaks ties alike).
  uint64_t first_segment_id = 0;
  // Data endpoint and mover settings (listen host/port included; with UCX
  // they set the bootstrap connections and copy threads).
  TcpTransportKnobs tcp;
  StoreDataMover data_mover = StoreDataMover::kTcp;
  // UCX only: configuration on top of the UCX_* environment, and the size of
  // each RMA put of a copy.
  UcxOptions ucx;
  uint64_t ucx_put_chunk_bytes = uint64_t{8} << 20;
  // NUMA node every segment is bound to (mbind, faulted in at start; see
  // runtime/numa/numa_segment_allocator.h); -1 leaves segments as plain
  // page-aligned heap memory. heatsink-store resolves its --segment-node
  // against the hwloc topology before it gets here.
  int segment_node = -1;
  // With segment_node: huge pages and mlock for the segments.
  NumaMemoryOptions segment_memory;
  // Plain segments only (no segment_node, no head pool): when their pages
  // are backed (runtime/memory/segment_memory.h); bound segments and the
  // head pool are always faulted in at start.
  SegmentCommit segment_commit = SegmentCommit::kAtCreate;
  // The ADR-0019 head pool over the segments (see the file comment): its
  // memory + sub_memory must equal segments x segment_bytes, segment_node
  // must be -1 (the placement binds each block), and segment_ids is filled
  // by Start.
  std::optional<SegmentHeadPoolOptions> head_pool;
  // Asked before the TCP data endpoint serves a READ (read_gate.h; not
  // owned, outlives the node); null serves every reader TLS let in.
  ReadGate* read_gate = nullptr;
  // StoreWorker timing and limits (client_id, host, domain and segments are
  // filled from the fields above).
  StoreWorkerOptions worker;

  [[nodiscard]] absl::Status Validate() const;
  // The id of segment `index` (0 .. segments - 1).
  SegmentId SegmentIdAt(int index) const;
};

// The id of segment `index` of the store with client id `client` when the
// store gives none itself: client * 256 + index + 1.
SegmentId StoreSegmentId(ClientId client, int index);

// A service serving the node's segment memory besides the TCP endpoint.
class SegmentDataService {
 public:
  virtual ~SegmentDataService() = default;
  // "host:port" clients reach it at.
  virtual const std::string& endpoint() const = 0;
  // Stops serving; idempotent.
  virtual void Shutdown() = 0;
};

// Starts a SegmentDataService over `memory` (which outlives it).
using SegmentDataServiceFactory =
    std::function<absl::StatusOr<std::unique_ptr<SegmentDataService>>(SegmentMemory* memory)>;

class StoreNode {
 public:
  // `data_service`, when given, starts the node's second data service.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<StoreNode>> Start(
      Env* env, MasterClient* master, EndpointResolver* resolver, const StoreNodeOptions& options,
      const SegmentDataServiceFactory& data_service = nullptr);
  ~StoreNode();  // Stop()
  StoreNode(const StoreNode&) = delete;
  StoreNode& operator=(const StoreNode&) = delete;

  // Stops the worker's timers, breaks running copies and closes the data
  // endpoint. Idempotent. The master notices through missed heartbeats.
  void Stop();
  // Graceful leave: stops the worker, then unmounts every segment so the
  // master drops their replicas at once instead of after client_live_ttl_sec.
  // Best effort, each call bounded by the master client's deadline. Call
  // before Stop().
  void Unmount();

  const std::string& data_endpoint() const { return server_->endpoint(); }
  const std::vector<SegmentId>& segment_ids() const { return segment_ids_; }
  SegmentMemory& memory() { return memory_; }
  StoreWorker& worker() { return *worker_; }
  const TcpDataServer& data_server() const { return *server_; }
  StoreDataMover data_mover() const { return options_.data_mover; }
  // Null without StoreNodeOptions::head_pool.
  SegmentHeadPool* head_pool() { return head_pool_; }
  // Empty without a second data service.
  std::string data_service_endpoint() const {
    return data_service_ == nullptr ? std::string() : data_service_->endpoint();
  }

 private:
  StoreNode(const StoreNodeOptions& options, std::unique_ptr<SegmentAllocator> allocator);
  // Unmounts this client's segments left over from a previous run.
  void ReleaseStaleSegments(MasterClient* master);

  const StoreNodeOptions options_;
  MasterClient* master_ = nullptr;
  // Aligned heap memory, NUMA-bound memory with segment_node, or the head
  // pool (then also head_pool_).
  std::unique_ptr<SegmentAllocator> allocator_;
  SegmentHeadPool* head_pool_ = nullptr;
  SegmentMemory memory_;
  std::vector<SegmentId> segment_ids_;
  // Declared before server_, which holds it as its RmaGrantProvider.
  std::unique_ptr<UcxDataMover> ucx_mover_;
  std::unique_ptr<TcpDataServer> server_;
  std::unique_ptr<SegmentDataService> data_service_;
  std::unique_ptr<TcpDataMover> tcp_mover_;
  DataMover* mover_ = nullptr;  // one of the two
  std::unique_ptr<StoreWorker> worker_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_STORE_STORE_NODE_H_
