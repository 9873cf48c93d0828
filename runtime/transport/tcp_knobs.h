// File: runtime/transport/tcp_knobs.h
//
// Limits and sizes of the framed TCP data plane (server, TCP mover, remote
// reads and the UCX mover's bootstrap). Defaults suit a LAN; TestMin() makes
// every limit small enough for tests to reach.
#ifndef HEATSINK_RUNTIME_TRANSPORT_TCP_KNOBS_H_
#define HEATSINK_RUNTIME_TRANSPORT_TCP_KNOBS_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "core/base/knobs.h"

namespace heatsink::runtime {

class ForegroundTraffic;
class TlsContext;

struct TcpTransportKnobs {
  // Address the data server binds; port 0 picks a free port.
  std::string listen_host = "127.0.0.1";
  int listen_port = 0;
  int listen_backlog = 128;
  // Bytes per DATA frame when sending: the pipelining unit of a copy or read.
  uint32_t chunk_bytes = 1u << 20;
  // Largest DATA frame a receiver accepts; a larger one closes the connection.
  uint32_t frame_bytes_max = 16u << 20;
  // Server connections served at once; more are answered RESOURCE_EXHAUSTED.
  size_t connections_max = 64;
  // Copies queued or running in one mover; more fail with RESOURCE_EXHAUSTED.
  size_t copies_in_flight_max = 256;
  // Threads of a mover that run copies (each copy blocks one while it runs).
  int copy_threads = 4;
  // Largest single ReadRemote.
  uint64_t read_bytes_max = uint64_t{1} << 30;
  int64_t connect_timeout_ms = 5000;
  // Every blocking send/receive gives up after this long (0 = never).
  int64_t io_timeout_ms = 30000;

  // Background traffic (docs/runtime.md, "Foreground first"): the replica
  // copies a store's TCP mover pushes out and the READs it serves under a
  // copy lease. Bytes of one copy sent between two yields to the store's
  // foreground reads; each DATA frame of a copy is at most
  // min(chunk_bytes, copy_chunk_bytes).
  uint32_t copy_chunk_bytes = 256u << 10;
  // Longest one copy chunk waits for the store's foreground reads to end
  // (0 = copies never wait). Bounded so copies slow down but never starve.
  int64_t copy_yield_max_ms = 5;
  // How long after the store's last foreground read ended the foreground
  // still counts as busy (0 = only while a read is in progress). Under a
  // steady stream of short reads, 0 lets copies run in the gaps between
  // reads (measured no better than unpaced copies); the quiet time makes
  // them wait out the stream, up to copy_yield_max_ms per chunk: under a
  // foreground that never pauses a copy still moves copy_chunk_bytes per
  // copy_yield_max_ms (about 50 MiB/s per copy at the defaults).
  int64_t copy_yield_quiet_us = 1000;
  // SO_PRIORITY of copy connections: the qdisc band on the way out (0..6,
  // the range an unprivileged process may set; foreground connections keep
  // the default 0).
  int copy_socket_priority = 1;
  // DSCP of copy connections (IP_TOS, or IPV6_TCLASS on IPv6; 0..63): 8 is
  // CS1, the class switches and routers commonly treat as "lower effort"
  // (RFC 4594's low-priority data; RFC 8622's LE is 1). Foreground keeps 0.
  // With copy_socket_priority = 0 and copy_dscp = 0 copy connections are
  // not marked at all.
  int copy_dscp = 8;
  // Nice value the TCP mover's copy threads take on their first copy (0..19;
  // 0 leaves them alone): the CPU share of background sends when the host
  // is busy. Threads cannot raise it back without privilege, so only the
  // mover's own copy threads take it.
  int copy_thread_nice = 10;

  // TLS (tls_stream.h); not knobs: the processes set them from their PEM
  // flags. A data server with `tls_server` accepts only TLS connections and
  // advertises "tls://host:port"; clients secure "tls://" endpoints with
  // `tls_client`.
  std::shared_ptr<const TlsContext> tls_server;
  std::shared_ptr<const TlsContext> tls_client;
  // The store's foreground traffic (foreground_traffic.h); not a knob: the
  // store shares one between its data server and its mover (StoreNode and
  // MakeDataPlane create it on the Env's clock when it is null). A data
  // server without one makes its own; a mover without one never yields.
  std::shared_ptr<ForegroundTraffic> foreground;

  [[nodiscard]] absl::Status Validate() const;
  static TcpTransportKnobs TestMin();
  static const KnobRegistry<TcpTransportKnobs>& Registry();
};

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_TCP_KNOBS_H_
