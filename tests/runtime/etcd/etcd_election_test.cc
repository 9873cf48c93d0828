// The etcd client and leader election against a real etcd (one member on
// loopback, tests/runtime/rpc/etcd_process.h): keys, the create-if-absent
// transaction, endpoints tried in turn, two candidates of which one leads and
// the other takes over when the first resigns or loses its lease, and the
// fence: a client that saw a newer leader's epoch refuses an older one's
// answer. Flag parsing of etcd addresses needs no server.
#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/env/manual_env.h"
#include "core/master/master_knobs.h"
#include "core/replication/replicated_master.h"
#include "core/replication/replication_knobs.h"
#include "gtest/gtest.h"
#include "runtime/env/runtime_env.h"
#include "runtime/env/steady_clock.h"
#include "runtime/etcd/etcd_client.h"
#include "runtime/etcd/leader_election.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/master_server.h"
#include "tests/runtime/rpc/etcd_process.h"

namespace heatsink::runtime {
namespace {

using test::EtcdProcess;
using test::FreePort;
using test::WaitFor;

class EtcdElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fs::temp_directory_path() / absl::StrCat("heatsink_etcd_", getpid());
    test::fs::create_directories(dir_);
  }
  void TearDown() override {
    etcd_.reset();
    test::fs::remove_all(dir_);
  }
  // Starts etcd; false (the test is then skipped or failed) when it cannot.
  bool StartEtcd() {
    etcd_ = std::make_unique<EtcdProcess>(dir_);
    EXPECT_TRUE(etcd_->ready()) << "etcd did not answer (" << etcd_->last_error() << "); see "
                               << (dir_ / "etcd.log");
    return etcd_->ready();
  }
  LeaderElectionOptions Candidate(const std::string& advertise) const {
    return LeaderElectionOptions{.leader_key = LeaderKey("/test"),
                                 .advertise = advertise,
                                 .lease_ttl_sec = 2,
                                 .lease_margin_ms = 500};
  }

  test::fs::path dir_;
  std::unique_ptr<EtcdProcess> etcd_;
  SteadyClock clock_;
};

TEST(EtcdTargetTest, ParsesBothFormsAndNamesWhatIsWrong) {
  absl::StatusOr<EtcdTarget> t = ParseEtcdTarget("etcd://127.0.0.1:2379,h2:2380/a/b");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->endpoints, (std::vector<std::string>{"127.0.0.1:2379", "h2:2380"}));
  EXPECT_EQ(t->prefix, "/a/b");
  t = ParseEtcdTarget("etcd://h:1");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->prefix, kDefaultEtcdPrefix);
  t = ParseEtcdTarget("h:1,h:2", /*scheme_optional=*/true);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->endpoints.size(), 2u);
  for (const char* bad : {"etcd://", "etcd:///p", "etcd://:2379", "etcd://h:0/p", "etcd://h:x",
                          "etcd://h:1,/p", "etcd://h:1/p/", "etcd://h:1//p", "h:1"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ParseEtcdTarget(bad).status())) << bad;
  }
  EXPECT_TRUE(IsEtcdAddress("etcd://h:1"));
  EXPECT_FALSE(IsEtcdAddress("h:1"));
}

TEST_F(EtcdElectionTest, KeysAndTheCreateTransactionOnTheEndpointThatAnswers) {
  HS_REQUIRE_ETCD();
  ASSERT_TRUE(StartEtcd());
  // The first endpoint refuses connections: every call goes on to the next.
  absl::StatusOr<std::unique_ptr<EtcdClient>> etcd = EtcdClient::Create(EtcdClientOptions{
      .endpoints = {absl::StrCat("127.0.0.1:", FreePort()), etcd_->endpoint()}});
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  EtcdClient& c = **etcd;
  absl::StatusOr<std::optional<EtcdKeyValue>> absent = c.Get("/k");
  ASSERT_TRUE(absent.ok()) << absent.status();
  EXPECT_FALSE(absent->has_value());
  absl::StatusOr<EtcdCreateResult> created = c.CreateIfAbsent("/k", "one", 0);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_TRUE(created->created);
  absl::StatusOr<EtcdCreateResult> again = c.CreateIfAbsent("/k", "two", 0);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  absl::StatusOr<std::optional<EtcdKeyValue>> kv = c.Get("/k");
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->value, "one");
  EXPECT_EQ((*kv)->create_revision, created->revision);
  ASSERT_TRUE(c.Put("/k", "three", 0).ok());
  kv = c.Get("/k");
  EXPECT_EQ((*kv)->value, "three");
  EXPECT_EQ((*kv)->create_revision, created->revision);  // a put keeps the create revision
  EXPECT_EQ(*c.Delete("/k"), 1);
  EXPECT_FALSE(c.Get("/k")->has_value());
  // A key on a lease goes with it.
  absl::StatusOr<EtcdLease> lease = c.GrantLease(5);
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(c.Put("/leased", "x", lease->id).ok());
  absl::StatusOr<int64_t> ttl = c.KeepAliveOnce(lease->id);
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(*ttl, lease->ttl_sec);
  ASSERT_TRUE(c.RevokeLease(lease->id).ok());
  EXPECT_FALSE(c.Get("/leased")->has_value());
  EXPECT_TRUE(absl::IsNotFound(c.KeepAliveOnce(lease->id).status()));
  EXPECT_TRUE(c.RevokeLease(lease->id).ok());  // already gone: still OK
  // Every endpoint down: UNAVAILABLE or DEADLINE_EXCEEDED, naming one.
  absl::StatusOr<std::unique_ptr<EtcdClient>> dead = EtcdClient::Create(
      EtcdClientOptions{.endpoints = {absl::StrCat("127.0.0.1:", FreePort())},
                        .call_timeout_ms = 300});
  absl::Status down = (*dead)->Get("/k").status();
  EXPECT_TRUE(absl::IsUnavailable(down) || absl::IsDeadlineExceeded(down)) << down;
  EXPECT_NE(down.message().find("etcd 127.0.0.1:"), absl::string_view::npos) << down;
}

