#include "runtime/transport/tcp_knobs.h"

#include "absl/strings/str_cat.h"

namespace heatsink::runtime {

absl::Status TcpTransportKnobs::Validate() const {
  if (listen_port < 0 || listen_port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("listen_port ", listen_port, " out of range"));
  }
  if (listen_backlog < 1) return absl::InvalidArgumentError("listen_backlog must be positive");
  if (chunk_bytes == 0) return absl::InvalidArgumentError("chunk_bytes must be positive");
  if (frame_bytes_max < chunk_bytes) {
    return absl::InvalidArgumentError("frame_bytes_max must be at least chunk_bytes");
  }
  if (connections_max == 0) return absl::InvalidArgumentError("connections_max must be positive");
  if (copies_in_flight_max == 0) {
    return absl::InvalidArgumentError("copies_in_flight_max must be positive");
  }
  if (copy_threads < 1) return absl::InvalidArgumentError("copy_threads must be positive");
  if (read_bytes_max == 0) return absl::InvalidArgumentError("read_bytes_max must be positive");
  if (copy_chunk_bytes == 0) return absl::InvalidArgumentError("copy_chunk_bytes must be positive");
  if (copy_yield_max_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_yield_max_ms ", copy_yield_max_ms, " must not be negative"));
  }
  if (copy_yield_quiet_us < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_yield_quiet_us ", copy_yield_quiet_us, " must not be negative"));
  }
  if (copy_socket_priority < 0 || copy_socket_priority > 6) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_socket_priority ", copy_socket_priority, " out of range [0, 6]"));
  }
  if (copy_dscp < 0 || copy_dscp > 63) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_dscp ", copy_dscp, " out of range [0, 63]"));
  }
  if (copy_thread_nice < 0 || copy_thread_nice > 19) {
    return absl::InvalidArgumentError(
        absl::StrCat("copy_thread_nice ", copy_thread_nice, " out of range [0, 19]"));
  }
  if (connect_timeout_ms < 0 || io_timeout_ms < 0) {
    return absl::InvalidArgumentError("timeouts must not be negative");
  }
  return absl::OkStatus();
}

TcpTransportKnobs TcpTransportKnobs::TestMin() {
  TcpTransportKnobs k;
  k.chunk_bytes = 4096;
  k.frame_bytes_max = 8192;
  k.connections_max = 4;
  k.copies_in_flight_max = 4;
  k.copy_threads = 2;
  k.read_bytes_max = 1u << 20;
  k.copy_chunk_bytes = 8192;
  k.connect_timeout_ms = 2000;
  k.io_timeout_ms = 5000;
  return k;
}

const KnobRegistry<TcpTransportKnobs>& TcpTransportKnobs::Registry() {
  static const auto* registry = [] {
    auto* r = new KnobRegistry<TcpTransportKnobs>();
    using K = TcpTransportKnobs;
    r->Field("listen_host", "address the data server binds",
             [](K& k) -> std::string& { return k.listen_host; })
        .Field("listen_port", "data server port (0 = pick a free one)",
               [](K& k) -> int& { return k.listen_port; })
        .Field("listen_backlog", "listen(2) backlog", [](K& k) -> int& { return k.listen_backlog; })
        .Field("chunk_bytes", "bytes per data frame when sending",
               [](K& k) -> uint32_t& { return k.chunk_bytes; })
        .Field("frame_bytes_max", "largest data frame accepted",
               [](K& k) -> uint32_t& { return k.frame_bytes_max; })
        .Field("connections_max", "data server connections at once",
               [](K& k) -> size_t& { return k.connections_max; })
        .Field("copies_in_flight_max", "copies queued or running per mover",
               [](K& k) -> size_t& { return k.copies_in_flight_max; })
        .Field("copy_threads", "threads running copies",
               [](K& k) -> int& { return k.copy_threads; })
        .Field("read_bytes_max", "largest remote read",
               [](K& k) -> uint64_t& { return k.read_bytes_max; })
        .Field("connect_timeout_ms", "TCP connect timeout",
               [](K& k) -> int64_t& { return k.connect_timeout_ms; })
        .Field("copy_chunk_bytes", "bytes of a copy sent between yields to foreground reads",
               [](K& k) -> uint32_t& { return k.copy_chunk_bytes; })
        .Field("copy_yield_max_ms",
               "longest a copy chunk waits for foreground reads (0 = never waits)",
               [](K& k) -> int64_t& { return k.copy_yield_max_ms; })
        .Field("copy_yield_quiet_us",
               "time after the last foreground read that still counts as busy",
               [](K& k) -> int64_t& { return k.copy_yield_quiet_us; })
        .Field("copy_socket_priority", "SO_PRIORITY of copy connections (0..6)",
               [](K& k) -> int& { return k.copy_socket_priority; })
        .Field("copy_dscp", "DSCP of copy connections (0..63; 8 = CS1)",
               [](K& k) -> int& { return k.copy_dscp; })
        .Field("copy_thread_nice", "nice value of the TCP mover's copy threads (0..19)",
               [](K& k) -> int& { return k.copy_thread_nice; })
        .Field("io_timeout_ms", "timeout of each blocking send or receive (0 = none)",
               [](K& k) -> int64_t& { return k.io_timeout_ms; });
    return r;
  }();
  return *registry;
}

}  // namespace heatsink::runtime
