// File: core/replication/dynamic_lease_table.h
//
// The dynamic actions a master has granted and not yet finished, and the
// proposals they answer. An action is keyed by (object, target domain): at
// most one per key, found also by its lease id. A proposal's entry keeps the
// proposal and the lease it got, so that a repeat of the same proposal gets
// the same lease while that lease lives (idempotency); entries die with
// their lease's expiration (ReclaimProposals).
//
// What is not here: the rules. Whether an action may be granted, when it
// expires, what its end or failure does to cooldowns, heat shares and timers
// is DynamicReplication's; this table only keeps the entries consistent
// (every action is found by its key and by its lease id, and by nothing
// else).
//
// Thread safety: none; DynamicReplication holds it under its state lock.
// Determinism: ordered containers only; iteration is in key order.
#ifndef HEATSINK_CORE_REPLICATION_DYNAMIC_LEASE_TABLE_H_
#define HEATSINK_CORE_REPLICATION_DYNAMIC_LEASE_TABLE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "core/env/executor.h"
#include "core/env/time.h"
#include "core/model/ids.h"
#include "core/replication/replica_action.h"

namespace heatsink {

// Where a pending dynamic action is in its lifecycle.
enum class PendingPhase {
  kGranted,   // lease granted, task queued, CopyStart not yet accepted
  kInFlight,  // CopyStart accepted: target quota reserved, transfer running
};

class DynamicLeaseTable {
 public:
  struct Key {
    ObjectName name;
    Domain domain;  // normalised target domain when domain-aware, else ""
    friend auto operator<=>(const Key&, const Key&) = default;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct Action {
    ReplicaActionLease lease;
    PendingPhase phase = PendingPhase::kGranted;
    ReplicaId target_replica;  // valid once in flight
    bool cross_domain = false;
    TimerId expiry_timer = kNoTimer;
  };
  struct ProposalEntry {
    ReplicaActionProposal proposal;
    ReplicaActionLease lease;
  };

  // --- Actions ----------------------------------------------------------------
  int64_t size() const { return static_cast<int64_t>(actions_.size()); }
  const std::map<Key, Action>& actions() const { return actions_; }
  const Action* Find(const Key& key) const;
  Action* Find(const Key& key);
  const Action* FindByLease(LeaseId lease_id) const;
  Action* FindByLease(LeaseId lease_id);
  // The first action of `name` in key order (any target domain), if any.
  const std::pair<const Key, Action>* FirstOf(const ObjectName& name) const;
  // REQUIRES: no action under `key` or with its lease id (HS_CHECK).
  void Insert(const Key& key, Action action);
  // Removes the action of `lease_id` and returns it with its key.
  std::optional<std::pair<Key, Action>> Take(LeaseId lease_id);

  // --- Proposals ----------------------------------------------------------------
  int64_t proposal_count() const { return static_cast<int64_t>(proposals_.size()); }
  const ProposalEntry* FindProposal(ProposalId id) const;
  // Keeps (or replaces) the proposal's entry until its lease expires.
  void AddProposal(const ReplicaActionProposal& proposal, const ReplicaActionLease& lease);
  // Drops the entries whose lease expired at or before `now`.
  void ReclaimProposals(TimeNs now);

  // Every action found by its lease id and every lease id by its action.
  bool IndexConsistent() const;

 private:
  std::map<Key, Action> actions_;
  std::map<LeaseId, Key> by_lease_;
  std::map<ProposalId, ProposalEntry> proposals_;
  // (lease expiration, proposal id).
  std::set<std::pair<TimeNs, ProposalId>> proposals_by_expiry_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_DYNAMIC_LEASE_TABLE_H_
