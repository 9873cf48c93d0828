#include "runtime/transport/tcp_data_server.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "runtime/transport/foreground_traffic.h"
#include "runtime/transport/tls_stream.h"

namespace heatsink::runtime {
namespace {

// The server always counts its foreground reads; without a tracker shared
// with the store's mover, only its own copy READs yield to them.
TcpTransportKnobs WithForeground(const Clock* clock, TcpTransportKnobs knobs) {
  if (knobs.foreground == nullptr) knobs.foreground = std::make_shared<ForegroundTraffic>(clock);
  return knobs;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpDataServer>> TcpDataServer::Start(const Clock* clock,
                                                                    SegmentMemory* segments,
                                                                    const TcpTransportKnobs& knobs,
                                                                    RmaGrantProvider* rma,
                                                                    ReadGate* read_gate) {
  HS_CHECK(clock != nullptr);
  HS_CHECK(segments != nullptr);
  HS_RETURN_IF_ERROR(knobs.Validate());
  HS_ASSIGN_OR_RETURN(Socket listener,
                      ListenTcp(knobs.listen_host, knobs.listen_port, knobs.listen_backlog));
  HS_ASSIGN_OR_RETURN(int port, LocalPort(listener));
  return std::unique_ptr<TcpDataServer>(new TcpDataServer(
      segments, WithForeground(clock, knobs), rma, read_gate, std::move(listener), port));
}

TcpDataServer::TcpDataServer(SegmentMemory* segments, const TcpTransportKnobs& knobs,
                             RmaGrantProvider* rma, ReadGate* read_gate, Socket listener, int port)
    : segments_(segments),
      knobs_(knobs),
      rma_(rma),
      read_gate_(read_gate),
      listener_(std::move(listener)),
      port_(port),
      endpoint_(absl::StrCat(knobs.tls_server != nullptr ? kTlsEndpointScheme : "",
                             knobs.listen_host, ":", port)) {
  accept_thread_ = std::thread([this] { AcceptLoop(); });
}

TcpDataServer::~TcpDataServer() { Shutdown(); }

void TcpDataServer::Shutdown() {
  MutexLock shutdown_lock(&shutdown_mu_);
  {
    MutexLock lock(&mu_);
    if (stopped_) return;
    stopping_ = true;
    for (auto& [id, connection] : connections_) connection->socket.ShutdownBoth();
  }
  // On Linux, shutting down a listening socket wakes a thread blocked in accept.
  listener_.ShutdownBoth();
  accept_thread_.join();
  // No new connection can appear now; wait for the live ones to notice.
  std::map<uint64_t, std::unique_ptr<Connection>> live;
  std::vector<std::unique_ptr<Connection>> finished;
  {
    MutexLock lock(&mu_);
    live.swap(connections_);
    finished.swap(finished_);
  }
  for (auto& [id, connection] : live) connection->thread.join();
  for (auto& connection : finished) connection->thread.join();
  // Threads that finished while we joined moved themselves to finished_.
  {
    MutexLock lock(&mu_);
    finished.swap(finished_);
  }
  for (auto& connection : finished) {
    if (connection->thread.joinable()) connection->thread.join();
  }
  listener_.Close();
  MutexLock lock(&mu_);
  stopped_ = true;
}

void TcpDataServer::ReapFinished() {
  std::vector<std::unique_ptr<Connection>> finished;
  {
    MutexLock lock(&mu_);
    finished.swap(finished_);
  }
  for (auto& connection : finished) connection->thread.join();
}

void TcpDataServer::AcceptLoop() {
  while (true) {
    absl::StatusOr<Socket> accepted = AcceptTcp(listener_);
    ReapFinished();
    if (!accepted.ok()) return;  // listener shut down
    Socket socket = *std::move(accepted);
    if (!ConfigureStream(socket, knobs_.io_timeout_ms).ok()) continue;
    MutexLock lock(&mu_);
    if (stopping_) return;
    if (connections_.size() >= knobs_.connections_max) {
      connections_rejected_.fetch_add(1);
      // Best effort: the peer learns why before the close.
      (void)wire::SendStatus(socket,
                             absl::ResourceExhaustedError(absl::StrCat(
                                 "data server at connections_max=", knobs_.connections_max)),
                             0);
      continue;
    }
    const uint64_t id = next_id_++;
    auto connection = std::make_unique<Connection>();
    connection->socket = std::move(socket);
    Socket* s = &connection->socket;
    Connection* raw = connection.get();
    connections_.emplace(id, std::move(connection));
    raw->thread = std::thread([this, id, s] { Serve(id, s); });
  }
}

void TcpDataServer::Serve(uint64_t id, Socket* socket) {
  // The handshake runs here, not in the accept loop, so that a slow or
  // silent client holds only its own connection (bounded by io_timeout_ms).
  const bool secured =
      knobs_.tls_server == nullptr || knobs_.tls_server->Secure(*socket, "").ok();
  while (secured) {
    absl::StatusOr<std::pair<wire::FrameType, std::string>> frame = wire::RecvControl(*socket);
    if (!frame.ok()) break;
    if (frame->first == wire::FrameType::kRead) {
      // A READ may carry a copy lease instead of scores.
      absl::StatusOr<wire::ReadRange> read = wire::DecodeReadRange(frame->second);
      if (!read.ok()) {
        (void)wire::SendStatus(*socket, read.status(), 0);
        break;
      }
      if (!HandleRead(*socket, *read)) break;
      continue;
    }
    absl::StatusOr<wire::ScoredRange> scored = wire::DecodeScoredRange(frame->second);
    if (scored.ok() && !scored->scores.empty() && frame->first != wire::FrameType::kCopyWrite &&
        frame->first != wire::FrameType::kRmaCommit) {
      scored = absl::InvalidArgumentError("only COPY_WRITE and RMA_COMMIT carry scores");
    }
    if (!scored.ok()) {
      (void)wire::SendStatus(*socket, scored.status(), 0);
      break;
    }
    const wire::RangeRequest& request = scored->range;
    bool keep = false;
    switch (frame->first) {
      case wire::FrameType::kWrite:
        keep = HandleWrite(*socket, request, scored->scores, /*copy=*/false);
        break;
      case wire::FrameType::kCopyWrite:
        keep = HandleWrite(*socket, request, scored->scores, /*copy=*/true);
        break;
      case wire::FrameType::kRmaWrite:
        keep = HandleRmaWrite(*socket, request);
        break;
      case wire::FrameType::kRmaCommit:
        // The client's flush already guaranteed remote completion, so the
        // bytes are in place: the copy's scores apply now, and the answer
        // tells the client this store is alive and saw the whole range.
        InheritScores(request, scored->scores);
        keep = wire::SendStatus(*socket, absl::OkStatus(), request.size).ok();
        break;
      default:
        (void)wire::SendStatus(*socket, absl::InvalidArgumentError("unexpected frame type"), 0);
        break;
    }
    if (!keep) break;
  }
  // Hand the thread to the accept loop (or Shutdown) for joining; the socket
  // closes when the Connection is destroyed there.
  MutexLock lock(&mu_);
  auto it = connections_.find(id);
  if (it != connections_.end()) {
    it->second->socket.ShutdownBoth();
    finished_.push_back(std::move(it->second));
    connections_.erase(it);
  }
}

void TcpDataServer::InheritScores(const wire::RangeRequest& request,
                                  absl::Span<const ScorePiece> scores) {
  if (scores.empty()) return;
  segments_->InheritScores(request.segment, request.offset, request.size, scores);
  scored_copies_.fetch_add(1);
}

bool TcpDataServer::HandleWrite(const Socket& socket, const wire::RangeRequest& request,
                                absl::Span<const ScorePiece> scores, bool copy) {
  absl::StatusOr<SegmentRegion> region =
      segments_->Region(request.segment, request.offset, request.size);
  if (!region.ok()) return wire::SendStatus(socket, region.status(), 0).ok();
  // A client's put is foreground: the store's copies hold their next chunk
  // while it lands. A copy coming in is background on this store too: its
  // connection thread runs niced (it serves only this connection), and it
  // reads each copy_chunk_bytes only once the store's foreground transfers
  // let it (bounded by copy_yield_max_ms); meanwhile TCP's flow control
  // holds the sender back.
  std::optional<ForegroundTraffic::Scope> foreground;
  if (copy) {
    MarkCopyConnection(socket, knobs_);
    NiceCopyThread(knobs_);
  } else {
    foreground.emplace(knobs_.foreground->Enter());
  }
  if (!wire::SendStatus(socket, absl::OkStatus(), request.size).ok()) return false;
  uint64_t landed = 0;
  uint64_t next_yield = 0;
  while (landed < request.size) {
    if (copy && landed >= next_yield) {
      knobs_.foreground->YieldToForeground(knobs_.copy_yield_max_ms, knobs_.copy_yield_quiet_us);
      next_yield = landed + knobs_.copy_chunk_bytes;
    }
    absl::StatusOr<wire::FrameHeader> header = wire::RecvHeader(socket, knobs_.frame_bytes_max);
    if (!header.ok() || header->type != wire::FrameType::kData ||
        header->payload_bytes > request.size - landed) {
      return false;  // a broken or malformed stream cannot be resynchronised
    }
    if (!RecvAll(socket, region->data + landed, header->payload_bytes).ok()) return false;
    landed += header->payload_bytes;
  }
  bytes_written_.fetch_add(landed);
  writes_completed_.fetch_add(1);
  if (copy) copy_writes_completed_.fetch_add(1);
  InheritScores(request, scores);
  return wire::SendStatus(socket, absl::OkStatus(), landed).ok();
}

bool TcpDataServer::HandleRead(const Socket& socket, const wire::ReadRange& read) {
  const wire::RangeRequest& request = read.range;
  if (read_gate_ != nullptr) {
    ReadPeer peer;
    if (const SecureStream* secure = socket.secure(); secure != nullptr) {
      peer.verified = secure->PeerVerified();
      if (peer.verified) peer.uri_sans = secure->PeerUriSans();
    }
    const absl::Status allowed = read_gate_->Allow(
        peer, ReadQuery{request.segment, request.offset, request.size, read.copy_lease});
    if (!allowed.ok()) {
      reads_refused_.fetch_add(1);
      return wire::SendStatus(socket, allowed, 0).ok();
    }
  }
  absl::StatusOr<SegmentRegion> region =
      segments_->Region(request.segment, request.offset, request.size);
  if (!region.ok()) return wire::SendStatus(socket, region.status(), 0).ok();
  const bool copy = read.copy_lease.valid();
  if (copy) {
    // A copy's pull: background, marked and paced like the mover's pushes.
    MarkCopyConnection(socket, knobs_);
    if (!wire::SendStatus(socket, absl::OkStatus(), request.size).ok()) return false;
    if (!SendCopyData(socket, region->data, request.size, knobs_).ok()) return false;
    copy_reads_completed_.fetch_add(1);
  } else {
    // Foreground: counted in progress until its last byte is sent, so the
    // store's copies hold their next chunk meanwhile. Never waits itself.
    ForegroundTraffic::Scope foreground = knobs_.foreground->Enter();
    if (!wire::SendStatus(socket, absl::OkStatus(), request.size).ok()) return false;
    uint64_t sent = 0;
    while (sent < request.size) {
      const uint32_t n =
          static_cast<uint32_t>(std::min<uint64_t>(knobs_.chunk_bytes, request.size - sent));
      uint8_t header[wire::kHeaderBytes];
      wire::EncodeHeader(wire::FrameHeader{wire::FrameType::kData, n}, header);
      if (!SendAll2(socket, header, sizeof(header), region->data + sent, n).ok()) return false;
      sent += n;
    }
  }
  reads_completed_.fetch_add(1);
  segments_->NoteRead(request.segment, request.offset, request.size);
  return true;
}

bool TcpDataServer::HandleRmaWrite(const Socket& socket, const wire::RangeRequest& request) {
  if (rma_ == nullptr) {
    return wire::SendStatus(socket,
                            absl::UnimplementedError("this store serves no RMA transport"), 0)
        .ok();
  }
  absl::StatusOr<wire::RmaGrant> grant = rma_->GrantRemoteWrite(request);
  if (!grant.ok()) return wire::SendStatus(socket, grant.status(), 0).ok();
  rma_grants_.fetch_add(1);
  return wire::SendFrame(socket, wire::FrameType::kRmaGrant, wire::EncodeGrant(*grant)).ok();
}

}  // namespace heatsink::runtime
