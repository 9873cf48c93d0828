#include "runtime/store/store_node.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "runtime/env/notification.h"
#include "runtime/numa/mempolicy.h"
#include "runtime/numa/numa_segment_allocator.h"
#include "runtime/transport/foreground_traffic.h"

namespace heatsink::runtime {

absl::Status StoreNodeOptions::Validate() const {
  if (!client_id.valid()) return absl::InvalidArgumentError("client id must be non-zero");
  if (client_id.value >= (uint64_t{1} << 56)) {
    return absl::InvalidArgumentError("client id must be below 2^56");
  }
  if (segments < 1 || segments > kStoreSegmentsMax) {
    return absl::InvalidArgumentError(
        absl::StrCat("segments must be in [1, ", kStoreSegmentsMax, "], got ", segments));
  }
  if (segment_bytes == 0) return absl::InvalidArgumentError("segment_bytes must be positive");
  if (segment_node < -1 || segment_node > MaxPossibleNode()) {
    return absl::InvalidArgumentError(
        absl::StrCat("segment NUMA node must be -1 (unbound) or in [0, ", MaxPossibleNode(),
                     "], got ", segment_node));
  }
  if (segment_node < 0 && (segment_memory.huge_pages || segment_memory.mlock)) {
    return absl::InvalidArgumentError("huge pages and mlock need a segment NUMA node");
  }
  if (first_segment_id > (uint64_t{1} << 62)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the first segment id must be at most 2^62, got ", first_segment_id));
  }
  if (segment_commit == SegmentCommit::kOnWrite && (segment_node >= 0 || head_pool.has_value())) {
    return absl::InvalidArgumentError(
        "segments committed on write are plain memory; a segment NUMA node or the head pool "
        "faults its segments in at start");
  }
  if (head_pool.has_value()) {
    if (segment_node >= 0) {
      return absl::InvalidArgumentError(
          "a segment NUMA node and the head pool both place the segments; give one");
    }
    SegmentHeadPoolOptions pool = *head_pool;
    pool.segment_ids.assign(segments, SegmentId());
    for (int i = 0; i < segments; ++i) pool.segment_ids[i] = SegmentIdAt(i);
    HS_RETURN_IF_ERROR(pool.Validate());
    if (pool.segment_bytes() != segment_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the head pool's ", pool.total_bytes(), " bytes (--memory + --sub-memory) make ",
          segments, " segments of ", pool.segment_bytes(), " bytes, not ", segment_bytes));
    }
  }
  HS_RETURN_IF_ERROR(tcp.Validate());
  if (data_mover == StoreDataMover::kUcx) {
    UcxMoverOptions ucx_mover{ucx, tcp, ucx_put_chunk_bytes};
    HS_RETURN_IF_ERROR(ucx_mover.Validate());
  }
  return absl::OkStatus();
}

absl::string_view StoreDataMoverName(StoreDataMover mover) {
  switch (mover) {
    case StoreDataMover::kTcp: return "tcp";
    case StoreDataMover::kUcx: return "ucx";
  }
  return "unknown";
}

SegmentId StoreNodeOptions::SegmentIdAt(int index) const {
  HS_CHECK(index >= 0 && index < segments);
  if (first_segment_id == 0) return StoreSegmentId(client_id, index);
  return SegmentId(first_segment_id + static_cast<uint64_t>(index));
}

SegmentId StoreSegmentId(ClientId client, int index) {
  return SegmentId(client.value * 256 + static_cast<uint64_t>(index) + 1);
}

namespace {

std::unique_ptr<SegmentAllocator> MakeSegmentAllocator(const StoreNodeOptions& options) {
  if (options.segment_node >= 0) {
    return std::make_unique<NumaSegmentAllocator>(options.segment_node, options.segment_memory);
  }
  return std::make_unique<AlignedSegmentAllocator>(4096, options.segment_commit);
}

}  // namespace

StoreNode::StoreNode(const StoreNodeOptions& options, std::unique_ptr<SegmentAllocator> allocator)
    : options_(options),
      allocator_(std::move(allocator)),
      memory_(allocator_.get(), SegmentMemoryKnobs{}) {}

