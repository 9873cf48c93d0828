// File: runtime/transport/socket.h
//
// Thin blocking TCP helpers for the data plane: an owning file descriptor,
// endpoint parsing ("host:port"), listen/connect with timeouts, and exact
// send/receive loops. Every failure of the socket layer is UNAVAILABLE (the
// caller cannot tell a dead peer from a broken network, and both mean "retry
// elsewhere or revoke"); a malformed endpoint is INVALID_ARGUMENT.
//
// Thread safety: a Socket may be shut down (ShutdownBoth) from another thread
// while one thread blocks in I/O on it; that is how owners interrupt blocked
// transfers. Closing is done only by the owner.
#ifndef HEATSINK_RUNTIME_TRANSPORT_SOCKET_H_
#define HEATSINK_RUNTIME_TRANSPORT_SOCKET_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace heatsink::runtime {

// A secured byte stream over a connected socket (TLS: tls_stream.h). When a
// Socket has one, SendAll, SendAll2 and RecvAll go through it.
class SecureStream {
 public:
  virtual ~SecureStream() = default;
  // Exactly `size` bytes; UNAVAILABLE on any failure.
  [[nodiscard]] virtual absl::Status Send(const void* data, size_t size) = 0;
  [[nodiscard]] virtual absl::Status Recv(void* data, size_t size) = 0;
  // The URI subject alternative names of the peer's certificate, when the
  // peer presented one that was verified (empty otherwise): what a store's
  // data server reads the reader's identity from.
  virtual bool PeerVerified() const { return false; }
  virtual std::vector<std::string> PeerUriSans() const { return {}; }
  // The SHA-256 of the peer certificate's DER, in lowercase hex (empty
  // without one): which certificate the peer presented.
  virtual std::string PeerCertificateSha256() const { return ""; }
};

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { Close(); }
  Socket(Socket&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), secure_(std::move(other.secure_)) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up the descriptor (REQUIRES: not secured).
  int Release();
  void Close();
  // From now on this socket's I/O goes through `secure` (set once, after its
  // handshake).
  void SetSecure(std::unique_ptr<SecureStream> secure) { secure_ = std::move(secure); }
  SecureStream* secure() const { return secure_.get(); }
  // Wakes every thread blocked on this socket; further I/O fails.
  void ShutdownBoth() const;

 private:
  int fd_ = -1;
  std::unique_ptr<SecureStream> secure_;  // ends before the descriptor closes
};

struct HostPort {
  std::string host;
  int port = 0;
};

// "host:port" with a numeric IPv4 host or "localhost"; port in [1, 65535].
[[nodiscard]] absl::StatusOr<HostPort> ParseEndpoint(absl::string_view endpoint);

// Listens on host:port (port 0 picks a free port; see LocalPort).
[[nodiscard]] absl::StatusOr<Socket> ListenTcp(absl::string_view host, int port, int backlog);
[[nodiscard]] absl::StatusOr<int> LocalPort(const Socket& socket);
// Accepts one connection; UNAVAILABLE when the listener was shut down.
[[nodiscard]] absl::StatusOr<Socket> AcceptTcp(const Socket& listener);

// Connects within `timeout_ms`, then applies `io_timeout_ms` to every later
// send and receive (0 = no timeout) and disables Nagle's algorithm.
[[nodiscard]] absl::StatusOr<Socket> ConnectTcp(absl::string_view endpoint, int64_t timeout_ms,
                                                int64_t io_timeout_ms);
[[nodiscard]] absl::Status ConfigureStream(const Socket& socket, int64_t io_timeout_ms);

// Marks a connected socket as background traffic: SO_PRIORITY `priority`
// (the qdisc band its packets leave in) and DSCP `dscp` (IP_TOS, or
// IPV6_TCLASS on an IPv6 socket; the TOS byte is dscp << 2). UNAVAILABLE
// naming the option that failed (EPERM for priorities above 6 without
// CAP_NET_ADMIN); options set before the failure stay set. The DSCP goes
// first: on Linux setting IP_TOS also overwrites the socket's priority.
[[nodiscard]] absl::Status MarkBackground(const Socket& socket, int priority, int dscp);

// Sends/receives exactly `size` bytes. A closed peer, a reset or a timeout is
// UNAVAILABLE. Never raises SIGPIPE.
[[nodiscard]] absl::Status SendAll(const Socket& socket, const void* data, size_t size);
[[nodiscard]] absl::Status RecvAll(const Socket& socket, void* data, size_t size);
// Sends a header and then its payload, corked so they leave together.
[[nodiscard]] absl::Status SendAll2(const Socket& socket, const void* a, size_t a_size,
                                    const void* b, size_t b_size);

}  // namespace heatsink::runtime

#endif  // HEATSINK_RUNTIME_TRANSPORT_SOCKET_H_
