// Covers ReplicatedMaster's hook for a driver (SetCallObserver): the
// observer sees every key read and replica removal, and dynamic replication
// still sees them too; each DynamicReplicaCopyEnd before it runs (the lease
// still pending) and after (its result); each ReportManifest after it ran,
// with its result. Without an observer, dynamic replication observes alone.
#include "core/replication/replicated_master.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/core/replication/replication_test_util.h"

namespace heatsink {
namespace {

using testing::ReplicationHarness;

class LogObserver final : public MasterCallObserver {
 public:
  explicit LogObserver(ReplicatedMaster* master) : master_(master) {}

  void OnKeyRead(const ReadObservation& read) override {
    log.push_back(absl::StrCat("read ", read.key));
  }
  void OnReplicaRemoved(const ReplicaRemoval& removal) override {
    log.push_back(absl::StrCat("removed ", removal.name.key));
  }
  void BeforeDynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req) override {
    bool pending = false;
    for (const PendingActionView& p : master_->replication().PendingActions()) {
      pending = pending || p.lease.lease_id == req.lease_id;
    }
    log.push_back(absl::StrCat("before copy end ", client.value, pending ? " pending" : ""));
  }
  void AfterDynamicReplicaCopyEnd(ClientId client, const CopyEndRequest& req,
                                  const absl::Status& result) override {
    bool pending = false;
    for (const PendingActionView& p : master_->replication().PendingActions()) {
      pending = pending || p.lease.lease_id == req.lease_id;
    }
    log.push_back(absl::StrCat("after copy end ", client.value, " ",
                               absl::StatusCodeToString(result.code()), pending ? " pending" : ""));
  }
  void AfterReportManifest(ClientId client, const ReportManifestRequest& /*req*/,
                           const absl::StatusOr<ReportManifestResponse>& result) override {
    log.push_back(absl::StrCat("report ", client.value, " ",
                               absl::StatusCodeToString(result.status().code())));
  }

  std::vector<std::string> log;

 private:
  ReplicatedMaster* const master_;
};

TEST(ReplicatedMasterCallObserver, SeesReadsCopyEndsAndReportsBesideDynamicReplication) {
  ReplicationHarness h;
  HS_ASSERT_OK(h.AddTwoStores());
  HS_ASSERT_OK(h.Put("k", 4096, {SegmentId(1)}));
  LogObserver observer(&h.rm());
  h.rm().SetCallObserver(&observer);

  // Reads reach the observer and still count in the heat window.
  const int64_t hits = h.dr().knobs().AdmissionHitCount();
  h.MakeHot("k");
  ASSERT_EQ(observer.log.size(), static_cast<size_t>(hits));
  for (const std::string& line : observer.log) EXPECT_EQ(line, "read k");
  EXPECT_EQ(h.dr().HeatCount(ObjectName{"", "k"}), hits);
  ASSERT_EQ(h.dr().PendingActions().size(), 1u);

  // The copy's end: before it the lease is pending, after it it is not.
  observer.log.clear();
  HS_ASSERT_OK(h.RunDynamicCopy(1));
  EXPECT_EQ(observer.log,
            (std::vector<std::string>{"before copy end 1 pending", "after copy end 1 OK"}));

  // A report from a client the master does not know: the observer sees the
  // call's own result.
  observer.log.clear();
  absl::StatusOr<ReportManifestResponse> report =
      h.rm().ReportManifest(ClientId(77), ReportManifestRequest{});
  EXPECT_EQ(report.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(observer.log, (std::vector<std::string>{"report 77 NOT_FOUND"}));

  // A removal: one per replica, the original and the dynamic copy.
  observer.log.clear();
  h.env().AdvanceBy(SecToNs(120));  // past the read lease
  HS_ASSERT_OK(h.rm().Remove(RemoveRequest{ObjectName{"", "k"}}));
  EXPECT_EQ(observer.log, (std::vector<std::string>{"removed k", "removed k"}));
  EXPECT_TRUE(h.dr().DynamicReplicas().empty());  // dynamic replication saw it too

  // Without the observer, dynamic replication observes alone.
  h.rm().SetCallObserver(nullptr);
  observer.log.clear();
  HS_ASSERT_OK(h.Put("j", 4096, {SegmentId(1)}));
  h.ReadTimes("j", 2);
  h.Settle();
  EXPECT_TRUE(observer.log.empty());
  EXPECT_EQ(h.dr().HeatCount(ObjectName{"", "j"}), 2);
}

}  // namespace
}  // namespace heatsink
