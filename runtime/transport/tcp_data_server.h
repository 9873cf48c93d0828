// File: runtime/transport/tcp_data_server.h
//
// A store's data endpoint: a TCP listener that serves the store's segments
// over the framed protocol of wire.h. Clients WRITE (put) into its
// segments, remote TCP movers COPY_WRITE into them, readers READ from them,
// and UCX movers ask it for RMA grants (remote key and worker address of a
// segment) through an RmaGrantProvider.
//
// Threads: one accept thread plus one thread per connection (at most
// connections_max; a connection above the limit is answered
// RESOURCE_EXHAUSTED and closed). A (COPY_)WRITE lands every DATA frame directly in
// the segment's memory and acknowledges only after the last byte is there.
// Score inheritance: the scores a COPY_WRITE or RMA_COMMIT carries (wire.h) go to
// the segments' SegmentScoreKeeper once the bytes are in place, before the
// acknowledgement; a copy whose transfer breaks raises nothing.
//
// Readers: with a ReadGate (read_gate.h) every READ is asked about first,
// with the peer's verified certificate and the copy lease the READ carries;
// a refusal is answered with a STATUS frame carrying the gate's status, no
// byte of the range is sent, it is counted (reads_refused) and the
// connection stays open for the next request.
//
// Foreground first (docs/runtime.md): a READ without a copy lease is
// foreground; it is counted in knobs.foreground while its bytes go out and
// never waits for anything else. A READ under a copy lease is background:
// its connection is marked low priority (copy_socket_priority, copy_dscp;
// a failure of setsockopt is logged once and the read goes on unmarked)
// and its bytes go in copy_chunk_bytes pieces, each waiting at most
// copy_yield_max_ms while foreground reads are in progress. The frames on
// the wire are the same as for any READ. A client's WRITE (a put) is
// foreground too, counted while its bytes land. A COPY_WRITE (a copy
// coming in) is background on this store as well: its connection is
// marked, its connection thread runs at nice copy_thread_nice for the rest
// of the connection, and it takes each copy_chunk_bytes off the socket only
// once this store's foreground transfers let it (at most copy_yield_max_ms
// per chunk); TCP's flow control holds the sender meanwhile.
//
// Clock: a server whose knobs bring no foreground tracker makes its own on
// `clock`, the process Env's (foreground_traffic.h); socket timeouts wait in
// real time.
//
// Shutdown() closes the listener, breaks every connection (peers see the
// connection drop mid-transfer) and joins every thread; the destructor calls
// it. Thread-safe.
//
// Example:
//   HS_ASSIGN_OR_RETURN(auto server, TcpDataServer::Start(env->clock, &segments, knobs));
//   descriptor.data_endpoint = server->endpoint();  // "127.0.0.1:40123"
#ifndef HEATSINK_RUNTIME_TRANSPORT_TCP_DATA_SERVER_H_
#define HEATSINK_RUNTIME_TRANSPORT_TCP_DATA_SERVER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/env/clock.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/foreground_traffic.h"
#include "runtime/transport/read_gate.h"
#include "runtime/transport/socket.h"
#include "runtime/transport/tcp_knobs.h"
#include "runtime/transport/wire.h"

namespace heatsink::runtime {

// Grants remote writes into local segments for an RMA transport.
class RmaGrantProvider {
 public:
  virtual ~RmaGrantProvider() = default;
  // NOT_FOUND (unknown segment), OUT_OF_RANGE, or UNAVAILABLE when the
  // transport is down. May block; called from server connection threads.
  [[nodiscard]] virtual absl::StatusOr<wire::RmaGrant> GrantRemoteWrite(
      const wire::RangeRequest& request) = 0;
};

class TcpDataServer {
 public:
  // `clock` (the Env's, never null), `segments`, `rma` (optional; without
  // it RMA_WRITE is answered UNIMPLEMENTED) and `read_gate` (optional;
  // without it every READ is served) must outlive the server.
  [[nodiscard]] static absl::StatusOr<std::unique_ptr<TcpDataServer>> Start(
      const Clock* clock, SegmentMemory* segments, const TcpTransportKnobs& knobs,
      RmaGrantProvider* rma = nullptr, ReadGate* read_gate = nullptr);
  ~TcpDataServer();
  TcpDataServer(const TcpDataServer&) = delete;
  TcpDataServer& operator=(const TcpDataServer&) = delete;

  // "host:port" with the port actually bound; "tls://host:port" when the
  // server speaks TLS (knobs.tls_server).
  const std::string& endpoint() const { return endpoint_; }
  int port() const { return port_; }

  void Shutdown();

  // Counters for metrics and tests.
  uint64_t writes_completed() const { return writes_completed_.load(); }
  // Of those, COPY_WRITEs (replica copies received).
  uint64_t copy_writes_completed() const { return copy_writes_completed_.load(); }
  uint64_t bytes_written() const { return bytes_written_.load(); }
  uint64_t reads_completed() const { return reads_completed_.load(); }
  // Of those, READs under a copy lease (background).
  uint64_t copy_reads_completed() const { return copy_reads_completed_.load(); }
  // The foreground traffic this server counts its reads in (the knobs' one,
  // or its own, on the clock Start was given, when the knobs had none).
  ForegroundTraffic& foreground() const { return *knobs_.foreground; }
  // READs the ReadGate refused.
  uint64_t reads_refused() const { return reads_refused_.load(); }
  uint64_t rma_grants() const { return rma_grants_.load(); }
  uint64_t connections_rejected() const { return connections_rejected_.load(); }
  // Landed copies that carried scores (handed to the segments' score keeper,
  // if they have one).
  uint64_t scored_copies() const { return scored_copies_.load(); }

 private:
  struct Connection {
    Socket socket;
    std::thread thread;
  };

  TcpDataServer(SegmentMemory* segments, const TcpTransportKnobs& knobs, RmaGrantProvider* rma,
                ReadGate* read_gate, Socket listener, int port);

  void AcceptLoop();
  void Serve(uint64_t id, Socket* socket);
  // Each returns false when the connection must close.
  // `copy`: a COPY_WRITE (background), else a client's WRITE (foreground).
  bool HandleWrite(const Socket& socket, const wire::RangeRequest& request,
                   absl::Span<const ScorePiece> scores, bool copy);
  bool HandleRead(const Socket& socket, const wire::ReadRange& read);
  bool HandleRmaWrite(const Socket& socket, const wire::RangeRequest& request);
  void ReapFinished();
  // The bytes of `request` have landed: hand its scores to the keeper.
  void InheritScores(const wire::RangeRequest& request, absl::Span<const ScorePiece> scores);

  SegmentMemory* const segments_;
  const TcpTransportKnobs knobs_;
  RmaGrantProvider* const rma_;
  ReadGate* const read_gate_;
  Socket listener_;
  const int port_;
  const std::string endpoint_;
  std::thread accept_thread_;

  Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint64_t, std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Connection>> finished_ ABSL_GUARDED_BY(mu_);
  Mutex shutdown_mu_;  // serialises Shutdown callers

  std::atomic<uint64_t> writes_completed_{0};
  std::atomic<uint64_t> copy_writes_completed_{0};
  std::atomic<uint64_t> bytes_written_{0};
  std::atomic<uint64_t> reads_completed_{0};
  std::atomic<uint64_t> copy_reads_completed_{0};
  std::atomic<uint64_t> reads_refused_{0};
  std::atomic<uint64_t> rma_grants_{0};
  std::atomic<uint64_t> connections_rejected_{0};
  std::atomic<uint64_t> scored_copies_{0};
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_TCP_DATA_SERVER_H_