absl::StatusOr<std::unique_ptr<StoreNode>> StoreNode::Start(
    Env* env, MasterClient* master, EndpointResolver* resolver, const StoreNodeOptions& options,
    const SegmentDataServiceFactory& data_service) {
  HS_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<SegmentAllocator> allocator;
  SegmentHeadPool* head_pool = nullptr;
  if (options.head_pool.has_value()) {
    SegmentHeadPoolOptions pool_options = *options.head_pool;
    pool_options.segment_ids.clear();
    for (int i = 0; i < options.segments; ++i) {
      pool_options.segment_ids.push_back(options.SegmentIdAt(i));
    }
    HS_ASSIGN_OR_RETURN(std::unique_ptr<SegmentHeadPool> pool,
                        SegmentHeadPool::Create(env, std::move(pool_options)));
    head_pool = pool.get();
    allocator = std::move(pool);
  } else {
    allocator = MakeSegmentAllocator(options);
  }
  std::unique_ptr<StoreNode> node(new StoreNode(options, std::move(allocator)));
  node->head_pool_ = head_pool;
  node->master_ = master;
  for (int i = 0; i < options.segments; ++i) {
    const SegmentId id = options.SegmentIdAt(i);
    HS_RETURN_IF_ERROR(node->memory_.Create(id, options.segment_bytes));
    node->segment_ids_.push_back(id);
  }
  if (head_pool != nullptr) {
    // Served reads raise the chunks' scores, copies carry them out and in;
    // the promotion threads start before anything is served.
    node->memory_.set_read_observer(head_pool);
    node->memory_.set_score_keeper(head_pool);
    HS_RETURN_IF_ERROR(head_pool->Start());
  }
  // Foreground first: the data server counts the store's foreground reads
  // and the mover's copies yield to them, so both share one tracker, on the
  // Env's clock.
  TcpTransportKnobs tcp = options.tcp;
  if (tcp.foreground == nullptr) tcp.foreground = std::make_shared<ForegroundTraffic>(env->clock);
  if (options.data_mover == StoreDataMover::kUcx) {
    // The UCX worker first: the data endpoint grants peers remote writes
    // through it.
    HS_ASSIGN_OR_RETURN(
        node->ucx_mover_,
        UcxDataMover::Create(env->clock, &node->memory_, resolver,
                             UcxMoverOptions{options.ucx, tcp, options.ucx_put_chunk_bytes}));
    node->mover_ = node->ucx_mover_.get();
  }
  HS_ASSIGN_OR_RETURN(node->server_,
                      TcpDataServer::Start(env->clock, &node->memory_, tcp, node->ucx_mover_.get(),
                                           options.read_gate));
  if (data_service) {
    HS_ASSIGN_OR_RETURN(node->data_service_, data_service(&node->memory_));
  }
  if (node->mover_ == nullptr) {
    node->tcp_mover_ = std::make_unique<TcpDataMover>(env->clock, &node->memory_, resolver, tcp);
    node->mover_ = node->tcp_mover_.get();
  }

  StoreWorkerOptions worker = options.worker;
  worker.client_id = options.client_id;
  worker.host = options.host;
  worker.domain = options.domain;
  worker.segments.clear();
  for (size_t i = 0; i < node->segment_ids_.size(); ++i) {
    MountSegmentRequest mount;
    mount.segment_id = node->segment_ids_[i];
    mount.name = absl::StrCat(options.host, "/", options.client_id.value, "/", i);
    mount.host = options.host;
    mount.domain = options.domain;
    mount.capacity_bytes = options.segment_bytes;
    mount.transport_endpoint = node->server_->endpoint();
    mount.data_service_endpoint = node->data_service_endpoint();
    worker.segments.push_back(std::move(mount));
  }
  HS_RETURN_IF_ERROR(worker.Validate());
  node->ReleaseStaleSegments(master);
  node->worker_ = std::make_unique<StoreWorker>(env, master, node->mover_, std::move(worker));
  node->worker_->Start();
  return node;
}

namespace {

// Runs one MasterClient call and waits for its status (bounded by the
// client's call deadline).
template <typename Issue>
absl::Status Await(Issue issue) {
  auto done = std::make_shared<Notification>();
  auto result = std::make_shared<absl::Status>();
  issue([done, result](absl::Status status) {
    *result = std::move(status);
    done->Notify();
  });
  done->WaitForNotification();
  return *result;
}

}  // namespace

void StoreNode::Unmount() {
  if (worker_ != nullptr) worker_->Stop();
  for (SegmentId id : segment_ids_) {
    (void)Await([&](MasterClient::StatusCallback done) {
      master_->UnmountSegment(options_.client_id, id, std::move(done));
    });
  }
}

void StoreNode::ReleaseStaleSegments(MasterClient* master) {
  // A store restarted under the same client id has lost its memory, so any
  // segment the master still holds for it from the previous run (not yet
  // reaped) lists replicas that no longer exist. Unmounting them as their
  // owner drops those replicas now and lets the fresh mount (new endpoint)
  // succeed. Every step is best effort: an unreachable master is handled by
  // the worker's registration retries.
  const absl::Status registered = Await([&](MasterClient::StatusCallback done) {
    master->RegisterClient(
        RegisterClientRequest{options_.client_id, options_.host, options_.domain},
        std::move(done));
  });
  if (!registered.ok()) return;
  for (SegmentId id : segment_ids_) {
    (void)Await([&](MasterClient::StatusCallback done) {
      master->UnmountSegment(options_.client_id, id, std::move(done));
    });
  }
}

StoreNode::~StoreNode() { Stop(); }

void StoreNode::Stop() {
  if (worker_ != nullptr) worker_->Stop();
  if (tcp_mover_ != nullptr) tcp_mover_->Shutdown();
  if (ucx_mover_ != nullptr) ucx_mover_->Shutdown();
  if (server_ != nullptr) server_->Shutdown();
  if (data_service_ != nullptr) data_service_->Shutdown();
  if (head_pool_ != nullptr) head_pool_->Stop();
}

}  // namespace heatsink::runtime
