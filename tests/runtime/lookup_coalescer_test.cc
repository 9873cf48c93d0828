#include "runtime/client/lookup_coalescer.h"

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "gtest/gtest.h"

namespace heatsink::runtime {
namespace {

// A master whose read calls wait until the test answers them: each answer is
// the key's length as the version, NOT_FOUND for keys starting with "missing".
class HeldMaster final : public MasterClient {
 public:
  struct Call {
    std::vector<ObjectName> names;
    ClientId requester;
    Domain domain;
    bool batch = false;
    Callback<GetReplicaListResponse> single;
    Callback<BatchGetReplicaListResponse> batched;
  };

  void GetReplicaList(const GetReplicaListRequest& req,
                      Callback<GetReplicaListResponse> done) override {
    calls.push_back(
        Call{{req.name}, req.requester, req.requester_domain, false, std::move(done), {}});
  }
  void BatchGetReplicaList(const BatchGetReplicaListRequest& req,
                           Callback<BatchGetReplicaListResponse> done) override {
    calls.push_back(
        Call{req.names, req.requester, req.requester_domain, true, {}, std::move(done)});
  }

  static absl::StatusOr<GetReplicaListResponse> AnswerFor(const ObjectName& name) {
    if (name.key.rfind("missing", 0) == 0) return absl::NotFoundError(name.key);
    GetReplicaListResponse r;
    r.version = name.key.size();
    return r;
  }

  // Answers the oldest held call (all its names), or fails it as a whole.
  void AnswerOldest(absl::Status whole = absl::OkStatus()) {
    HS_CHECK(!calls.empty());
    Call call = std::move(calls.front());
    calls.pop_front();
    if (!call.batch) {
      std::move(call.single)(whole.ok() ? AnswerFor(call.names[0])
                                        : absl::StatusOr<GetReplicaListResponse>(whole));
      return;
    }
    if (!whole.ok()) {
      std::move(call.batched)(whole);
      return;
    }
    BatchGetReplicaListResponse r;
    for (const ObjectName& name : call.names) r.results.push_back(AnswerFor(name));
    std::move(call.batched)(std::move(r));
  }

  std::deque<Call> calls;

  // Not used by the coalescer.
  void RegisterClient(const RegisterClientRequest&, StatusCallback) override { HS_CHECK(false); }
  void Heartbeat(ClientId, StatusCallback) override { HS_CHECK(false); }
  void MountSegment(ClientId, const MountSegmentRequest&, StatusCallback) override {
    HS_CHECK(false);
  }
  void UnmountSegment(ClientId, SegmentId, StatusCallback) override { HS_CHECK(false); }
  void ReportManifest(ClientId, const ReportManifestRequest&,
                      Callback<ReportManifestResponse>) override {
    HS_CHECK(false);
  }
  void PutStart(ClientId, const PutStartRequest&, Callback<PutStartResponse>) override {
    HS_CHECK(false);
  }
  void PutEnd(ClientId, const PutEndRequest&, StatusCallback) override { HS_CHECK(false); }
  void PutRevoke(ClientId, const PutRevokeRequest&, StatusCallback) override { HS_CHECK(false); }
  void BatchPutStart(ClientId, const BatchPutStartRequest&,
                     Callback<BatchPutStartResponse>) override {
    HS_CHECK(false);
  }
  void BatchPutEnd(ClientId, const BatchPutEndRequest&, Callback<BatchPutResponse>) override {
    HS_CHECK(false);
  }
  void BatchPutRevoke(ClientId, const BatchPutRevokeRequest&, Callback<BatchPutResponse>) override {
    HS_CHECK(false);
  }
  void Remove(const RemoveRequest&, StatusCallback) override { HS_CHECK(false); }
  void FetchTasks(ClientId, size_t, uint64_t, Callback<FetchTasksResponse>) override {
    HS_CHECK(false);
  }
  void MarkTaskComplete(ClientId, const MarkTaskCompleteRequest&, StatusCallback) override {
    HS_CHECK(false);
  }
  void CopyStart(ClientId, const CopyStartRequest&, Callback<CopyStartResponse>) override {
    HS_CHECK(false);
  }
  void CopyEnd(ClientId, const CopyEndRequest&, StatusCallback) override { HS_CHECK(false); }
  void CopyRevoke(ClientId, const CopyRevokeRequest&, StatusCallback) override { HS_CHECK(false); }
  void DynamicReplicaCopyStart(ClientId, const CopyStartRequest&,
                               Callback<CopyStartResponse>) override {
    HS_CHECK(false);
  }
  void DynamicReplicaCopyEnd(ClientId, const CopyEndRequest&, StatusCallback) override {
    HS_CHECK(false);
  }
  void DynamicReplicaCopyRevoke(ClientId, const CopyRevokeRequest&, StatusCallback) override {
    HS_CHECK(false);
  }
};

class LookupCoalescerTest : public testing::Test {
 protected:
  void Make(size_t in_flight, size_t keys_max) {
    coalescer_.emplace(&master_, LookupCoalescerOptions{.requester = ClientId(7),
                                                        .domain = "b",
                                                        .batches_in_flight_max = in_flight,
                                                        .keys_max = keys_max});
  }
  // Issues a lookup of `key`; its answer lands in answers_[key].
  void Lookup(const std::string& key) {
    coalescer_->Lookup(ObjectName{"t", key}, [this, key](absl::StatusOr<GetReplicaListResponse> r) {
      EXPECT_FALSE(answers_.contains(key)) << key << " answered twice";
      answers_.emplace(key, std::move(r));
    });
  }

