// File: core/replication/decision.h
//
// Admission and warmup decisions as records, the sink they go to, and the one
// JSONL encoding that both the simulator and the runtime write (decision log
// format version 1, documented in docs/decision-log.md). CI regression
// compares these lines, so the field order and the reason words are stable.
#ifndef HEATSINK_CORE_REPLICATION_DECISION_H_
#define HEATSINK_CORE_REPLICATION_DECISION_H_

#include <optional>
#include <string>
#include "absl/strings/string_view.h"

#include "absl/status/status.h"
#include "core/env/time.h"
#include "core/model/ids.h"

namespace heatsink {

inline constexpr int kDecisionLogVersion = 1;

// kEvict and kRelease record the drop of a readable dynamic replica (by
// eviction, which drops optional replicas before any object, DESIGN 12; by
// the optional cold release); their outcome is kDropped.
enum class DecisionKind { kHeat, kWarmup, kProposal, kEvict, kRelease };
enum class DecisionOutcome { kAccepted, kWouldPropose, kRejected, kDropped };

// Every rejection has its own reason (DESIGN "distinct reasons"). The words
// are part of the log format: add new ones at the end, never rename.
enum class RejectReason {
  kBelowThreshold,          // the Master's own window is under the hit count
  kPending,                 // a dynamic action for the key (and domain) is in flight
  kCooldown,                // admission cooldown after an accepted admission
  kRecreateCooldown,        // recreate cooldown after a dynamic replica was removed
  kReplicaLimit,            // readable MEMORY replicas already at the cap
  kVersionMismatch,         // proposal's observed version differs from the object's
  kSizeMismatch,            // proposal's expected size differs from the object's
  kNoTarget,                // no valid, allocatable target segment
  kExpired,                 // proposal expired before admission
  kDomainHintUnsupported,   // domain hints while domain-aware placement is off
  kConflict,                // same proposal id, different content
  kTargetDomainHasReplica,  // a readable replica already sits in the target domain
  kModeOff,                 // dynamic_replication_mode is off
  kObjectNotFound,          // the key does not exist (or was removed)
  kNoSource,                // no readable MEMORY replica to copy from
  kUtilizationCap,          // every otherwise valid target is above the utilisation cap
  kNoTargetInDomain,        // no valid target segment in the target domain
  kTaskCreateFailed,        // REPLICA_COPY task creation failed; pending rolled back
  kResourceExhausted,       // a bounded table or queue is full
  kInvalidArgument,         // malformed proposal (bad key, unknown action)
  kNotComplete,             // the object has no COMPLETE replica yet (put in progress)
  kAlreadyPresent,          // warmup: the object already has a replica in the domain
  kWarmupLimit,             // warmup: copies-in-flight or bytes-per-second budget spent
};

absl::string_view DecisionKindName(DecisionKind k);
absl::string_view DecisionOutcomeName(DecisionOutcome o);
absl::string_view RejectReasonName(RejectReason r);
// Inverse of RejectReasonName; nullopt for an unknown word.
std::optional<RejectReason> ParseRejectReason(absl::string_view word);

struct DecisionRecord {
  TimeNs t_ns = 0;
  DecisionKind kind = DecisionKind::kHeat;
  std::string tenant;
  std::string key;
  std::optional<std::string> requester_domain;
  std::optional<std::string> target_domain;
  DecisionOutcome outcome = DecisionOutcome::kRejected;
  std::optional<RejectReason> reason;  // set exactly when outcome == kRejected
  std::optional<SegmentId> source_segment;
  std::optional<SegmentId> target_segment;
  std::optional<LeaseId> lease_id;
  std::optional<Version> version;
};

// One JSON object, keys in the documented order, absent values as null, no
// trailing newline. Deterministic byte for byte.
std::string FormatDecisionJson(const DecisionRecord& r);

// Receives every admission/warmup decision. Implementations: the simulator's
// and runtime's JSONL writers, test collectors. Record may be called from the
// admission worker concurrently with other calls; implementations lock.
class DecisionSink {
 public:
  virtual ~DecisionSink() = default;
  virtual void Record(const DecisionRecord& record) = 0;
};

// JSON string escaping used by the formatter (RFC 8259; control characters as
// \u00XX). Exposed for other core JSONL encoders.
void AppendJsonString(std::string* out, absl::string_view s);

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_DECISION_H_
