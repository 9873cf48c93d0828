// File: runtime/transport/ucx_data_mover.h
//
// The UCX DataMover: RMA puts straight from the source segment into the
// target store's registered segment (zero-copy where the transport allows;
// RDMA verbs when a device exists, TCP otherwise, as UCX_TLS selects).
//
// A copy runs in three stages:
//   1. bootstrap (a copy thread, blocking TCP): validate the local source
//      range, resolve the target's data endpoint, send RMA_WRITE; the target
//      validates its range and answers with an RMA grant (remote address,
//      packed remote key of the segment, its worker address);
//   2. transfer (the UCX progress thread): endpoint to the target worker
//      (cached, peer error handling), unpack the key, ucp_put_nbx in
//      put_chunk_bytes pieces, then ucp_ep_flush_nbx (remote completion);
//      paced (below): one copy_chunk_bytes piece at a time, each flushed;
//   3. commit (a copy thread): RMA_COMMIT on the bootstrap connection; the
//      target's answer is the acknowledgement. `done` gets OK only then.
// Score inheritance: the RMA_COMMIT carries the source's decayed scores of
// the range (SegmentMemory::CopyScores, taken at bootstrap), and the target
// raises the chunks the copy landed in to them before it answers (wire.h).
// Foreground first (docs/runtime.md): with options.tcp.foreground (the
// store's foreground traffic, shared with its data server) and
// copy_yield_max_ms > 0, the transfer goes in copy_chunk_bytes pieces; before
// each piece a copy thread waits, at most copy_yield_max_ms, while the store
// serves foreground reads, and the piece's puts and flush complete before
// the next piece starts (a flush per piece: the price of interleaving).
// Without a tracker every put is in flight at once, as before. The bootstrap
// connection is marked like the TCP mover's copy connections; UCX's own
// connections, which carry the bytes, are not.
// Errors: as TcpDataMover (NOT_FOUND, OUT_OF_RANGE, RESOURCE_EXHAUSTED, and
// UNAVAILABLE for every transport failure: refused bootstrap, endpoint error,
// failed put or flush, broken commit, shutdown).
//
// The same object is the store's RmaGrantProvider: give it to the store's
// TcpDataServer so that peers can write into this store's segments. Segments
// are registered once, on first use in either direction.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto mover,
//                       UcxDataMover::Create(env->clock, &segments, &resolver, options));
//   HS_ASSIGN_OR_RETURN(auto server,
//                       TcpDataServer::Start(env->clock, &segments, options.tcp, mover.get()));
//   mover->StartCopy(range, [](absl::Status s) { ... });
//   ...
//   server->Shutdown();
//   mover->Shutdown();
//
// Clock: the copy threads' executor reads `clock`, the process Env's clock.
//
// Thread safety: all public methods are thread-safe; `done` runs on a copy
// thread, never inside StartCopy.
#ifndef HEATSINK_RUNTIME_TRANSPORT_UCX_DATA_MOVER_H_
#define HEATSINK_RUNTIME_TRANSPORT_UCX_DATA_MOVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "core/env/data_mover.h"
#include "runtime/env/thread_pool_executor.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/tcp_data_mover.h"
#include "runtime/transport/tcp_data_server.h"
#include "runtime/transport/tcp_knobs.h"
#include "runtime/transport/ucx_worker.h"

namespace heatsink::runtime {

struct UcxMoverOptions {
  UcxOptions ucx;
  // Bootstrap connections, copy threads, copies_in_flight_max and timeouts.
  TcpTransportKnobs tcp;
  // Size of each ucp_put_nbx of a copy; all pieces are in flight at once and
  // one flush completes them (unless the copy is paced: tcp.foreground).
  uint64_t put_chunk_bytes = uint64_t{8} << 20;

  [[nodiscard]] absl::Status Validate() const;
};

class UcxDataMover final : public DataMover, public RmaGrantProvider {
 public:
  // `clock` (the Env's, never null), `local` and `resolver` must outlive the
  // mover.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<UcxDataMover>> Create(
      const Clock* clock, SegmentMemory* local, EndpointResolver* resolver,
      const UcxMoverOptions& options);
  ~UcxDataMover() override;  // calls Shutdown()
  UcxDataMover(const UcxDataMover&) = delete;
  UcxDataMover& operator=(const UcxDataMover&) = delete;

  // REQUIRES: Shutdown() has not started.
  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) override;

  [[nodiscard]] absl::StatusOr<wire::RmaGrant> GrantRemoteWrite(
      const wire::RangeRequest& request) override;

  // Drops the registration of a segment (before unmounting it).
  // REQUIRES: no copy from or into the segment is in flight.
  void ReleaseSegment(SegmentId id);

  // Fails running and queued copies with UNAVAILABLE (force-closing every
  // endpoint and breaking bootstrap connections), returns once every `done`
  // has run, then stops the progress thread. Idempotent.
  void Shutdown();

  size_t copies_in_flight() const;
  const std::string& worker_address() const { return worker_->address(); }

 private:
  struct Copy;

  UcxDataMover(const Clock* clock, SegmentMemory* local, EndpointResolver* resolver,
               const UcxMoverOptions& options, std::unique_ptr<UcxWorker> worker);

  void Bootstrap(std::unique_ptr<Copy> copy);
  absl::Status BootstrapStatus(Copy& copy);
  // Issues the puts of the copy's next piece and a flush.
  void Transfer(std::unique_ptr<Copy> copy, bool live);
  // Bytes of one piece: copy_chunk_bytes when the store has foreground
  // traffic to yield to, otherwise the whole copy.
  uint64_t PieceBytes() const;
  static void OnRequestDone(void* request, ucs_status_t status, void* user_data);
  void RequestDone(Copy* copy, ucs_status_t status);
  void Commit(std::unique_ptr<Copy> copy);
  void Finish(std::unique_ptr<Copy> copy, absl::Status status);

  SegmentMemory* const local_;
  EndpointResolver* const resolver_;
  const UcxMoverOptions options_;
  std::unique_ptr<UcxWorker> worker_;
  std::atomic<bool> accepting_{true};
  ActiveSockets active_;

  mutable Mutex mu_;
  CondVar drained_cv_;  // in_flight_ reached 0
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  Mutex shutdown_mu_;  // serialises Shutdown callers
  bool shut_down_ ABSL_GUARDED_BY(shutdown_mu_) = false;

  const Clock* const clock_;
  ThreadPoolExecutor pool_;
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_UCX_DATA_MOVER_H_
