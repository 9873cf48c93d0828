#include "core/replication/decision.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/check.h"

namespace heatsink {
namespace {

constexpr std::array<std::pair<RejectReason, absl::string_view>, 23> kReasonWords = {{
    {RejectReason::kBelowThreshold, "below_threshold"},
    {RejectReason::kPending, "pending"},
    {RejectReason::kCooldown, "cooldown"},
    {RejectReason::kRecreateCooldown, "recreate_cooldown"},
    {RejectReason::kReplicaLimit, "replica_limit"},
    {RejectReason::kVersionMismatch, "version_mismatch"},
    {RejectReason::kSizeMismatch, "size_mismatch"},
    {RejectReason::kNoTarget, "no_target"},
    {RejectReason::kExpired, "expired"},
    {RejectReason::kDomainHintUnsupported, "domain_hint_unsupported"},
    {RejectReason::kConflict, "conflict"},
    {RejectReason::kTargetDomainHasReplica, "target_domain_has_replica"},
    {RejectReason::kModeOff, "mode_off"},
    {RejectReason::kObjectNotFound, "object_not_found"},
    {RejectReason::kNoSource, "no_source"},
    {RejectReason::kUtilizationCap, "utilization_cap"},
    {RejectReason::kNoTargetInDomain, "no_target_in_domain"},
    {RejectReason::kTaskCreateFailed, "task_create_failed"},
    {RejectReason::kResourceExhausted, "resource_exhausted"},
    {RejectReason::kInvalidArgument, "invalid_argument"},
    {RejectReason::kNotComplete, "not_complete"},
    {RejectReason::kAlreadyPresent, "already_present"},
    {RejectReason::kWarmupLimit, "warmup_limit"},
}};

void AppendOptString(std::string* out, const std::optional<std::string>& v) {
  if (v.has_value()) {
    AppendJsonString(out, *v);
  } else {
    out->append("null");
  }
}

template <typename T>
void AppendOptNumber(std::string* out, const std::optional<T>& v) {
  if (v.has_value()) {
    absl::StrAppend(out, *v);
  } else {
    out->append("null");
  }
}

}  // namespace

absl::string_view DecisionKindName(DecisionKind k) {
  switch (k) {
    case DecisionKind::kHeat: return "heat";
    case DecisionKind::kWarmup: return "warmup";
    case DecisionKind::kProposal: return "proposal";
    case DecisionKind::kEvict: return "evict";
    case DecisionKind::kRelease: return "release";
  }
  HS_CHECK_MSG(false, "bad DecisionKind");
  return {};  // not reached; some sanitizer builds cannot prove it
}

absl::string_view DecisionOutcomeName(DecisionOutcome o) {
  switch (o) {
    case DecisionOutcome::kAccepted: return "accepted";
    case DecisionOutcome::kWouldPropose: return "would_propose";
    case DecisionOutcome::kRejected: return "rejected";
    case DecisionOutcome::kDropped: return "dropped";
  }
  HS_CHECK_MSG(false, "bad DecisionOutcome");
  return {};  // not reached; some sanitizer builds cannot prove it
}

absl::string_view RejectReasonName(RejectReason r) {
  for (const auto& [reason, word] : kReasonWords) {
    if (reason == r) return word;
  }
  HS_CHECK_MSG(false, "RejectReason without a word");
  return {};  // not reached; some sanitizer builds cannot prove it
}

std::optional<RejectReason> ParseRejectReason(absl::string_view word) {
  for (const auto& [reason, w] : kReasonWords) {
    if (w == word) return reason;
  }
  return std::nullopt;
}

void AppendJsonString(std::string* out, absl::string_view s) {
  out->push_back('"');
  for (unsigned char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20) {
          absl::StrAppendFormat(out, "\\u%04x", c);
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
  out->push_back('"');
}

std::string FormatDecisionJson(const DecisionRecord& r) {
  HS_CHECK(r.reason.has_value() == (r.outcome == DecisionOutcome::kRejected));
  std::string out;
  out.reserve(256);
  absl::StrAppend(&out, "{\"t_ns\":", r.t_ns, ",\"kind\":\"", DecisionKindName(r.kind),
                  "\",\"tenant\":");
  AppendJsonString(&out, r.tenant);
  out.append(",\"key\":");
  AppendJsonString(&out, r.key);
  out.append(",\"requester_domain\":");
  AppendOptString(&out, r.requester_domain);
  out.append(",\"target_domain\":");
  AppendOptString(&out, r.target_domain);
  absl::StrAppend(&out, ",\"outcome\":\"", DecisionOutcomeName(r.outcome), "\",\"reason\":");
  if (r.reason.has_value()) {
    absl::StrAppend(&out, "\"", RejectReasonName(*r.reason), "\"");
  } else {
    out.append("null");
  }
  out.append(",\"source_segment\":");
  AppendOptNumber(&out, r.source_segment ? std::optional<uint64_t>(r.source_segment->value)
                                         : std::nullopt);
  out.append(",\"target_segment\":");
  AppendOptNumber(&out, r.target_segment ? std::optional<uint64_t>(r.target_segment->value)
                                         : std::nullopt);
  out.append(",\"lease_id\":");
  AppendOptNumber(&out, r.lease_id ? std::optional<uint64_t>(r.lease_id->value) : std::nullopt);
  out.append(",\"version\":");
  AppendOptNumber(&out, r.version);
  out.push_back('}');
  return out;
}

}  // namespace heatsink
