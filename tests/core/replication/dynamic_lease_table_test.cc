// Covers DynamicLeaseTable: an action is found by its (object, domain) key
// and by its lease id until it is taken, and by neither after; an object's
// first action in key order; a second action under a taken key or lease id
// is refused by a check; proposal entries live until their lease expires
// and a later lease of the same proposal keeps its entry.
#include "core/replication/dynamic_lease_table.h"

#include "gtest/gtest.h"

namespace heatsink {
namespace {

DynamicLeaseTable::Action ActionOf(uint64_t lease_id, const ObjectName& name,
                                   TimeNs expiration_ns = 100) {
  DynamicLeaseTable::Action a;
  a.lease.lease_id = LeaseId(lease_id);
  a.lease.name = name;
  a.lease.expiration_ns = expiration_ns;
  return a;
}

TEST(DynamicLeaseTable, AnActionIsFoundByKeyAndLeaseUntilTaken) {
  DynamicLeaseTable t;
  const ObjectName k{"t", "k"};
  t.Insert({k, "b"}, ActionOf(7, k));
  t.Insert({k, "a"}, ActionOf(8, k));
  t.Insert({ObjectName{"t", "other"}, ""}, ActionOf(9, ObjectName{"t", "other"}));
  EXPECT_EQ(t.size(), 3);
  ASSERT_NE(t.Find({k, "b"}), nullptr);
  EXPECT_EQ(t.Find({k, "b"})->lease.lease_id, LeaseId(7));
  ASSERT_NE(t.FindByLease(LeaseId(8)), nullptr);
  EXPECT_EQ(t.FindByLease(LeaseId(8))->lease.lease_id, LeaseId(8));
  EXPECT_EQ(t.Find({k, "c"}), nullptr);
  EXPECT_EQ(t.FindByLease(LeaseId(10)), nullptr);
  // The object's actions sort together, by domain.
  ASSERT_NE(t.FirstOf(k), nullptr);
  EXPECT_EQ(t.FirstOf(k)->first.domain, "a");
  EXPECT_EQ(t.FirstOf(ObjectName{"t", "none"}), nullptr);
  // A change through one handle is seen through the other.
  t.FindByLease(LeaseId(7))->phase = PendingPhase::kInFlight;
  EXPECT_EQ(t.Find({k, "b"})->phase, PendingPhase::kInFlight);
  EXPECT_TRUE(t.IndexConsistent());

  auto taken = t.Take(LeaseId(8));
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->first.domain, "a");
  EXPECT_EQ(taken->second.lease.lease_id, LeaseId(8));
  EXPECT_EQ(t.Find({k, "a"}), nullptr);
  EXPECT_EQ(t.FindByLease(LeaseId(8)), nullptr);
  EXPECT_FALSE(t.Take(LeaseId(8)).has_value());
  EXPECT_EQ(t.FirstOf(k)->first.domain, "b");
  EXPECT_EQ(t.size(), 2);
  EXPECT_TRUE(t.IndexConsistent());
  // The key is free again, under a new lease.
  t.Insert({k, "a"}, ActionOf(11, k));
  EXPECT_EQ(t.Find({k, "a"})->lease.lease_id, LeaseId(11));
}

TEST(DynamicLeaseTableDeathTest, ASecondActionUnderAKeyOrLeaseIsRefused) {
  DynamicLeaseTable t;
  const ObjectName k{"t", "k"};
  t.Insert({k, ""}, ActionOf(1, k));
  EXPECT_DEATH(t.Insert({k, ""}, ActionOf(2, k)), "already in the table");
  EXPECT_DEATH(t.Insert({k, "x"}, ActionOf(1, k)), "lease id already in the table");
}

TEST(DynamicLeaseTable, ProposalEntriesLiveUntilTheirLeaseExpires) {
  DynamicLeaseTable t;
  ReplicaActionProposal p;
  p.proposal_id = ProposalId(5);
  p.name = ObjectName{"t", "k"};
  ReplicaActionLease lease;
  lease.proposal_id = ProposalId(5);
  lease.lease_id = LeaseId(1);
  lease.expiration_ns = 100;
  t.AddProposal(p, lease);
  ReplicaActionProposal q = p;
  q.proposal_id = ProposalId(6);
  ReplicaActionLease other = lease;
  other.proposal_id = ProposalId(6);
  other.lease_id = LeaseId(2);
  other.expiration_ns = 300;
  t.AddProposal(q, other);
  EXPECT_EQ(t.proposal_count(), 2);
  t.ReclaimProposals(99);
  ASSERT_NE(t.FindProposal(ProposalId(5)), nullptr);
  EXPECT_EQ(t.FindProposal(ProposalId(5))->lease.lease_id, LeaseId(1));
  t.ReclaimProposals(100);  // expired at its expiration
  EXPECT_EQ(t.FindProposal(ProposalId(5)), nullptr);
  EXPECT_NE(t.FindProposal(ProposalId(6)), nullptr);
  EXPECT_EQ(t.proposal_count(), 1);

  // A later lease for the same proposal id outlives the first one's expiry.
  ReplicaActionLease again = lease;
  again.lease_id = LeaseId(3);
  again.expiration_ns = 150;
  t.AddProposal(p, lease);
  t.AddProposal(p, again);
  t.ReclaimProposals(120);
  ASSERT_NE(t.FindProposal(ProposalId(5)), nullptr);
  EXPECT_EQ(t.FindProposal(ProposalId(5))->lease.lease_id, LeaseId(3));
  t.ReclaimProposals(400);
  EXPECT_EQ(t.proposal_count(), 0);
}

}  // namespace
}  // namespace heatsink
