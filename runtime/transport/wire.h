// File: runtime/transport/wire.h
//
// The data plane's framed protocol, spoken on a store's data endpoint by the
// TCP mover, by remote readers and by the UCX mover's bootstrap.
//
// Every frame is a 12-byte header (magic "HSD1", type u16, reserved u16,
// payload length u32; little-endian) followed by its payload. Control payloads
// are at most kControlPayloadMax bytes; data payloads at most the receiver's
// frame_bytes_max knob.
//
// Conversations (client -> server, one at a time on a connection):
//   WRITE  {segment, offset, size}  -> STATUS (accept or reject);
//          then DATA frames carrying exactly `size` bytes -> STATUS{value=size}
//          once every byte is in the target segment.
//   COPY_WRITE: a WRITE that carries a replica copy (the TCP mover's push)
//          instead of a client's put; the same conversation. The target
//          receives it as background traffic (docs/runtime.md, "Foreground
//          first"), a WRITE as foreground.
//   READ   {segment, offset, size}  -> STATUS (accept, value=size, or reject);
//          then DATA frames carrying exactly `size` bytes.
//   RMA_WRITE {segment, offset, size} -> RMA_GRANT {remote address, packed
//          remote key, worker address} or STATUS (reject); the client puts
//          the bytes by RMA, then RMA_COMMIT {segment, offset, size} -> STATUS
//          once the server has seen the commit.
// A STATUS carries an absl::StatusCode, a 64-bit value and a short message.
//
// Copy leases: a READ may append the id of the copy lease it reads under
// (u64, non-zero) to its range; the store then checks the lease with the
// master (docs/runtime.md, "Who may read a range"). A refused READ is
// answered with a STATUS carrying PERMISSION_DENIED and no DATA.
//
// Score inheritance: a store's copy out may append to its COPY_WRITE or
// RMA_COMMIT range the scores its bytes have on the source store (count u32,
// then per piece size u64 and score as an IEEE double's bits u64; 1 to
// kCopyScorePiecesMax pieces whose sizes add up to the range's size, every
// score finite and >= 0). The target hands them to its SegmentScoreKeeper
// once every byte has landed, before it acknowledges. Without the trailer
// (clients' puts, a source without a head pool) the payload is the plain
// range, as before.
#ifndef HEATSINK_RUNTIME_TRANSPORT_WIRE_H_
#define HEATSINK_RUNTIME_TRANSPORT_WIRE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "core/model/ids.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/socket.h"

namespace heatsink::runtime::wire {

inline constexpr uint32_t kMagic = 0x31445348;  // "HSD1" read as little-endian bytes
inline constexpr size_t kHeaderBytes = 12;
inline constexpr uint32_t kControlPayloadMax = 64 * 1024;
inline constexpr size_t kStatusMessageMax = 512;

enum class FrameType : uint16_t {
  kWrite = 1,
  kRead = 2,
  kRmaWrite = 3,
  kRmaCommit = 4,
  kData = 5,
  kStatus = 6,
  kRmaGrant = 7,
  kCopyWrite = 8,
};

struct FrameHeader {
  FrameType type = FrameType::kStatus;
  uint32_t payload_bytes = 0;
};

// The payload of WRITE, READ, RMA_WRITE and RMA_COMMIT.
struct RangeRequest {
  SegmentId segment;
  uint64_t offset = 0;
  uint64_t size = 0;
};

// A WRITE or RMA_COMMIT payload: the range and the scores it carries
// (empty: none).
struct ScoredRange {
  RangeRequest range;
  std::vector<ScorePiece> scores;
};

struct RmaGrant {
  uint64_t remote_address = 0;  // target address of the requested offset
  std::string remote_key;       // packed remote key
  std::string worker_address;   // the target worker's address
};

void EncodeHeader(const FrameHeader& header, uint8_t out[kHeaderBytes]);
// INVALID_ARGUMENT for a bad magic or unknown type.
[[nodiscard]] absl::StatusOr<FrameHeader> DecodeHeader(const uint8_t in[kHeaderBytes]);

std::string EncodeRange(const RangeRequest& request);
[[nodiscard]] absl::StatusOr<RangeRequest> DecodeRange(absl::string_view payload);
// The range followed by its scores; exactly EncodeRange when `scores` is
// empty. REQUIRES: at most kCopyScorePiecesMax pieces.
std::string EncodeScoredRange(const RangeRequest& request, absl::Span<const ScorePiece> scores);
// A READ payload: the range and the copy lease it reads under (invalid:
// none). EncodeReadRange is exactly EncodeRange without a lease.
struct ReadRange {
  RangeRequest range;
  LeaseId copy_lease;
};
std::string EncodeReadRange(const RangeRequest& request, LeaseId copy_lease);
// INVALID_ARGUMENT for a malformed payload or a lease id of 0.
[[nodiscard]] absl::StatusOr<ReadRange> DecodeReadRange(absl::string_view payload);
// A range with or without scores; INVALID_ARGUMENT for a malformed payload or
// scores that break the rules above.
[[nodiscard]] absl::StatusOr<ScoredRange> DecodeScoredRange(absl::string_view payload);
std::string EncodeStatus(const absl::Status& status, uint64_t value);
// Decodes a STATUS payload into *carried and *value; false when malformed.
[[nodiscard]] bool DecodeStatus(absl::string_view payload, absl::Status* carried,
                                uint64_t* value);
std::string EncodeGrant(const RmaGrant& grant);
[[nodiscard]] absl::StatusOr<RmaGrant> DecodeGrant(absl::string_view payload);

// Frame I/O on a blocking socket. Transport failures are UNAVAILABLE.
[[nodiscard]] absl::Status SendFrame(const Socket& socket, FrameType type,
                                     absl::string_view payload);
// Receives a header; UNAVAILABLE for a malformed header or a payload above
// `payload_max` (the connection cannot be resynchronised after either).
[[nodiscard]] absl::StatusOr<FrameHeader> RecvHeader(const Socket& socket, uint32_t payload_max);
// Receives a control frame of the expected type (or a STATUS, returned as
// such so the caller can surface a rejection).
[[nodiscard]] absl::StatusOr<std::pair<FrameType, std::string>> RecvControl(
    const Socket& socket);
// Sends a STATUS frame.
[[nodiscard]] absl::Status SendStatus(const Socket& socket, const absl::Status& status,
                                      uint64_t value);
// Receives a frame that must be a STATUS; returns the carried status.
// UNAVAILABLE when the connection breaks or another frame arrives.
[[nodiscard]] absl::Status RecvStatus(const Socket& socket, uint64_t* value);

}  // namespace heatsink::runtime::wire

#endif  // HEATSINK_RUNTIME_TRANSPORT_WIRE_H_
