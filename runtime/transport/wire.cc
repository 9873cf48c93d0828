#include "runtime/transport/wire.h"

#include <bit>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink::runtime::wire {
namespace {

void PutU16(std::string& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutBytes(std::string& out, absl::string_view bytes) {
  PutU32(out, static_cast<uint32_t>(bytes.size()));
  out.append(bytes.data(), bytes.size());
}

uint64_t LoadLe(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// Sequential reader over a payload; every read is bounds-checked.
class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  bool U32(uint32_t* v) { return Fixed(4, v); }
  bool U64(uint64_t* v) { return Fixed(8, v); }
  bool Bytes(std::string* out) {
    uint32_t n = 0;
    if (!U32(&n) || n > in_.size() - pos_) return false;
    out->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  bool done() const { return pos_ == in_.size(); }
  size_t remaining() const { return in_.size() - pos_; }

 private:
  template <typename T>
  bool Fixed(size_t n, T* v) {
    if (in_.size() - pos_ < n) return false;
    *v = static_cast<T>(LoadLe(reinterpret_cast<const uint8_t*>(in_.data()) + pos_,
                               static_cast<int>(n)));
    pos_ += n;
    return true;
  }
  absl::string_view in_;
  size_t pos_ = 0;
};

bool KnownType(uint16_t t) { return t >= 1 && t <= 8; }

}  // namespace

void EncodeHeader(const FrameHeader& header, uint8_t out[kHeaderBytes]) {
  std::string s;
  s.reserve(kHeaderBytes);
  PutU32(s, kMagic);
  PutU16(s, static_cast<uint16_t>(header.type));
  PutU16(s, 0);
  PutU32(s, header.payload_bytes);
  for (size_t i = 0; i < kHeaderBytes; ++i) out[i] = static_cast<uint8_t>(s[i]);
}

absl::StatusOr<FrameHeader> DecodeHeader(const uint8_t in[kHeaderBytes]) {
  if (LoadLe(in, 4) != kMagic) return absl::InvalidArgumentError("bad frame magic");
  const auto type = static_cast<uint16_t>(LoadLe(in + 4, 2));
  if (!KnownType(type)) return absl::InvalidArgumentError(absl::StrCat("unknown frame type ", type));
  FrameHeader h;
  h.type = static_cast<FrameType>(type);
  h.payload_bytes = static_cast<uint32_t>(LoadLe(in + 8, 4));
  return h;
}

std::string EncodeRange(const RangeRequest& request) {
  std::string out;
  PutU64(out, request.segment.value);
  PutU64(out, request.offset);
  PutU64(out, request.size);
  return out;
}

absl::StatusOr<RangeRequest> DecodeRange(absl::string_view payload) {
  Reader r(payload);
  RangeRequest req;
  uint64_t segment = 0;
  if (!r.U64(&segment) || !r.U64(&req.offset) || !r.U64(&req.size) || !r.done()) {
    return absl::InvalidArgumentError("malformed range request");
  }
  req.segment = SegmentId(segment);
  return req;
}

std::string EncodeReadRange(const RangeRequest& request, LeaseId copy_lease) {
  std::string out = EncodeRange(request);
  if (copy_lease.valid()) PutU64(out, copy_lease.value);
  return out;
}

absl::StatusOr<ReadRange> DecodeReadRange(absl::string_view payload) {
  constexpr size_t kRangeBytes = 24;
  if (payload.size() != kRangeBytes && payload.size() != kRangeBytes + 8) {
    return absl::InvalidArgumentError("malformed read request");
  }
  ReadRange out;
  HS_ASSIGN_OR_RETURN(out.range, DecodeRange(payload.substr(0, kRangeBytes)));
  if (payload.size() == kRangeBytes) return out;
  Reader r(payload.substr(kRangeBytes));
  uint64_t lease = 0;
  if (!r.U64(&lease) || lease == 0) return absl::InvalidArgumentError("malformed copy lease id");
  out.copy_lease = LeaseId(lease);
  return out;
}

std::string EncodeScoredRange(const RangeRequest& request, absl::Span<const ScorePiece> scores) {
  HS_CHECK(scores.size() <= kCopyScorePiecesMax);
  std::string out = EncodeRange(request);
  if (scores.empty()) return out;
  PutU32(out, static_cast<uint32_t>(scores.size()));
  for (const ScorePiece& piece : scores) {
    PutU64(out, piece.size_bytes);
    PutU64(out, std::bit_cast<uint64_t>(piece.score));
  }
  return out;
}

absl::StatusOr<ScoredRange> DecodeScoredRange(absl::string_view payload) {
  constexpr size_t kRangeBytes = 24;
  if (payload.size() < kRangeBytes) return absl::InvalidArgumentError("malformed range request");
  ScoredRange out;
  HS_ASSIGN_OR_RETURN(out.range, DecodeRange(payload.substr(0, kRangeBytes)));
  if (payload.size() == kRangeBytes) return out;
  Reader r(payload.substr(kRangeBytes));
  uint32_t count = 0;
  if (!r.U32(&count) || count == 0 || count > kCopyScorePiecesMax ||
      r.remaining() != uint64_t{count} * 16) {
    return absl::InvalidArgumentError("malformed score pieces");
  }
  out.scores.resize(count);
  uint64_t covered = 0;
  for (ScorePiece& piece : out.scores) {
    uint64_t bits = 0;
    if (!r.U64(&piece.size_bytes) || !r.U64(&bits)) {
      return absl::InvalidArgumentError("malformed score pieces");
    }
    piece.score = std::bit_cast<double>(bits);
    if (piece.size_bytes == 0 || piece.size_bytes > out.range.size - covered ||
        !std::isfinite(piece.score) || piece.score < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad score piece of ", piece.size_bytes, " bytes, score ", piece.score));
    }
    covered += piece.size_bytes;
  }
  if (covered != out.range.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("score pieces cover ", covered, " of ", out.range.size, " bytes"));
  }
  return out;
}

std::string EncodeStatus(const absl::Status& status, uint64_t value) {
  std::string out;
  PutU32(out, static_cast<uint32_t>(status.code()));
  PutU64(out, value);
  absl::string_view message = status.message();
  PutBytes(out, message.substr(0, kStatusMessageMax));
  return out;
}

bool DecodeStatus(absl::string_view payload, absl::Status* carried, uint64_t* value) {
  Reader r(payload);
  uint32_t code = 0;
  uint64_t v = 0;
  std::string message;
  if (!r.U32(&code) || !r.U64(&v) || !r.Bytes(&message) || !r.done() || code > 16) {
    return false;
  }
  if (value != nullptr) *value = v;
  *carried = absl::Status(static_cast<absl::StatusCode>(code), message);
  return true;
}

std::string EncodeGrant(const RmaGrant& grant) {
  std::string out;
  PutU64(out, grant.remote_address);
  PutBytes(out, grant.remote_key);
  PutBytes(out, grant.worker_address);
  return out;
}

absl::StatusOr<RmaGrant> DecodeGrant(absl::string_view payload) {
  Reader r(payload);
  RmaGrant g;
  if (!r.U64(&g.remote_address) || !r.Bytes(&g.remote_key) || !r.Bytes(&g.worker_address) ||
      !r.done() || g.remote_key.empty() || g.worker_address.empty()) {
    return absl::InvalidArgumentError("malformed RMA grant");
  }
  return g;
}

absl::Status SendFrame(const Socket& socket, FrameType type, absl::string_view payload) {
  uint8_t header[kHeaderBytes];
  EncodeHeader(FrameHeader{type, static_cast<uint32_t>(payload.size())}, header);
  return SendAll2(socket, header, kHeaderBytes, payload.data(), payload.size());
}

absl::StatusOr<FrameHeader> RecvHeader(const Socket& socket, uint32_t payload_max) {
  uint8_t raw[kHeaderBytes];
  HS_RETURN_IF_ERROR(RecvAll(socket, raw, kHeaderBytes));
  absl::StatusOr<FrameHeader> header = DecodeHeader(raw);
  if (!header.ok()) {
    return absl::UnavailableError(absl::StrCat("protocol error: ", header.status().message()));
  }
  if (header->payload_bytes > payload_max) {
    return absl::UnavailableError(absl::StrCat("protocol error: frame of ", header->payload_bytes,
                                               " bytes above the limit of ", payload_max));
  }
  return header;
}

absl::StatusOr<std::pair<FrameType, std::string>> RecvControl(const Socket& socket) {
  HS_ASSIGN_OR_RETURN(FrameHeader header, RecvHeader(socket, kControlPayloadMax));
  if (header.type == FrameType::kData) {
    return absl::UnavailableError("protocol error: data frame where a control frame was due");
  }
  std::string payload(header.payload_bytes, '\0');
  HS_RETURN_IF_ERROR(RecvAll(socket, payload.data(), payload.size()));
  return std::make_pair(header.type, std::move(payload));
}

absl::Status SendStatus(const Socket& socket, const absl::Status& status, uint64_t value) {
  return SendFrame(socket, FrameType::kStatus, EncodeStatus(status, value));
}

absl::Status RecvStatus(const Socket& socket, uint64_t* value) {
  HS_ASSIGN_OR_RETURN(auto frame, RecvControl(socket));
  if (frame.first != FrameType::kStatus) {
    return absl::UnavailableError("protocol error: expected a status frame");
  }
  absl::Status carried;
  if (!DecodeStatus(frame.second, &carried, value)) {
    return absl::UnavailableError("protocol error: malformed status frame");
  }
  return carried;
}

}  // namespace heatsink::runtime::wire
