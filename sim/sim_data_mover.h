// File: sim/sim_data_mover.h
//
// core/env DataMover for the simulator: a copy between two segments becomes a
// network flow from the host owning the source segment to the host owning the
// target segment. The scenario driver supplies the segment -> host resolver
// (segments are mounted and unmounted as the scenario runs).
//
// Outcomes, always delivered later as an engine event, never inside
// StartCopy:
//   OK                 every byte landed;
//   NOT_FOUND          a segment has no host (unknown or unmounted);
//   UNAVAILABLE        a partitioned trunk on the route (at start or while
//                      moving), FailCopiesOfSegment, or an injected failure;
//   other flow errors  as Network::StartFlow returns them (for example
//                      RESOURCE_EXHAUSTED at flows_max).
// Ranges are not checked against segment sizes here: the master validated
// them when it allocated the target.
//
// Injected failures (the scenario's copy failure probability) are drawn when
// the copy starts, from the Rng given (the faults sub-stream); a doomed copy
// still moves its bytes and fails at the end, as a transfer that fails its
// final check would.
//
// Thread safety: none (engine thread only).
#ifndef HEATSINK_SIM_SIM_DATA_MOVER_H_
#define HEATSINK_SIM_SIM_DATA_MOVER_H_

#include <cstdint>
#include <optional>

#include "absl/container/btree_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "core/env/data_mover.h"
#include "core/env/rng.h"
#include "core/model/ids.h"
#include "sim/engine.h"
#include "sim/network.h"

namespace heatsink::sim {

// The host that owns a segment now, or nullopt when none does.
using SegmentHostResolver = absl::AnyInvocable<std::optional<HostId>(SegmentId) const>;

class SimDataMover final : public DataMover {
 public:
  // `network` and `engine` must outlive the mover.
  SimDataMover(Engine* engine, Network* network, SegmentHostResolver resolver);
  SimDataMover(const SimDataMover&) = delete;
  SimDataMover& operator=(const SimDataMover&) = delete;

  void StartCopy(const CopyRange& range, absl::AnyInvocable<void(absl::Status) &&> done) override;

  // Each later copy fails with probability numerator / denominator, drawn from
  // `rng` (which must outlive the mover). numerator 0 turns injection off.
  // REQUIRES: denominator > 0, numerator <= denominator.
  void SetFailureInjection(uint64_t numerator, uint64_t denominator, Rng* rng);

  // Fails every copy in flight from or to `segment` (an unmounted segment, a
  // crashed worker) with UNAVAILABLE. Returns how many were still moving or
  // in setup (a copy already failed but not yet reported is not counted).
  int FailCopiesOfSegment(SegmentId segment);

  int64_t copies_in_flight() const { return static_cast<int64_t>(in_flight_.size()); }
  uint64_t copies_started() const { return copies_started_; }
  uint64_t copies_succeeded() const { return copies_succeeded_; }
  uint64_t copies_failed() const { return copies_failed_; }
  uint64_t bytes_copied() const { return bytes_copied_; }

 private:
  struct InFlight {
    SegmentId source;
    SegmentId target;
    uint64_t bytes = 0;
    bool doomed = false;  // injected failure, reported at the end
    FlowId flow = 0;
    absl::AnyInvocable<void(absl::Status) &&> done;
  };

  void Finish(uint64_t copy, absl::Status status);
  void PostFailure(absl::AnyInvocable<void(absl::Status) &&> done, absl::Status status);

  Engine* const engine_;
  Network* const network_;
  SegmentHostResolver resolver_;
  uint64_t failure_numerator_ = 0;
  uint64_t failure_denominator_ = 1;
  Rng* failure_rng_ = nullptr;
  // By copy number; ordered so FailCopiesOfSegment fails copies in start order.
  absl::btree_map<uint64_t, InFlight> in_flight_;
  uint64_t next_copy_ = 1;
  uint64_t copies_started_ = 0;
  uint64_t copies_succeeded_ = 0;
  uint64_t copies_failed_ = 0;
  uint64_t bytes_copied_ = 0;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_SIM_DATA_MOVER_H_