TEST_F(EtcdElectionTest, OneCandidateLeadsAndTheOtherTakesOverWhenItResigns) {
  HS_REQUIRE_ETCD();
  ASSERT_TRUE(StartEtcd());
  LeaderElection a(&etcd_->client(), Candidate("a:1"), &clock_);
  LeaderElection b(&etcd_->client(), Candidate("b:1"), &clock_);
  absl::StatusOr<bool> won = a.TryCampaign();
  ASSERT_TRUE(won.ok()) << won.status();
  ASSERT_TRUE(*won);
  EXPECT_TRUE(a.Held());
  EXPECT_GT(a.epoch(), 0);
  std::string leader;
  won = b.TryCampaign(&leader);
  ASSERT_TRUE(won.ok());
  EXPECT_FALSE(*won);
  EXPECT_EQ(leader, "a:1");
  EXPECT_FALSE(b.Held());
  // a keeps its lease past several TTLs.
  std::atomic<bool> a_lost{false};
  a.KeepLeading([&](const absl::Status&) { a_lost = true; });
  absl::SleepFor(absl::Seconds(3));
  EXPECT_TRUE(a.Held());
  EXPECT_FALSE(a_lost.load());
  EXPECT_FALSE(*b.TryCampaign());
  // a resigns: its key goes at once and b leads with a larger epoch.
  ASSERT_TRUE(a.Resign().ok());
  EXPECT_FALSE(a.Held());
  won = b.TryCampaign(&leader);
  ASSERT_TRUE(won.ok());
  ASSERT_TRUE(*won);
  EXPECT_GT(b.epoch(), a.epoch());
  absl::StatusOr<std::optional<EtcdKeyValue>> kv = etcd_->client().Get(LeaderKey("/test"));
  ASSERT_TRUE(kv.ok() && kv->has_value());
  EXPECT_EQ((*kv)->value, "b:1");
  EXPECT_EQ((*kv)->create_revision, b.epoch());
  EXPECT_EQ((*kv)->lease, b.lease_id());
}

TEST_F(EtcdElectionTest, ALeaderWhoseLeaseIsRevokedStopsHoldingAndTheOtherLeads) {
  HS_REQUIRE_ETCD();
  ASSERT_TRUE(StartEtcd());
  LeaderElection a(&etcd_->client(), Candidate("a:1"), &clock_);
  LeaderElection b(&etcd_->client(), Candidate("b:1"), &clock_);
  ASSERT_TRUE(*a.TryCampaign());
  std::atomic<bool> lost{false};
  a.KeepLeading([&](const absl::Status&) { lost = true; });
  // Somebody else revokes a's lease (an operator, or etcd expiring it).
  ASSERT_TRUE(etcd_->client().RevokeLease(a.lease_id()).ok());
  // The next keep-alive (TTL/3) learns it; the watchdog reports it.
  ASSERT_TRUE(WaitFor([&] { return lost.load(); }, absl::Seconds(10)));
  EXPECT_FALSE(a.Held());
  ASSERT_TRUE(WaitFor([&] { return *b.TryCampaign(); }, absl::Seconds(5)));
  EXPECT_GT(b.epoch(), a.epoch());
}

// A master answering under a fenced election: ReplicatedMaster and server in
// this process.
struct InProcessMaster {
  InProcessMaster(Env* env, const LeaderElection* leadership) {
    master = *ReplicatedMaster::Create(env, MasterKnobs(), ReplicationKnobs(), nullptr);
    server = *MasterServer::Start(master.get(), "127.0.0.1:0", RpcOptions{}, TenantBindings(),
                                  leadership);
  }
  std::unique_ptr<ReplicatedMaster> master;
  std::unique_ptr<MasterServer> server;
};

