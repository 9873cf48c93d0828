// The swarm's named invariants (sim/swarm_checker.h).
#include "sim/swarm_checker.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/master/master_service.h"
#include "core/replication/decision.h"
#include "core/replication/replicated_master.h"
#include "sim/numa_model.h"

namespace heatsink::sim {
namespace {

std::string FormatTime(TimeNs t_ns) {
  return absl::StrFormat("%d.%06d ms", t_ns / kNsPerMs, t_ns % kNsPerMs);
}

std::string FormatName(const ObjectName& name) { return absl::StrCat(name.tenant, "/", name.key); }

std::string DescribeOp(const SimOp& op) {
  std::string out(SimOpKindName(op.kind));
  if (!op.client.empty()) absl::StrAppend(&out, " client=", op.client);
  if (!op.host.empty()) absl::StrAppend(&out, " host=", op.host);
  if (!op.segment.empty()) absl::StrAppend(&out, " segment=", op.segment);
  if (!op.keys.empty()) {
    absl::StrAppend(&out, " key", op.keys.size() > 1 ? "s" : "", "=", op.tenant, "/",
                    absl::StrJoin(op.keys, ","));
  }
  if (op.kind == SimOpKind::kPut || op.kind == SimOpKind::kBatchPut) {
    absl::StrAppend(&out, " size=", op.size_bytes);
  }
  if (op.kind == SimOpKind::kFailCopy) absl::StrAppend(&out, " count=", op.count);
  if (op.kind == SimOpKind::kDelayCopies)
    absl::StrAppend(&out, " by=", op.delay_ns / kNsPerMs, "ms");
  if (op.kind == SimOpKind::kWarmup) absl::StrAppend(&out, " domain=", op.requester_domain);
  if (op.proposal != nullptr) {
    const ScriptedProposal& p = *op.proposal;
    absl::StrAppend(&out, " id=", p.first_proposal_id, " count=", p.count,
                    p.same_id ? " same_id" : "");
    if (!p.requester_domain.empty()) absl::StrAppend(&out, " requester=", p.requester_domain);
    if (!p.target_domain.empty()) absl::StrAppend(&out, " target=", p.target_domain);
    if (p.observed_version != 0) absl::StrAppend(&out, " version=", p.observed_version);
  }
  return out;
}

std::string DescribeDecision(const DecisionRecord& r) {
  std::string out = absl::StrCat("decision ", DecisionKindName(r.kind), " ", r.tenant, "/", r.key,
                                 " ", DecisionOutcomeName(r.outcome));
  if (r.reason.has_value()) absl::StrAppend(&out, " reason=", RejectReasonName(*r.reason));
  if (r.target_domain.has_value()) absl::StrAppend(&out, " target_domain=", *r.target_domain);
  if (r.source_segment.has_value()) absl::StrAppend(&out, " source=", r.source_segment->value);
  if (r.target_segment.has_value()) absl::StrAppend(&out, " target=", r.target_segment->value);
  if (r.lease_id.has_value()) absl::StrAppend(&out, " lease=", r.lease_id->value);
  if (r.version.has_value()) absl::StrAppend(&out, " version=", *r.version);
  return out;
}

}  // namespace

void SwarmChecker::Remember(TimeNs t_ns, std::string what) {
  if (options_.recent_events_max == 0) return;
  if (recent_.size() == options_.recent_events_max) recent_.pop_front();
  recent_.push_back(absl::StrCat(FormatTime(t_ns), "  ", what));
}

absl::Status SwarmChecker::Violate(const RunWorld& world, absl::string_view invariant,
                                   std::string message) {
  if (!violation_.has_value()) {
    violation_ = SwarmViolation{std::string(invariant), message, world.now_ns, world.events};
  }
  return absl::InternalError(absl::StrCat("swarm invariant ", invariant, ": ", message));
}

void SwarmChecker::OnOp(TimeNs now_ns, const SimOp& op) {
  if (op.kind == SimOpKind::kPut || op.kind == SimOpKind::kBatchPut || op.kind == SimOpKind::kGet ||
      op.kind == SimOpKind::kBatchGet || op.kind == SimOpKind::kRemove) {
    for (const std::string& key : op.keys) keys_.insert(ObjectName{op.tenant, key});
  }
  Remember(now_ns, DescribeOp(op));
}

void SwarmChecker::OnDecision(const DecisionRecord& record) {
  Remember(record.t_ns, DescribeDecision(record));
  if (record.kind == DecisionKind::kHeat) {
    last_heat_decision_ns_[HeatKey(record.tenant, record.key,
                                   record.requester_domain.value_or(""))] = record.t_ns;
  }
  if (record.outcome == DecisionOutcome::kAccepted && record.lease_id.has_value()) {
    lease_accepted_ns_.emplace(*record.lease_id, record.t_ns);
  }
}

void SwarmChecker::OnCopyEnd(const CopyEndObservation& e) {
  Remember(e.t_ns, absl::StrCat("copy_end lease=", e.fence.lease_id.value,
                                " task=", e.fence.task_id.value, " version=", e.fence.version,
                                " key=", FormatName(e.name), " by client ", e.client.value, ": ",
                                e.status.ok() ? "OK" : std::string(e.status.message())));
  if (!e.status.ok()) return;
  ++copy_ends_accepted_;
  if (bad_copy_end_.has_value()) return;
  const TimeNs expiry = e.lease_expiration_ns - options_.test_lease_expiry_shift_ns;
  std::string why;
  if (!e.lease_pending) {
    why = "its lease was not pending";
  } else if (e.t_ns >= expiry) {
    why = absl::StrCat("its lease expired at ", FormatTime(expiry));
  } else if (!e.object_exists) {
    why = "the object no longer existed";
  } else if (e.fence.version != e.object_version || e.lease_version != e.object_version) {
    why = absl::StrCat("fence version ", e.fence.version, ", lease version ", e.lease_version,
                       ", object version ", e.object_version);
  }
  if (!why.empty()) {
    bad_copy_end_ =
        absl::StrCat("CopyEnd of lease ", e.fence.lease_id.value, " for ", FormatName(e.name),
                     " at ", FormatTime(e.t_ns), " succeeded although ", why);
  }
}

void SwarmChecker::OnProposal(const ProposalObservation& e) {
  const ReplicaActionProposal& p = e.proposal;
  std::string answer;
  if (e.result.ok()) {
    answer = absl::StrCat(e.result->would_propose ? "would propose" : "lease ",
                          e.result->would_propose ? "" : absl::StrCat(e.result->lease_id.value),
                          " target segment ", e.result->target_segment.value);
  } else {
    answer = std::string(e.result.status().message());
  }
  Remember(e.t_ns, absl::StrCat("proposal ", e.burst_index + 1, "/", e.burst_size,
                                " id=", p.proposal_id.value, " key=", FormatName(p.name),
                                " version=", p.observed_version, ": ", answer));
  if (e.burst_index == 0) burst_leases_.clear();
  if (e.result.ok()) ++proposals_accepted_;
  if (bad_proposal_.has_value()) return;
  auto same = burst_leases_.find(p.proposal_id);
  if (same != burst_leases_.end()) {
    // Only enforce-mode grants are remembered by the master (observe
    // creates nothing, so a resubmission is decided afresh).
    const ReplicaActionLease& first = same->second;
    if (!e.result.ok()) {
      bad_proposal_.emplace(
          "proposal_idempotent",
          absl::StrCat("proposal ", p.proposal_id.value, " for ", FormatName(p.name),
                       " was granted lease ", first.lease_id.value, " and its resubmission at ",
                       FormatTime(e.t_ns), " was rejected: ", e.result.status().message()));
    } else if (!(*e.result == first)) {
      bad_proposal_.emplace(
          "proposal_idempotent",
          absl::StrCat("proposal ", p.proposal_id.value, " for ", FormatName(p.name),
                       " was granted lease ", first.lease_id.value,
                       " and its resubmission got lease ", e.result->lease_id.value));
    }
    return;
  }
  if (!e.result.ok()) return;
  if (!e.result->would_propose) burst_leases_.emplace(p.proposal_id, *e.result);
  for (const auto& [id, lease] : burst_leases_) {
    if (id == p.proposal_id) continue;
    bad_proposal_.emplace(
        "proposal_burst_one_lease",
        absl::StrCat("proposals ", id.value, " and ", p.proposal_id.value, " for ",
                     FormatName(p.name), " with the same content were both granted at ",
                     FormatTime(e.t_ns), " (leases ", lease.lease_id.value, " and ",
                     e.result->lease_id.value, ")"));
    return;
  }
}

void SwarmChecker::OnNote(TimeNs now_ns, absl::string_view what) {
  Remember(now_ns, std::string(what));
}

void SwarmChecker::OnMasterCrash(TimeNs now_ns) {
  Remember(now_ns, "master crashed");
  ++master_crashes_;
  // Lease ids, proposals and heat belong to one master: the next one starts
  // its own.
  leases_before_crashes_ += static_cast<int64_t>(lease_accepted_ns_.size());
  lease_accepted_ns_.clear();
  missing_since_ns_.clear();
  burst_leases_.clear();
  last_heat_decision_ns_.clear();
  at_cap_ns_.clear();
  mode_on_since_ns_ = -1;
}

void SwarmChecker::OnMasterRestart(TimeNs now_ns) {
  Remember(now_ns, "master restarted");
  restarted_ = true;
}

absl::Status SwarmChecker::CheckLeases(const RunWorld& world) {
  const ReplicatedMaster& rm = *world.master;
  const DurationNs ttl_ns = MsToNs(rm.replication_knobs().dynamic_replication_lease_ttl_ms);
  const DurationNs reaping_ns = rm.master_knobs().sweep_interval_ns();
  const std::vector<PendingActionView> pending = rm.replication().PendingActions();
  int64_t warmups = 0;
  for (const PendingActionView& p : pending) warmups += p.lease.warmup ? 1 : 0;
  const int64_t warmups_max =
      rm.replication_knobs().dynamic_replication_warmup_copies_in_flight_max;
  if (warmups > warmups_max) {
    return Violate(world, "warmup_copies_in_flight",
                   absl::StrCat(warmups,
                                " warmup copies are pending, more than "
                                "dynamic_replication_warmup_copies_in_flight_max (",
                                warmups_max, ")"));
  }
  for (const PendingActionView& p : pending) {
    const LeaseId lease = p.lease.lease_id;
    const std::string where = absl::StrCat("lease ", lease.value, " for ", FormatName(p.lease.name),
                                           " (", PendingPhaseName(p.phase), ")");
    auto accepted = lease_accepted_ns_.find(lease);
    if (accepted == lease_accepted_ns_.end()) {
      // A lease granted without a decision record: its first sighting bounds it.
      accepted = lease_accepted_ns_.emplace(lease, world.now_ns).first;
    }
    if (p.lease.expiration_ns > accepted->second + ttl_ns) {
      return Violate(world, "lease_ends_within_ttl",
                     absl::StrCat(where, " accepted at ", FormatTime(accepted->second),
                                  " expires at ", FormatTime(p.lease.expiration_ns),
                                  ", beyond the TTL of ", ttl_ns / kNsPerMs, " ms"));
    }
    if (world.now_ns > accepted->second + ttl_ns + reaping_ns) {
      return Violate(world, "lease_ends_within_ttl",
                     absl::StrCat(where, " accepted at ", FormatTime(accepted->second),
                                  " is still pending after its TTL (", ttl_ns / kNsPerMs,
                                  " ms) plus the reaping period (", reaping_ns / kNsPerMs, " ms)"));
    }
    if (world.now_ns > p.lease.expiration_ns + reaping_ns) {
      return Violate(world, "pending_has_live_lease",
                     absl::StrCat(where, " is pending, its lease expired at ",
                                  FormatTime(p.lease.expiration_ns)));
    }
    const bool exists = rm.master().GetObjectView(p.lease.name).ok();
    if (exists) {
      missing_since_ns_.erase(p.lease.name);
      continue;
    }
    const TimeNs since = missing_since_ns_.emplace(p.lease.name, world.now_ns).first->second;
    if (world.now_ns > since + ttl_ns + reaping_ns) {
      return Violate(
          world, "no_task_after_key_removed",
          absl::StrCat(where, " is still pending although the key has not existed since ",
                       FormatTime(since)));
    }
  }
  return absl::OkStatus();
}

absl::Status SwarmChecker::CheckReplicaLimit(const RunWorld& world) {
  const ReplicatedMaster& rm = *world.master;
  const int64_t limit = rm.replication_knobs().dynamic_replication_max_memory_replicas;
  const bool per_domain = rm.replication_knobs().dynamic_replication_domain_aware;
  // Objects with dynamic replicas, and the domains those replicas are in.
  std::map<ObjectName, std::set<Domain>> dynamic;
  for (const DynamicReplicaView& d : rm.replication().DynamicReplicas()) {
    dynamic[d.name].insert(d.domain);
  }
  for (const auto& [name, domains] : dynamic) {
    absl::StatusOr<ObjectView> object = rm.master().GetObjectView(name);
    if (!object.ok()) continue;  // the core's own check reports dangling records
    std::map<Domain, int64_t> readable_by_domain;
    int64_t readable = 0;
    for (const ReplicaDescriptor& r : object->replicas) {
      if (r.kind != ReplicaKind::kMemory || r.status != ReplicaStatus::kComplete) continue;
      ++readable;
      ++readable_by_domain[r.location->domain];
    }
    if (!per_domain && readable > limit) {
      return Violate(world, "dynamic_replica_limit",
                     absl::StrCat(FormatName(name), " has ", readable,
                                  " readable MEMORY replicas, limit ", limit));
    }
    if (per_domain) {
      for (const Domain& domain : domains) {
        if (readable_by_domain[domain] > limit) {
          return Violate(
              world, "dynamic_replica_limit",
              absl::StrCat(FormatName(name), " has ", readable_by_domain[domain],
                           " readable MEMORY replicas in domain ", domain, ", limit ", limit));
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SwarmChecker::CheckTiering(const RunWorld& world) {
  if (world.numa_hosts == nullptr) return absl::OkStatus();
  for (const auto& [host, model] : *world.numa_hosts) {
    if (absl::Status st = model->CheckInvariants(); !st.ok()) {
      return Violate(world, "tiering_scores", absl::StrCat("host ", host, ": ", st.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status SwarmChecker::AfterEvent(const RunWorld& world) {
  events_seen_ = world.events;
  last_event_ns_ = world.now_ns;
  if (violation_.has_value()) {
    return absl::InternalError(
        absl::StrCat("swarm invariant ", violation_->invariant, ": ", violation_->message));
  }
  if (bad_proposal_.has_value()) {
    return Violate(world, bad_proposal_->first, bad_proposal_->second);
  }
  if (bad_copy_end_.has_value()) {
    return Violate(world, "copy_end_with_live_lease", *bad_copy_end_);
  }
  if (world.master == nullptr) return CheckTiering(world);  // the master is down
  if (restarted_) {
    restarted_ = false;
    const size_t pending = world.master->replication().PendingActions().size();
    const MasterStats stats = world.master->master().Stats();
    const int64_t tasks = stats.tasks_pending + stats.tasks_processing;
    if (pending != 0 || tasks != 0) {
      return Violate(world, "recovery.no_lease_outlives_crash",
                     absl::StrCat("the restarted master holds ", pending, " pending action(s) and ",
                                  tasks, " task(s) before any admission"));
    }
  }
  if (absl::Status st = CheckLeases(world); !st.ok()) return st;
  if (absl::Status st = CheckReplicaLimit(world); !st.ok()) return st;
  if (absl::Status st = CheckSustainedHeat(world); !st.ok()) return st;
  return CheckTiering(world);
}

absl::Status SwarmChecker::CheckSustainedHeat(const RunWorld& world) {
  const ReplicatedMaster& rm = *world.master;
  if (rm.master().Stats().evictions_with_optional_left_total > 0) {
    return Violate(world, "optional_replicas_first",
                   "an object eviction began while a dynamic replica of an unleased object "
                   "could have been dropped instead");
  }
  if (rm.dynamic_replication_mode() == DynamicReplicationMode::kOff) {
    mode_on_since_ns_ = -1;
    return absl::OkStatus();
  }
  if (mode_on_since_ns_ < 0) mode_on_since_ns_ = world.now_ns;
  if (world.now_ns - last_heat_check_ns_ < kNsPerSec) return absl::OkStatus();
  last_heat_check_ns_ = world.now_ns;
  const DynamicReplicationStats stats = rm.replication().Stats();
  if (stats.rechecks_lost > 0 || stats.triggers_lost > 0) return absl::OkStatus();
  const ReplicationKnobs& k = rm.replication_knobs();
  const MasterKnobs& mk = rm.master_knobs();
  const DurationNs bound =
      std::max({k.admission_cooldown_ns(), k.recreate_cooldown_ns(), k.admission_retry_ns(),
                k.lease_ttl_ns() + mk.sweep_interval_ns(),
                // A copy task of the object holds the look until it ends; one
                // whose worker died ends when the master times it out.
                mk.pending_task_timeout_ns() + mk.processing_task_timeout_ns() +
                    mk.sweep_interval_ns()}) +
      // A look that finds the key just below the hit count drops it; the
      // key then crosses again within a sub-bucket, seen one drain later.
      2 * (k.heat_window_ns() / k.dynamic_replication_heat_window_sub_buckets) +
      k.heat_drain_interval_ns() + kNsPerSec;
  if (world.now_ns - mode_on_since_ns_ < bound) return absl::OkStatus();
  const int64_t hit_count = k.AdmissionHitCount();
  for (const auto& [key, last_ns] : last_heat_decision_ns_) {
    const ObjectName name = key.object();
    if (rm.replication().HeatCount(name, key.domain) < hit_count) continue;
    absl::StatusOr<ObjectView> object = rm.master().GetObjectView(name);
    if (!object.ok() || object->put_in_progress) continue;
    int64_t counted = 0;
    for (const ReplicaDescriptor& r : object->replicas) {
      if (r.kind != ReplicaKind::kMemory || r.status != ReplicaStatus::kComplete ||
          r.version != object->version) {
        continue;
      }
      if (!k.dynamic_replication_domain_aware ||
          NormalizeDomain(r.location->domain) == NormalizeDomain(key.domain)) {
        ++counted;
      }
    }
    if (counted >= k.dynamic_replication_max_memory_replicas) {
      at_cap_ns_[key] = world.now_ns;
      continue;
    }
    // The key needs a decision since it fell below its cap (a replica lost
    // with its worker, evicted or dropped) or since its last decision,
    // whichever is later; the fall is seen at the last check that found the
    // key at its cap, at most a check interval early.
    const auto at_cap = at_cap_ns_.find(key);
    const TimeNs since_ns =
        at_cap == at_cap_ns_.end() ? last_ns : std::max(last_ns, at_cap->second);
    if (world.now_ns - since_ns <= bound) continue;
    return Violate(world, "liveness.hot_key_reevaluated",
                   absl::StrCat(FormatName(name), " (requester domain '", key.domain,
                                "') is still hot with ", counted,
                                " readable replicas below the cap, but its last heat decision was ",
                                FormatTime(last_ns), " (bound ", bound / kNsPerMs, " ms)"));
  }
  return absl::OkStatus();
}

absl::Status SwarmChecker::AtEnd(const RunWorld& world) {
  if (absl::Status st = AfterEvent(world); !st.ok()) return st;
  if (world.master == nullptr) return absl::OkStatus();  // never: runs end with a master
  const ReplicatedMaster& rm = *world.master;
  const std::vector<PendingActionView> pending = rm.replication().PendingActions();
  for (const PendingActionView& p : pending) {
    if (p.phase == PendingPhase::kInFlight) {
      return Violate(world, "liveness.no_in_flight_lease",
                     absl::StrCat("lease ", p.lease.lease_id.value, " for ",
                                  FormatName(p.lease.name), " is still in flight at the end"));
    }
  }
  if (!pending.empty()) {
    const PendingActionView& p = pending.front();
    return Violate(world, "liveness.pending_actions_end",
                   absl::StrCat(pending.size(), " pending action(s) at the end, first lease ",
                                p.lease.lease_id.value, " for ", FormatName(p.lease.name),
                                " expiring at ", FormatTime(p.lease.expiration_ns)));
  }
  for (const SegmentView& s : rm.master().ListSegments()) {
    if (s.reserved_bytes != 0) {
      return Violate(world, "liveness.no_processing_replica",
                     absl::StrCat("segment ", s.location.name, " still reserves ", s.reserved_bytes,
                                  " bytes at the end"));
    }
  }
  for (const ObjectName& name : keys_) {
    absl::StatusOr<ObjectView> object = rm.master().GetObjectView(name);
    if (!object.ok()) continue;
    for (const ReplicaDescriptor& r : object->replicas) {
      if (r.status == ReplicaStatus::kProcessing) {
        return Violate(
            world, "liveness.no_processing_replica",
            absl::StrCat(FormatName(name), " replica ", r.replica_id.value, " on segment ",
                         r.segment_id.value, " is still PROCESSING at the end"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace heatsink::sim
