#include "sim/sim_data_mover.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::sim {

SimDataMover::SimDataMover(Engine* engine, Network* network, SegmentHostResolver resolver)
    : engine_(engine), network_(network), resolver_(std::move(resolver)) {
  HS_CHECK(engine_ != nullptr && network_ != nullptr && resolver_ != nullptr);
}

void SimDataMover::SetFailureInjection(uint64_t numerator, uint64_t denominator, Rng* rng) {
  HS_CHECK(denominator > 0 && numerator <= denominator);
  HS_CHECK(numerator == 0 || rng != nullptr);
  failure_numerator_ = numerator;
  failure_denominator_ = denominator;
  failure_rng_ = rng;
}

void SimDataMover::PostFailure(absl::AnyInvocable<void(absl::Status) &&> done,
                               absl::Status status) {
  ++copies_failed_;
  engine_->Post([done = std::move(done), status = std::move(status)]() mutable {
    std::move(done)(std::move(status));
  });
}

void SimDataMover::StartCopy(const CopyRange& range,
                             absl::AnyInvocable<void(absl::Status) &&> done) {
  ++copies_started_;
  auto host_of = [this](SegmentId segment) -> std::optional<int> {
    std::optional<HostId> host = resolver_(segment);
    if (!host.has_value()) return std::nullopt;
    return network_->FindHost(*host);
  };
  const std::optional<int> src = host_of(range.source_segment);
  const std::optional<int> dst = host_of(range.target_segment);
  if (!src.has_value() || !dst.has_value()) {
    PostFailure(std::move(done),
                absl::NotFoundError(absl::StrCat(
                    "segment ", (src.has_value() ? range.target_segment : range.source_segment).value,
                    " has no host")));
    return;
  }
  if (range.size_bytes > static_cast<uint64_t>(network_->knobs().flow_bytes_max)) {
    PostFailure(std::move(done), absl::OutOfRangeError(absl::StrCat(
                                     "copy of ", range.size_bytes, " bytes exceeds flow_bytes_max")));
    return;
  }
  // Drawn at start so the fault stream does not depend on completion order.
  const bool doomed = failure_numerator_ > 0 &&
                      failure_rng_->Bernoulli(failure_numerator_, failure_denominator_);
  const uint64_t copy = next_copy_++;
  InFlight& entry = in_flight_[copy];
  entry.source = range.source_segment;
  entry.target = range.target_segment;
  entry.bytes = range.size_bytes;
  entry.doomed = doomed;
  entry.done = std::move(done);
  FlowSpec spec;
  spec.src_host = *src;
  spec.dst_host = *dst;
  spec.bytes = static_cast<int64_t>(range.size_bytes);
  // Every copy (dynamic, ordinary replica, warmup) yields to reads and puts.
  spec.traffic_class = TrafficClass::kBackground;
  absl::StatusOr<FlowId> flow =
      network_->StartFlow(spec, [this, copy](absl::Status status) { Finish(copy, std::move(status)); });
  auto it = in_flight_.find(copy);
  if (!flow.ok()) {
    absl::AnyInvocable<void(absl::Status) &&> failed_done = std::move(it->second.done);
    in_flight_.erase(it);
    PostFailure(std::move(failed_done), flow.status());
    return;
  }
  it->second.flow = *flow;
}

void SimDataMover::Finish(uint64_t copy, absl::Status status) {
  auto it = in_flight_.find(copy);
  HS_CHECK_MSG(it != in_flight_.end(), "a copy finished twice");
  InFlight entry = std::move(it->second);
  in_flight_.erase(it);
  if (status.ok() && entry.doomed) status = absl::UnavailableError("injected copy failure");
  if (status.ok()) {
    ++copies_succeeded_;
    bytes_copied_ += entry.bytes;
  } else {
    ++copies_failed_;
  }
  std::move(entry.done)(std::move(status));
}

int SimDataMover::FailCopiesOfSegment(SegmentId segment) {
  std::vector<FlowId> victims;
  for (const auto& [copy, entry] : in_flight_) {
    if (entry.source == segment || entry.target == segment) victims.push_back(entry.flow);
  }
  // A copy failed earlier but not yet reported is gone from the network;
  // FailFlow returns false for it and it is not counted twice.
  int failed = 0;
  for (FlowId flow : victims) {
    failed += network_->FailFlow(flow, absl::UnavailableError(absl::StrCat(
                                           "segment ", segment.value, " failed mid-copy")))
                  ? 1
                  : 0;
  }
  return failed;
}

}  // namespace heatsink::sim
