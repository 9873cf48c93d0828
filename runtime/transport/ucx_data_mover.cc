#include "runtime/transport/ucx_data_mover.h"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"
#include "runtime/env/notification.h"
#include "runtime/transport/foreground_traffic.h"
#include "runtime/transport/tls_stream.h"
#include "runtime/transport/wire.h"

namespace heatsink::runtime {

struct UcxDataMover::Copy {
  UcxDataMover* mover = nullptr;
  CopyRange range;
  absl::AnyInvocable<void(absl::Status) &&> done;
  SegmentRegion source;
  std::string endpoint;
  Socket socket;
  bool socket_tracked = false;
  wire::RmaGrant grant;
  // The source's scores of the range as the copy starts; the RMA_COMMIT
  // carries them to the target.
  std::vector<ScorePiece> scores;
  // Transfer stage, progress thread only.
  ucp_rkey_h rkey = nullptr;
  int outstanding = 0;
  // Bytes whose puts have been issued (and, between pieces, flushed).
  uint64_t transferred = 0;
  absl::Status transfer_status;
};

uint64_t UcxDataMover::PieceBytes() const {
  const TcpTransportKnobs& tcp = options_.tcp;
  if (tcp.foreground == nullptr || tcp.copy_yield_max_ms <= 0) {
    return std::numeric_limits<uint64_t>::max();
  }
  return tcp.copy_chunk_bytes;
}

absl::Status UcxMoverOptions::Validate() const {
  HS_RETURN_IF_ERROR(ucx.Validate());
  HS_RETURN_IF_ERROR(tcp.Validate());
  if (put_chunk_bytes == 0) return absl::InvalidArgumentError("put_chunk_bytes must be positive");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<UcxDataMover>> UcxDataMover::Create(const Clock* clock,
                                                                   SegmentMemory* local,
                                                                   EndpointResolver* resolver,
                                                                   const UcxMoverOptions& options) {
  HS_CHECK(clock != nullptr && local != nullptr && resolver != nullptr);
  HS_RETURN_IF_ERROR(options.Validate());
  HS_ASSIGN_OR_RETURN(std::unique_ptr<UcxWorker> worker, UcxWorker::Create(options.ucx));
  return std::unique_ptr<UcxDataMover>(
      new UcxDataMover(clock, local, resolver, options, std::move(worker)));
}

UcxDataMover::UcxDataMover(const Clock* clock, SegmentMemory* local, EndpointResolver* resolver,
                           const UcxMoverOptions& options, std::unique_ptr<UcxWorker> worker)
    : local_(local),
      resolver_(resolver),
      options_(options),
      worker_(std::move(worker)),
      clock_(clock),
      pool_(clock_, ThreadPoolOptions{.threads = options.tcp.copy_threads,
                                      .pending_max = 2 * options.tcp.copies_in_flight_max + 16}) {}

UcxDataMover::~UcxDataMover() { Shutdown(); }

size_t UcxDataMover::copies_in_flight() const {
  MutexLock lock(&mu_);
  return in_flight_;
}

void UcxDataMover::StartCopy(const CopyRange& range,
                             absl::AnyInvocable<void(absl::Status) &&> done) {
  HS_CHECK_MSG(accepting_.load(), "UcxDataMover::StartCopy after Shutdown");
  {
    MutexLock lock(&mu_);
    if (in_flight_ >= options_.tcp.copies_in_flight_max) {
      pool_.Post([done = std::move(done), max = options_.tcp.copies_in_flight_max]() mutable {
        std::move(done)(absl::ResourceExhaustedError(
            absl::StrCat("copies_in_flight_max=", max, " reached")));
      });
      return;
    }
    ++in_flight_;
  }
  auto copy = std::make_unique<Copy>();
  copy->mover = this;
  copy->range = range;
  copy->done = std::move(done);
  pool_.Post([this, copy = std::move(copy)]() mutable { Bootstrap(std::move(copy)); });
}

absl::Status UcxDataMover::BootstrapStatus(Copy& copy) {
  if (!accepting_.load()) return absl::UnavailableError("data mover shut down");
  const CopyRange& r = copy.range;
  HS_ASSIGN_OR_RETURN(copy.source, local_->Region(r.source_segment, r.source_offset, r.size_bytes));
  copy.scores = local_->CopyScores(r.source_segment, r.source_offset, r.size_bytes);
  HS_ASSIGN_OR_RETURN(copy.socket,
                      ConnectToSegment(*resolver_, r.target_segment, options_.tcp, &copy.endpoint));
  // Only the bootstrap and commit travel here; UCX's own connections carry
  // the bytes and are not marked (docs/runtime.md, "Foreground first").
  MarkCopyConnection(copy.socket, options_.tcp);
  copy.socket_tracked = active_.Add(&copy.socket);
  if (!copy.socket_tracked) return absl::UnavailableError("data mover shut down");
  const wire::RangeRequest request{r.target_segment, r.target_offset, r.size_bytes};
  HS_RETURN_IF_ERROR(
      wire::SendFrame(copy.socket, wire::FrameType::kRmaWrite, wire::EncodeRange(request)));
  HS_ASSIGN_OR_RETURN(auto frame, wire::RecvControl(copy.socket));
  if (frame.first == wire::FrameType::kStatus) {
    absl::Status carried;
    if (!wire::DecodeStatus(frame.second, &carried, nullptr)) {
      return absl::UnavailableError("protocol error: malformed status frame");
    }
    // A rejection keeps the target's code; an OK without a grant is a
    // protocol error.
    if (carried.ok()) return absl::UnavailableError("protocol error: status instead of a grant");
    return carried;
  }
  if (frame.first != wire::FrameType::kRmaGrant) {
    return absl::UnavailableError("protocol error: expected an RMA grant");
  }
  absl::StatusOr<wire::RmaGrant> grant = wire::DecodeGrant(frame.second);
  if (!grant.ok()) return absl::UnavailableError(grant.status().message());
  copy.grant = *std::move(grant);
  return absl::OkStatus();
}

void UcxDataMover::Bootstrap(std::unique_ptr<Copy> copy) {
  absl::Status status = BootstrapStatus(*copy);
  if (!status.ok()) {
    Finish(std::move(copy), std::move(status));
    return;
  }
  if (copy->range.size_bytes == 0) {
    Commit(std::move(copy));
    return;
  }
  // Paced copies wait for the store's foreground reads before each piece,
  // here on a copy thread: the progress thread never waits.
  if (PieceBytes() < copy->range.size_bytes) {
    options_.tcp.foreground->YieldToForeground(options_.tcp.copy_yield_max_ms,
                                               options_.tcp.copy_yield_quiet_us);
  }
  worker_->Post([this, copy = std::move(copy)](bool live) mutable {
    Transfer(std::move(copy), live);
  });
}

void UcxDataMover::Transfer(std::unique_ptr<Copy> copy, bool live) {
  if (!live || !accepting_.load()) {
    copy->transfer_status = absl::UnavailableError("data mover shut down");
    pool_.Post([this, copy = std::move(copy)]() mutable { Commit(std::move(copy)); });
    return;
  }
  auto fail = [&](const absl::Status& status) {
    // A fresh Status, not a shared reference to the one the StatusOr below
    // still owns: the copy continues on another thread.
    copy->transfer_status = absl::Status(status.code(), std::string(status.message()));
    pool_.Post([this, copy = std::move(copy)]() mutable { Commit(std::move(copy)); });
  };
  absl::StatusOr<const UcxWorker::Registration*> registration =
      worker_->Register(copy->range.source_segment, copy->source.buffer);
  if (!registration.ok()) return fail(registration.status());
  absl::StatusOr<ucp_ep_h> ep = worker_->Endpoint(copy->grant.worker_address);
  if (!ep.ok()) return fail(ep.status());
  // Unpacked for each piece and destroyed when it completes, so no key
  // outlives an endpoint closed between two pieces.
  ucs_status_t st = ucp_ep_rkey_unpack(*ep, copy->grant.remote_key.data(), &copy->rkey);
  if (st != UCS_OK) return fail(UcsToStatus(st, "ucp_ep_rkey_unpack"));

  Copy* raw = copy.release();  // owned by the outstanding requests from here on
  ucp_request_param_t params{};
  params.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_MEMH;
  params.cb.send = &UcxDataMover::OnRequestDone;
  params.user_data = raw;
  params.memh = (*registration)->memh;
  // One token for the issuing loop itself, so completion cannot run before
  // every request has been issued.
  raw->outstanding = 1;
  const uint64_t size = raw->range.size_bytes;
  const uint64_t end = raw->transferred + std::min(PieceBytes(), size - raw->transferred);
  for (uint64_t off = raw->transferred; off < end && raw->transfer_status.ok();) {
    const uint64_t n = std::min(options_.put_chunk_bytes, end - off);
    ucs_status_ptr_t request = ucp_put_nbx(*ep, raw->source.data + off, n,
                                           raw->grant.remote_address + off, raw->rkey, &params);
    if (UCS_PTR_IS_ERR(request)) {
      raw->transfer_status = UcsToStatus(UCS_PTR_STATUS(request), "ucp_put_nbx");
    } else if (request != nullptr) {
      ++raw->outstanding;
    }
    off += n;
  }
  raw->transferred = end;
  if (raw->transfer_status.ok()) {
    ucp_request_param_t flush_params{};
    flush_params.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    flush_params.cb.send = &UcxDataMover::OnRequestDone;
    flush_params.user_data = raw;
    ucs_status_ptr_t request = ucp_ep_flush_nbx(*ep, &flush_params);
    if (UCS_PTR_IS_ERR(request)) {
      raw->transfer_status = UcsToStatus(UCS_PTR_STATUS(request), "ucp_ep_flush_nbx");
    } else if (request != nullptr) {
      ++raw->outstanding;
    }
  }
  RequestDone(raw, UCS_OK);  // drop the issuing token
}

void UcxDataMover::OnRequestDone(void* request, ucs_status_t status, void* user_data) {
  auto* copy = static_cast<Copy*>(user_data);
  ucp_request_free(request);
  copy->mover->RequestDone(copy, status);
}

void UcxDataMover::RequestDone(Copy* copy, ucs_status_t status) {
  if (status != UCS_OK && copy->transfer_status.ok()) {
    copy->transfer_status = UcsToStatus(status, "RMA transfer");
  }
  if (--copy->outstanding > 0) return;
  std::unique_ptr<Copy> owned(copy);
  if (owned->rkey != nullptr) {
    ucp_rkey_destroy(owned->rkey);
    owned->rkey = nullptr;
  }
  if (owned->transfer_status.ok() && owned->transferred < owned->range.size_bytes) {
    // The next piece, after the store's foreground reads (bounded wait, on
    // a copy thread).
    pool_.Post([this, owned = std::move(owned)]() mutable {
      options_.tcp.foreground->YieldToForeground(options_.tcp.copy_yield_max_ms,
                                                 options_.tcp.copy_yield_quiet_us);
      worker_->Post(
          [this, copy = std::move(owned)](bool live) mutable { Transfer(std::move(copy), live); });
    });
    return;
  }
  pool_.Post([this, owned = std::move(owned)]() mutable { Commit(std::move(owned)); });
}

void UcxDataMover::Commit(std::unique_ptr<Copy> copy) {
  if (!copy->transfer_status.ok()) {
    absl::Status status = absl::UnavailableError(
        absl::StrCat("copy to ", copy->endpoint, " failed: ", copy->transfer_status.message()));
    Finish(std::move(copy), std::move(status));
    return;
  }
  const CopyRange& r = copy->range;
  const wire::RangeRequest request{r.target_segment, r.target_offset, r.size_bytes};
  absl::Status status = wire::SendFrame(copy->socket, wire::FrameType::kRmaCommit,
                                        wire::EncodeScoredRange(request, copy->scores));
  uint64_t acknowledged = 0;
  if (status.ok()) status = wire::RecvStatus(copy->socket, &acknowledged);
  if (!status.ok()) {
    status = absl::UnavailableError(
        absl::StrCat("copy to ", copy->endpoint, " not acknowledged: ", status.message()));
  } else if (acknowledged != r.size_bytes) {
    status = absl::UnavailableError(
        absl::StrCat("target acknowledged ", acknowledged, " of ", r.size_bytes, " bytes"));
  }
  Finish(std::move(copy), std::move(status));
}

void UcxDataMover::Finish(std::unique_ptr<Copy> copy, absl::Status status) {
  if (copy->socket_tracked) active_.Remove(&copy->socket);
  absl::AnyInvocable<void(absl::Status) &&> done = std::move(copy->done);
  copy.reset();  // closes the bootstrap connection, releases the source segment
  std::move(done)(std::move(status));
  MutexLock lock(&mu_);
  if (--in_flight_ == 0) drained_cv_.SignalAll();
}

absl::StatusOr<wire::RmaGrant> UcxDataMover::GrantRemoteWrite(const wire::RangeRequest& request) {
  HS_ASSIGN_OR_RETURN(SegmentRegion region,
                      local_->Region(request.segment, request.offset, request.size));
  absl::StatusOr<wire::RmaGrant> result = absl::UnavailableError("data mover shut down");
  Notification granted;
  worker_->Post([&](bool live) {
    if (live) {
      absl::StatusOr<const UcxWorker::Registration*> registration =
          worker_->Register(request.segment, region.buffer);
      if (!registration.ok()) {
        result = registration.status();
      } else {
        wire::RmaGrant grant;
        grant.remote_address = reinterpret_cast<uint64_t>(region.data);
        grant.remote_key = (*registration)->packed_rkey;
        grant.worker_address = worker_->address();
        result = std::move(grant);
      }
    }
    granted.Notify();
  });
  granted.WaitForNotification();
  return result;
}

void UcxDataMover::ReleaseSegment(SegmentId id) {
  Notification released;
  worker_->Post([&](bool live) {
    if (live) worker_->Unregister(id);
    released.Notify();
  });
  released.WaitForNotification();
}

void UcxDataMover::Shutdown() {
  MutexLock shutdown_lock(&shutdown_mu_);
  if (shut_down_) return;
  accepting_.store(false);
  active_.BreakAll();
  worker_->Post([this](bool live) {
    if (live) worker_->CloseAllEndpoints();
  });
  // Every stage now fails fast, so in-flight copies drain.
  {
    MutexLock lock(&mu_);
    while (in_flight_ != 0) drained_cv_.Wait(&mu_);
  }
  pool_.Shutdown();
  worker_->Stop();
  shut_down_ = true;
}

}  // namespace heatsink::runtime