  HeldMaster master_;
  std::optional<LookupCoalescer> coalescer_;
  std::map<std::string, absl::StatusOr<GetReplicaListResponse>> answers_;
};

TEST_F(LookupCoalescerTest, ALoneLookupGoesOutAtOnceAsOneGetReplicaList) {
  Make(1, 128);
  Lookup("abc");
  ASSERT_EQ(master_.calls.size(), 1u);
  EXPECT_FALSE(master_.calls[0].batch);
  EXPECT_EQ(master_.calls[0].names[0], (ObjectName{"t", "abc"}));
  EXPECT_EQ(master_.calls[0].requester, ClientId(7));
  EXPECT_EQ(master_.calls[0].domain, "b");
  master_.AnswerOldest();
  ASSERT_TRUE(answers_.at("abc").ok());
  EXPECT_EQ(answers_.at("abc")->version, 3u);
  EXPECT_TRUE(master_.calls.empty());
  // The slot is free again: the next lookup goes out at once too.
  Lookup("de");
  ASSERT_EQ(master_.calls.size(), 1u);
  EXPECT_FALSE(master_.calls[0].batch);
}

TEST_F(LookupCoalescerTest, LookupsThatWaitGoOutTogetherInOrderWhenTheCallAheadReturns) {
  Make(1, 128);
  Lookup("first");
  Lookup("a");
  Lookup("missing-b");
  Lookup("cc");
  // One call out; three wait.
  ASSERT_EQ(master_.calls.size(), 1u);
  EXPECT_TRUE(answers_.empty());
  master_.AnswerOldest();
  // The answer to "first" arrived and the three went out as one batch, in
  // the order they were issued.
  EXPECT_TRUE(answers_.contains("first"));
  ASSERT_EQ(master_.calls.size(), 1u);
  ASSERT_TRUE(master_.calls[0].batch);
  EXPECT_EQ(master_.calls[0].names,
            (std::vector<ObjectName>{{"t", "a"}, {"t", "missing-b"}, {"t", "cc"}}));
  master_.AnswerOldest();
  // Each lookup gets its own key's result, a per-key error included.
  ASSERT_EQ(answers_.size(), 4u);
  EXPECT_EQ(answers_.at("a")->version, 1u);
  EXPECT_EQ(answers_.at("cc")->version, 2u);
  EXPECT_EQ(answers_.at("missing-b").status().code(), absl::StatusCode::kNotFound);
  const LookupCoalescerStats s = coalescer_->stats();
  EXPECT_EQ(s.lookups, 4u);
  EXPECT_EQ(s.single_calls, 1u);
  EXPECT_EQ(s.batch_calls, 1u);
  EXPECT_EQ(s.batched_lookups, 3u);
}

TEST_F(LookupCoalescerTest, BatchesHoldAtMostKeysMaxNames) {
  Make(1, 2);
  Lookup("first");
  for (int i = 0; i < 5; ++i) Lookup(absl::StrCat("k", i));
  std::vector<size_t> sizes;
  while (!master_.calls.empty()) {
    master_.AnswerOldest();
    if (!master_.calls.empty()) sizes.push_back(master_.calls.front().names.size());
  }
  EXPECT_EQ(sizes, (std::vector<size_t>{2, 2, 1}));
  EXPECT_EQ(answers_.size(), 6u);
}

TEST_F(LookupCoalescerTest, TwoCallsInFlightBeforeAnyLookupWaits) {
  Make(2, 128);
  Lookup("a");
  Lookup("b");
  Lookup("c");
  ASSERT_EQ(master_.calls.size(), 2u);
  EXPECT_FALSE(master_.calls[0].batch);
  EXPECT_FALSE(master_.calls[1].batch);
  master_.AnswerOldest();
  // "c" waited alone: it goes out as a single call.
  ASSERT_EQ(master_.calls.size(), 2u);
  EXPECT_FALSE(master_.calls[1].batch);
  EXPECT_EQ(master_.calls[1].names[0].key, "c");
  master_.AnswerOldest();
  master_.AnswerOldest();
  EXPECT_EQ(answers_.size(), 3u);
}

TEST_F(LookupCoalescerTest, ABatchThatFailsAsAWholeFailsEveryLookupItCarried) {
  Make(1, 128);
  Lookup("first");
  Lookup("a");
  Lookup("b");
  master_.AnswerOldest();
  master_.AnswerOldest(absl::UnavailableError("master gone"));
  EXPECT_TRUE(answers_.at("first").ok());
  EXPECT_EQ(answers_.at("a").status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(answers_.at("b").status().code(), absl::StatusCode::kUnavailable);
  // The slot is free after a failure too.
  Lookup("again");
  EXPECT_EQ(master_.calls.size(), 1u);
}

TEST(LookupCoalescerOptions, RejectsZeroLimitsAndNoRequester) {
  EXPECT_TRUE(LookupCoalescerOptions{.requester = ClientId(1)}.Validate().ok());
  EXPECT_EQ(LookupCoalescerOptions{}.Validate().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((LookupCoalescerOptions{.requester = ClientId(1), .batches_in_flight_max = 0})
                .Validate()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((LookupCoalescerOptions{.requester = ClientId(1), .keys_max = 0}).Validate().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace heatsink::runtime
