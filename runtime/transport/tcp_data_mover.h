// File: runtime/transport/tcp_data_mover.h
//
// The plain TCP DataMover (the fallback data plane). It runs on the source
// store: a copy reads [source_offset, +size) from a local segment and pushes
// it, pipelined in chunk_bytes DATA frames, to the target store's data
// endpoint (found through the EndpointResolver; an endpoint that refuses the
// connection is forgotten and the segment's new one tried once,
// ConnectToSegment), which writes the bytes at target_offset. `done` gets OK
// only after the target acknowledged that every byte landed. Errors:
// NOT_FOUND (unknown local segment or no endpoint for the target),
// OUT_OF_RANGE (either range), RESOURCE_EXHAUSTED (copies_in_flight_max or
// the target's connections_max), UNAVAILABLE (connection refused, broken,
// timed out, or the mover shut down). Errors reported by the target keep the
// target's code.
//
// Score inheritance: the WRITE carries the source's decayed scores of the
// range (SegmentMemory::CopyScores as the copy starts: its head pool's chunk
// scores, nothing without one), and the target raises the chunks the copy
// landed in to them before it acknowledges (wire.h).
//
// Foreground first (docs/runtime.md): copies are background traffic. Each
// copy connection is marked with SO_PRIORITY copy_socket_priority (default
// 1; foreground connections keep 0) and DSCP copy_dscp (default 8, CS1, via
// IP_TOS or IPV6_TCLASS), so the host's queueing discipline and the network
// can put foreground packets first; a failure of setsockopt is logged once
// and the copy runs unmarked. The bytes go in copy_chunk_bytes pieces, and
// before each piece the copy waits, at most copy_yield_max_ms, while the
// store's data server is serving foreground reads or served one less than
// copy_yield_quiet_us ago (knobs.foreground, shared with the server). Copy
// threads run at nice copy_thread_nice. A ReadRemote under a copy lease
// marks its connection
// the same way.
//
// Each copy (and each ReadRemote) uses its own short-lived connection: a
// loopback or LAN connect costs far less than moving an object, and it keeps
// a broken transfer from poisoning the next one.
//
// Also ReadRemote: a client or store reading a replica from a store's data
// endpoint.
//
// Clock: the copy threads' executor reads `clock`, the process Env's clock;
// the foreground yield reads knobs.foreground's (foreground_traffic.h).
// Socket timeouts wait in real time.
//
// Thread safety: all methods are thread-safe. `done` runs on one of the
// mover's copy threads, never inside StartCopy.
#ifndef HEATSINK_RUNTIME_TRANSPORT_TCP_DATA_MOVER_H_
#define HEATSINK_RUNTIME_TRANSPORT_TCP_DATA_MOVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "core/env/data_mover.h"
#include "runtime/env/thread_pool_executor.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/socket.h"
#include "runtime/transport/tcp_knobs.h"

namespace heatsink::runtime {

// Tracks sockets that blocked transfers use, so a shutdown can break them.
class ActiveSockets {
 public:
  ActiveSockets() = default;
  ActiveSockets(const ActiveSockets&) = delete;
  ActiveSockets& operator=(const ActiveSockets&) = delete;

  // False (and nothing tracked) once BreakAll has run.
  [[nodiscard]] bool Add(const Socket* socket);
  void Remove(const Socket* socket);
  // Shuts down every tracked socket now and every later Add fails.
  void BreakAll();

 private:
  Mutex mu_;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  std::set<const Socket*> sockets_ ABSL_GUARDED_BY(mu_);
};

class TcpDataMover final : public DataMover {
 public:
  // `clock` (the Env's, never null), `local` (the source store's segments)
  // and `resolver` must outlive the mover.
  TcpDataMover(const Clock* clock, SegmentMemory* local, EndpointResolver* resolver,
               const TcpTransportKnobs& knobs);
  ~TcpDataMover() override;  // calls Shutdown()
  TcpDataMover(const TcpDataMover&) = delete;
  TcpDataMover& operator=(const TcpDataMover&) = delete;

  // REQUIRES: Shutdown() has not started.
  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) override;

  // Breaks running copies (their `done` gets UNAVAILABLE), fails queued ones
  // with UNAVAILABLE, and returns once every `done` has been called.
  void Shutdown();

  size_t copies_in_flight() const { return in_flight_.load(); }

 private:
  absl::Status RunCopy(const CopyRange& range);

  SegmentMemory* const local_;
  EndpointResolver* const resolver_;
  const TcpTransportKnobs knobs_;
  std::atomic<size_t> in_flight_{0};
  std::atomic<bool> accepting_{true};
  ActiveSockets active_;
  const Clock* const clock_;
  ThreadPoolExecutor pool_;
};

// Resolves `segment` and connects to its data endpoint. When the connection
// fails the endpoint may be stale (the segment's store restarted under the
// same client id on another port): the resolver forgets it, and when it then
// resolves the segment to another endpoint, the connect is tried once there.
// `*endpoint` is the endpoint connected to (or last tried). Errors: the
// resolver's NOT_FOUND, or the connect's error (UNAVAILABLE, ...).
[[nodiscard]] absl::StatusOr<Socket> ConnectToSegment(EndpointResolver& resolver, SegmentId segment,
                                                      const TcpTransportKnobs& knobs,
                                                      std::string* endpoint);

// Reads [offset, +size) of `segment` from the store serving `endpoint` into
// `out` (size = out.size()). Errors as for copies; RESOURCE_EXHAUSTED above
// knobs.read_bytes_max.
// `copy_lease`: the copy lease the read is made under (wire.h), when the
// reader holds one; a refusal of the store is PERMISSION_DENIED.
[[nodiscard]] absl::Status ReadRemoteInto(absl::string_view endpoint, SegmentId segment,
                                          uint64_t offset, absl::Span<uint8_t> out,
                                          const TcpTransportKnobs& knobs,
                                          LeaseId copy_lease = LeaseId());
[[nodiscard]] absl::StatusOr<std::string> ReadRemote(absl::string_view endpoint,
                                                     SegmentId segment, uint64_t offset,
                                                     uint64_t size,
                                                     const TcpTransportKnobs& knobs,
                                                     LeaseId copy_lease = LeaseId());

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_TCP_DATA_MOVER_H_