// The fence: a client that has seen epoch b refuses an answer of epoch a < b,
// even from a master that still believes it leads. Leader a's clock is
// frozen (ManualClock), so its own check never fails: only the client's
// fence stands between a deposed leader and its callers.
TEST_F(EtcdElectionTest, AClientRefusesAnAnswerFromAnOlderEpochThanOneItSaw) {
  HS_REQUIRE_ETCD();
  ASSERT_TRUE(StartEtcd());
  RuntimeEnv env(RuntimeEnvOptions{.executor = {.threads = 2}, .seed = 1});
  ManualClock frozen(1);
  LeaderElection a(&etcd_->client(), Candidate("a"), &frozen);
  ASSERT_TRUE(*a.TryCampaign());
  InProcessMaster master_a(env.env(), &a);
  ASSERT_TRUE(etcd_->client().Put(LeaderKey("/test"), master_a.server->address(), a.lease_id()).ok());

  RpcOptions rpc;
  rpc.call_timeout_ms = 2000;
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> client =
      GrpcMasterClient::Connect(env.env()->clock, etcd_->Url("/test"), rpc);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_EQ((*client)->master_address(), master_a.server->address());
  ASSERT_TRUE((*client)->Ping().ok());
  EXPECT_EQ((*client)->leader_epoch_seen(), a.epoch());

  // a's lease goes; b leads, and the client follows it.
  ASSERT_TRUE(etcd_->client().RevokeLease(a.lease_id()).ok());
  LeaderElection b(&etcd_->client(), Candidate("b"), &clock_);
  ASSERT_TRUE(*b.TryCampaign());
  InProcessMaster master_b(env.env(), &b);
  ASSERT_TRUE(etcd_->client().Put(LeaderKey("/test"), master_b.server->address(), b.lease_id()).ok());
  ASSERT_TRUE(WaitFor([&] { return (*client)->master_address() == master_b.server->address(); }));
  ASSERT_TRUE((*client)->Ping().ok());
  EXPECT_EQ((*client)->leader_epoch_seen(), b.epoch());

  // The key is pointed back at a (same create revision, so the client
  // follows): a still answers, but with its older epoch, and the client
  // refuses every such answer.
  ASSERT_TRUE(etcd_->client().Put(LeaderKey("/test"), master_a.server->address(), 0).ok());
  ASSERT_TRUE(WaitFor([&] { return (*client)->master_address() == master_a.server->address(); }));
  absl::Status stale = (*client)->Ping();
  EXPECT_TRUE(absl::IsUnavailable(stale)) << stale;
  EXPECT_NE(stale.message().find("stale_leader"), absl::string_view::npos) << stale;
  absl::StatusOr<std::vector<SegmentView>> listed = (*client)->ListSegments();
  EXPECT_TRUE(absl::IsUnavailable(listed.status())) << listed.status();
  EXPECT_EQ((*client)->leader_epoch_seen(), b.epoch());
  // Without the fence the same call is answered: a fresh client, which has
  // seen no newer epoch, gets a's answer.
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> direct =
      GrpcMasterClient::Connect(env.env()->clock, master_a.server->address(), rpc);
  EXPECT_TRUE((*direct)->Ping().ok());
  client->reset();
  direct->reset();
  master_a.server->Shutdown(absl::ZeroDuration());
  master_b.server->Shutdown(absl::ZeroDuration());
  env.Shutdown();
}

// A leader whose lease is no longer held refuses every call at once, with
// UNAVAILABLE not_leader, whatever its threads have noticed.
TEST_F(EtcdElectionTest, AMasterPastItsLeaseRefusesEveryCall) {
  HS_REQUIRE_ETCD();
  ASSERT_TRUE(StartEtcd());
  RuntimeEnv env(RuntimeEnvOptions{.executor = {.threads = 2}, .seed = 1});
  ManualClock clock(1);
  LeaderElection a(&etcd_->client(), Candidate("a"), &clock);
  ASSERT_TRUE(*a.TryCampaign());
  InProcessMaster master(env.env(), &a);
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> client =
      GrpcMasterClient::Connect(env.env()->clock, master.server->address(), RpcOptions{});
  ASSERT_TRUE((*client)->Ping().ok());
  // Past TTL - margin on a's clock (as after SIGSTOP), nothing else changed.
  clock.AdvanceBy(absl::ToInt64Nanoseconds(absl::Milliseconds(1500)));
  EXPECT_FALSE(a.Held());
  absl::Status refused = (*client)->Ping();
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_NE(refused.message().find("not_leader"), absl::string_view::npos) << refused;
  PutStartRequest put;
  put.name = ObjectName{"", "k"};
  put.size_bytes = 10;
  std::optional<absl::StatusOr<PutStartResponse>> started;
  (*client)->PutStart(ClientId(5), put,
                      [&](absl::StatusOr<PutStartResponse> r) { started = std::move(r); });
  ASSERT_TRUE(WaitFor([&] { return started.has_value(); }));
  EXPECT_TRUE(absl::IsUnavailable(started->status())) << started->status();
  client->reset();
  master.server->Shutdown(absl::ZeroDuration());
  env.Shutdown();
}

}  // namespace
}  // namespace heatsink::runtime
