#include "core/replication/dynamic_lease_table.h"

#include <utility>

#include "core/base/check.h"

namespace heatsink {

const DynamicLeaseTable::Action* DynamicLeaseTable::Find(const Key& key) const {
  const auto it = actions_.find(key);
  return it == actions_.end() ? nullptr : &it->second;
}

DynamicLeaseTable::Action* DynamicLeaseTable::Find(const Key& key) {
  const auto it = actions_.find(key);
  return it == actions_.end() ? nullptr : &it->second;
}

const DynamicLeaseTable::Action* DynamicLeaseTable::FindByLease(LeaseId lease_id) const {
  const auto idx = by_lease_.find(lease_id);
  if (idx == by_lease_.end()) return nullptr;
  return &actions_.at(idx->second);
}

DynamicLeaseTable::Action* DynamicLeaseTable::FindByLease(LeaseId lease_id) {
  const auto idx = by_lease_.find(lease_id);
  if (idx == by_lease_.end()) return nullptr;
  return &actions_.at(idx->second);
}

const std::pair<const DynamicLeaseTable::Key, DynamicLeaseTable::Action>*
DynamicLeaseTable::FirstOf(const ObjectName& name) const {
  const auto it = actions_.lower_bound(Key{name, Domain()});
  if (it == actions_.end() || it->first.name != name) return nullptr;
  return &*it;
}

void DynamicLeaseTable::Insert(const Key& key, Action action) {
  const LeaseId lease_id = action.lease.lease_id;
  HS_CHECK_MSG(by_lease_.emplace(lease_id, key).second, "lease id already in the table");
  HS_CHECK_MSG(actions_.emplace(key, std::move(action)).second,
               "an action for this object and domain is already in the table");
}

std::optional<std::pair<DynamicLeaseTable::Key, DynamicLeaseTable::Action>> DynamicLeaseTable::Take(
    LeaseId lease_id) {
  const auto idx = by_lease_.find(lease_id);
  if (idx == by_lease_.end()) return std::nullopt;
  const auto it = actions_.find(idx->second);
  HS_CHECK(it != actions_.end());
  std::pair<Key, Action> taken{it->first, std::move(it->second)};
  actions_.erase(it);
  by_lease_.erase(idx);
  return taken;
}

const DynamicLeaseTable::ProposalEntry* DynamicLeaseTable::FindProposal(ProposalId id) const {
  const auto it = proposals_.find(id);
  return it == proposals_.end() ? nullptr : &it->second;
}

void DynamicLeaseTable::AddProposal(const ReplicaActionProposal& proposal,
                                    const ReplicaActionLease& lease) {
  proposals_[lease.proposal_id] = ProposalEntry{proposal, lease};
  proposals_by_expiry_.emplace(lease.expiration_ns, lease.proposal_id);
}

void DynamicLeaseTable::ReclaimProposals(TimeNs now) {
  while (!proposals_by_expiry_.empty() && IsExpired(now, proposals_by_expiry_.begin()->first)) {
    const auto [expiry, id] = *proposals_by_expiry_.begin();
    proposals_by_expiry_.erase(proposals_by_expiry_.begin());
    // A later lease of the same proposal id keeps its entry.
    const auto it = proposals_.find(id);
    if (it != proposals_.end() && it->second.lease.expiration_ns == expiry) proposals_.erase(it);
  }
}

bool DynamicLeaseTable::IndexConsistent() const {
  if (actions_.size() != by_lease_.size()) return false;
  for (const auto& [lease, key] : by_lease_) {
    const auto it = actions_.find(key);
    if (it == actions_.end() || it->second.lease.lease_id != lease) return false;
  }
  return true;
}

}  // namespace heatsink
