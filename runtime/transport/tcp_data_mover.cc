#include "runtime/transport/tcp_data_mover.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "runtime/transport/foreground_traffic.h"
#include "runtime/transport/tls_stream.h"
#include "runtime/transport/wire.h"

namespace heatsink::runtime {
namespace {

// Keeps a socket registered with ActiveSockets while it is in use.
class ActiveGuard {
 public:
  ActiveGuard(ActiveSockets* active, const Socket* socket)
      : active_(active), socket_(socket), added_(active->Add(socket)) {}
  ~ActiveGuard() {
    if (added_) active_->Remove(socket_);
  }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;
  bool added() const { return added_; }

 private:
  ActiveSockets* const active_;
  const Socket* const socket_;
  const bool added_;
};

}  // namespace

bool ActiveSockets::Add(const Socket* socket) {
  MutexLock lock(&mu_);
  if (broken_) return false;
  sockets_.insert(socket);
  return true;
}

void ActiveSockets::Remove(const Socket* socket) {
  MutexLock lock(&mu_);
  sockets_.erase(socket);
}

void ActiveSockets::BreakAll() {
  MutexLock lock(&mu_);
  broken_ = true;
  for (const Socket* s : sockets_) s->ShutdownBoth();
}

TcpDataMover::TcpDataMover(const Clock* clock, SegmentMemory* local, EndpointResolver* resolver,
                           const TcpTransportKnobs& knobs)
    : local_(local),
      resolver_(resolver),
      knobs_(knobs),
      clock_(clock),
      pool_(clock_, ThreadPoolOptions{.threads = knobs.copy_threads,
                                      .pending_max = 2 * knobs.copies_in_flight_max + 16}) {
  HS_CHECK(clock_ != nullptr && local_ != nullptr && resolver_ != nullptr);
  HS_CHECK_OK(knobs_.Validate());
}

TcpDataMover::~TcpDataMover() { Shutdown(); }

void TcpDataMover::StartCopy(const CopyRange& range,
                             absl::AnyInvocable<void(absl::Status) &&> done) {
  HS_CHECK_MSG(accepting_.load(), "TcpDataMover::StartCopy after Shutdown");
  if (in_flight_.fetch_add(1) >= knobs_.copies_in_flight_max) {
    in_flight_.fetch_sub(1);
    pool_.Post([done = std::move(done), max = knobs_.copies_in_flight_max]() mutable {
      std::move(done)(absl::ResourceExhaustedError(
          absl::StrCat("copies_in_flight_max=", max, " reached")));
    });
    return;
  }
  pool_.Post([this, range, done = std::move(done)]() mutable {
    absl::Status status = RunCopy(range);
    in_flight_.fetch_sub(1);
    std::move(done)(std::move(status));
  });
}

absl::StatusOr<Socket> ConnectToSegment(EndpointResolver& resolver, SegmentId segment,
                                        const TcpTransportKnobs& knobs, std::string* endpoint) {
  HS_ASSIGN_OR_RETURN(*endpoint, resolver.Resolve(segment));
  absl::StatusOr<Socket> socket = ConnectDataEndpoint(*endpoint, knobs);
  if (socket.ok()) return socket;
  resolver.Forget(segment, *endpoint);
  absl::StatusOr<std::string> again = resolver.Resolve(segment);
  // Unknown now, or the same endpoint: the first connect's error says why.
  if (!again.ok() || *again == *endpoint) return socket.status();
  *endpoint = *std::move(again);
  return ConnectDataEndpoint(*endpoint, knobs);
}

absl::Status TcpDataMover::RunCopy(const CopyRange& range) {
  NiceCopyThread(knobs_);
  if (!accepting_.load()) return absl::UnavailableError("data mover shut down");
  HS_ASSIGN_OR_RETURN(SegmentRegion source,
                      local_->Region(range.source_segment, range.source_offset, range.size_bytes));
  std::string endpoint;
  HS_ASSIGN_OR_RETURN(Socket socket,
                      ConnectToSegment(*resolver_, range.target_segment, knobs_, &endpoint));
  // Background from here on: the marks apply to every later packet, the
  // copy's bytes included (the connect and TLS handshake go unmarked).
  MarkCopyConnection(socket, knobs_);
  ActiveGuard guard(&active_, &socket);
  if (!guard.added()) return absl::UnavailableError("data mover shut down");

  const wire::RangeRequest request{range.target_segment, range.target_offset, range.size_bytes};
  // The source's scores of the range travel with the WRITE; the target
  // applies them once every byte has landed.
  const std::vector<ScorePiece> scores =
      local_->CopyScores(range.source_segment, range.source_offset, range.size_bytes);
  HS_RETURN_IF_ERROR(wire::SendFrame(socket, wire::FrameType::kCopyWrite,
                                     wire::EncodeScoredRange(request, scores)));
  // The target validates the range before any byte is sent; its rejection
  // (NOT_FOUND, OUT_OF_RANGE, RESOURCE_EXHAUSTED) is returned as it came.
  HS_RETURN_IF_ERROR(wire::RecvStatus(socket, nullptr));

  // Background traffic: paced by the store's foreground reads, one
  // copy_chunk_bytes at a time.
  HS_RETURN_IF_ERROR(SendCopyData(socket, source.data, range.size_bytes, knobs_));
  uint64_t landed = 0;
  absl::Status acked = wire::RecvStatus(socket, &landed);
  if (!acked.ok()) {
    return absl::UnavailableError(absl::StrCat("copy to ", endpoint, " not acknowledged: ",
                                               acked.message()));
  }
  if (landed != range.size_bytes) {
    return absl::UnavailableError(absl::StrCat("target acknowledged ", landed, " of ",
                                               range.size_bytes, " bytes"));
  }
  return absl::OkStatus();
}

void TcpDataMover::Shutdown() {
  accepting_.store(false);
  active_.BreakAll();
  // Queued copies run, see !accepting_ and fail fast; running ones fail on
  // their broken sockets. Either way every `done` runs before this returns.
  pool_.Shutdown();
}

absl::Status ReadRemoteInto(absl::string_view endpoint, SegmentId segment, uint64_t offset,
                            absl::Span<uint8_t> out, const TcpTransportKnobs& knobs,
                            LeaseId copy_lease) {
  if (out.size() > knobs.read_bytes_max) {
    return absl::ResourceExhaustedError(absl::StrCat("read of ", out.size(),
                                                     " bytes above read_bytes_max=",
                                                     knobs.read_bytes_max));
  }
  HS_ASSIGN_OR_RETURN(Socket socket, ConnectDataEndpoint(endpoint, knobs));
  // A read under a copy lease is a copy's pull: background on this side too.
  if (copy_lease.valid()) MarkCopyConnection(socket, knobs);
  const wire::RangeRequest request{segment, offset, out.size()};
  HS_RETURN_IF_ERROR(wire::SendFrame(socket, wire::FrameType::kRead,
                                     wire::EncodeReadRange(request, copy_lease)));
  uint64_t size = 0;
  HS_RETURN_IF_ERROR(wire::RecvStatus(socket, &size));
  if (size != out.size()) return absl::UnavailableError("protocol error: read size mismatch");
  uint64_t got = 0;
  while (got < out.size()) {
    HS_ASSIGN_OR_RETURN(wire::FrameHeader header, wire::RecvHeader(socket, knobs.frame_bytes_max));
    if (header.type != wire::FrameType::kData || header.payload_bytes > out.size() - got) {
      return absl::UnavailableError("protocol error: bad data frame in a read");
    }
    HS_RETURN_IF_ERROR(RecvAll(socket, out.data() + got, header.payload_bytes));
    got += header.payload_bytes;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadRemote(absl::string_view endpoint, SegmentId segment,
                                       uint64_t offset, uint64_t size,
                                       const TcpTransportKnobs& knobs, LeaseId copy_lease) {
  if (size > knobs.read_bytes_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("read of ", size, " bytes above read_bytes_max=", knobs.read_bytes_max));
  }
  std::string out(static_cast<size_t>(size), '\0');
  HS_RETURN_IF_ERROR(ReadRemoteInto(endpoint, segment, offset,
                                    absl::MakeSpan(reinterpret_cast<uint8_t*>(out.data()),
                                                   out.size()),
                                    knobs, copy_lease));
  return out;
}

}  // namespace heatsink::runtime
