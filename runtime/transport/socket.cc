#include "runtime/transport/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink::runtime {
namespace {

absl::Status ErrnoUnavailable(absl::string_view what, int err) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(err)));
}

absl::StatusOr<sockaddr_in> ToSockaddr(absl::string_view host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const std::string h = host == "localhost" ? std::string("127.0.0.1") : std::string(host);
  if (inet_pton(AF_INET, h.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(absl::StrCat("not a numeric IPv4 address: '", host, "'"));
  }
  return addr;
}

absl::Status SetTimeout(int fd, int option, int64_t timeout_ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout_ms % 1000) * 1000);
  if (setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv)) != 0) {
    return ErrnoUnavailable("setsockopt timeout", errno);
  }
  return absl::OkStatus();
}

}  // namespace

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = std::exchange(other.fd_, -1);
    secure_ = std::move(other.secure_);
  }
  return *this;
}

int Socket::Release() {
  HS_CHECK(secure_ == nullptr);
  return std::exchange(fd_, -1);
}

void Socket::Close() {
  secure_.reset();
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

void Socket::ShutdownBoth() const {
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

absl::StatusOr<HostPort> ParseEndpoint(absl::string_view endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("endpoint '", endpoint, "' is not host:port"));
  }
  int port = 0;
  if (!absl::SimpleAtoi(endpoint.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("endpoint '", endpoint, "' has a bad port"));
  }
  HostPort out;
  out.host = std::string(endpoint.substr(0, colon));
  out.port = port;
  HS_RETURN_IF_ERROR(ToSockaddr(out.host, out.port).status());
  return out;
}

absl::StatusOr<Socket> ListenTcp(absl::string_view host, int port, int backlog) {
  if (port < 0 || port > 65535) return absl::InvalidArgumentError("listen port out of range");
  HS_ASSIGN_OR_RETURN(sockaddr_in addr, ToSockaddr(host, port));
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s.valid()) return ErrnoUnavailable("socket", errno);
  const int one = 1;
  setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoUnavailable(absl::StrCat("bind ", host, ":", port), errno);
  }
  if (::listen(s.fd(), backlog) != 0) return ErrnoUnavailable("listen", errno);
  return s;
}

absl::StatusOr<int> LocalPort(const Socket& socket) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return ErrnoUnavailable("getsockname", errno);
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<Socket> AcceptTcp(const Socket& listener) {
  while (true) {
    const int fd = ::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return Socket(fd);
    if (errno == EINTR || errno == ECONNABORTED) continue;
    return ErrnoUnavailable("accept", errno);
  }
}

absl::Status ConfigureStream(const Socket& socket, int64_t io_timeout_ms) {
  const int one = 1;
  if (setsockopt(socket.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    return ErrnoUnavailable("setsockopt TCP_NODELAY", errno);
  }
  if (io_timeout_ms > 0) {
    HS_RETURN_IF_ERROR(SetTimeout(socket.fd(), SO_RCVTIMEO, io_timeout_ms));
    HS_RETURN_IF_ERROR(SetTimeout(socket.fd(), SO_SNDTIMEO, io_timeout_ms));
  }
  return absl::OkStatus();
}

absl::StatusOr<Socket> ConnectTcp(absl::string_view endpoint, int64_t timeout_ms,
                                  int64_t io_timeout_ms) {
  HS_ASSIGN_OR_RETURN(HostPort hp, ParseEndpoint(endpoint));
  HS_ASSIGN_OR_RETURN(sockaddr_in addr, ToSockaddr(hp.host, hp.port));
  Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s.valid()) return ErrnoUnavailable("socket", errno);
  if (::connect(s.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (errno != EINPROGRESS) return ErrnoUnavailable(absl::StrCat("connect ", endpoint), errno);
    pollfd pfd{s.fd(), POLLOUT, 0};
    int rc = 0;
    do {
      rc = ::poll(&pfd, 1, timeout_ms > 0 ? static_cast<int>(timeout_ms) : -1);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0) return absl::UnavailableError(absl::StrCat("connect ", endpoint, ": timed out"));
    if (rc < 0) return ErrnoUnavailable(absl::StrCat("connect ", endpoint), errno);
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) return ErrnoUnavailable(absl::StrCat("connect ", endpoint), err);
  }
  const int flags = fcntl(s.fd(), F_GETFL);
  if (flags < 0 || fcntl(s.fd(), F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return ErrnoUnavailable("fcntl", errno);
  }
  HS_RETURN_IF_ERROR(ConfigureStream(s, io_timeout_ms));
  return s;
}

absl::Status MarkBackground(const Socket& socket, int priority, int dscp) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&local), &len) != 0) {
    return ErrnoUnavailable("getsockname", errno);
  }
  const int tos = dscp << 2;  // the low two bits are ECN's
  if (local.ss_family == AF_INET6) {
    if (setsockopt(socket.fd(), IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)) != 0) {
      return ErrnoUnavailable(absl::StrCat("setsockopt IPV6_TCLASS ", tos), errno);
    }
  } else if (setsockopt(socket.fd(), IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) != 0) {
    return ErrnoUnavailable(absl::StrCat("setsockopt IP_TOS ", tos), errno);
  }
  // After IP_TOS, which on Linux also sets the priority from the TOS bits.
  if (setsockopt(socket.fd(), SOL_SOCKET, SO_PRIORITY, &priority, sizeof(priority)) != 0) {
    return ErrnoUnavailable(absl::StrCat("setsockopt SO_PRIORITY ", priority), errno);
  }
  return absl::OkStatus();
}

absl::Status SendAll(const Socket& socket, const void* data, size_t size) {
  if (socket.secure() != nullptr) return socket.secure()->Send(data, size);
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(socket.fd(), p, size, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoUnavailable("send", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status SendAll2(const Socket& socket, const void* a, size_t a_size, const void* b,
                      size_t b_size) {
  // MSG_MORE corks the header until its payload follows, so the pair leaves
  // as one segment train without Nagle's delay. Plain send(2) rather than
  // sendmsg(2) also lets ThreadSanitizer see the write->read ordering it
  // models for socket I/O. Under TLS the two go as two records.
  if (socket.secure() != nullptr) {
    HS_RETURN_IF_ERROR(socket.secure()->Send(a, a_size));
    return socket.secure()->Send(b, b_size);
  }
  const char* p = static_cast<const char*>(a);
  while (a_size > 0) {
    const ssize_t n = ::send(socket.fd(), p, a_size, MSG_NOSIGNAL | (b_size > 0 ? MSG_MORE : 0));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoUnavailable("send", errno);
    }
    p += n;
    a_size -= static_cast<size_t>(n);
  }
  return SendAll(socket, b, b_size);
}

absl::Status RecvAll(const Socket& socket, void* data, size_t size) {
  if (socket.secure() != nullptr) return socket.secure()->Recv(data, size);
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(socket.fd(), p, size, 0);
    if (n == 0) return absl::UnavailableError("peer closed the connection");
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        return absl::UnavailableError("receive timed out");
      }
      return ErrnoUnavailable("recv", errno);
    }
    p += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace heatsink::runtime
