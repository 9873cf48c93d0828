// File: core/env/data_mover.h
//
// Moves bytes between store segments on behalf of a store worker. The
// simulator models the transfer as a network flow; the runtime moves real
// bytes (plain TCP, or UCX with RDMA verbs where a device exists).
//
// Contract: StartCopy returns at once; `done` is called exactly once, later,
// with OK when every byte of the range has landed at the target, or with an
// error status (UNAVAILABLE for transport failures, NOT_FOUND for an unknown
// segment, OUT_OF_RANGE for a range outside a segment). `done` is never called
// inside StartCopy. Thread-safe.
//
// Score inheritance (ADR-0019 with dynamic replication; the rule is at
// TierManager::RaiseScore): a copy that lands also lifts the target's access
// scores of the landed bytes to the source's. That is the mover's business,
// not the caller's: the runtime's movers push from the source store, so they
// read the source's scores locally and send them with the bytes, and the
// target applies them before it acknowledges, i.e. before `done` gets OK.
// Nothing in this interface carries scores.
#ifndef HEATSINK_CORE_ENV_DATA_MOVER_H_
#define HEATSINK_CORE_ENV_DATA_MOVER_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "core/model/ids.h"

namespace heatsink {

struct CopyRange {
  CopyRange() = default;
  // `object` stays empty where no object is involved (raw bytes in a test).
  CopyRange(SegmentId source_segment, uint64_t source_offset, SegmentId target_segment,
            uint64_t target_offset, uint64_t size_bytes, ObjectName object = {})
      : source_segment(source_segment),
        source_offset(source_offset),
        target_segment(target_segment),
        target_offset(target_offset),
        size_bytes(size_bytes),
        object(std::move(object)) {}

  SegmentId source_segment;
  uint64_t source_offset = 0;
  SegmentId target_segment;
  uint64_t target_offset = 0;
  uint64_t size_bytes = 0;
  // The object whose replica the range holds, for accounting and logs (the
  // bytes move by segment and offset alone).
  ObjectName object;
};

class DataMover {
 public:
  virtual ~DataMover() = default;
  virtual void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) = 0;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_ENV_DATA_MOVER_H_
