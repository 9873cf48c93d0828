// Covers the UCX data plane between two in-process stores over UCX's TCP
// transport on loopback (UCX_TLS=tcp,self UCX_NET_DEVICES=lo, set here before
// any context exists unless the environment already chose): copies land
// byte-exact (checksums), including objects split into many puts and many
// concurrent copies; bad ranges are OUT_OF_RANGE and unknown segments
// NOT_FOUND; a target torn down after granting a write fails the copy with
// UNAVAILABLE; a restarted target is reached again; Shutdown fails blocked
// copies; a paced copy (a foreground tracker shared with its store's data
// server) waits piece by piece for foreground reads (held until the read
// ends, its tracker on a clock only the test moves), bounded per piece (on
// the steady clock, with real pacing). Also the transport factory:
// MakeDataPlane for "tcp" and "ucx", and an unknown name rejected.
#include "runtime/transport/ucx_data_mover.h"

#include <stdlib.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/env/manual_env.h"
#include "gtest/gtest.h"
#include "runtime/env/notification.h"
#include "runtime/env/steady_clock.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/data_plane.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/foreground_traffic.h"
#include "runtime/transport/tcp_data_server.h"
#include "tests/runtime/transport_test_util.h"

namespace heatsink::runtime {
namespace {

using ::heatsink::runtime::testing::Checksum;
using ::heatsink::runtime::testing::CopyAndWait;
using ::heatsink::runtime::testing::CopyResult;
using ::heatsink::runtime::testing::FakePeer;
using ::heatsink::runtime::testing::FillSegment;

constexpr SegmentId kSource(11);
constexpr SegmentId kTarget(22);
constexpr uint64_t kSegmentBytes = 8 << 20;

// Loopback must be named for UCX's TCP transport, and shared-memory
// transports may need capabilities a container lacks. Both are per-context
// options, read by ucp_config_read, so setting them here is early enough.
// (Sanitizer runs need more; see runtime/transport/ucx_worker.h.)
class UcxLoopbackEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("UCX_TLS", "tcp,self", /*overwrite=*/0);
    setenv("UCX_NET_DEVICES", "lo", 0);
  }
};
const auto* const kUcxEnvironment =
    ::testing::AddGlobalTestEnvironment(new UcxLoopbackEnvironment);

// One store: its segments, its UCX mover and its data server.
struct UcxStore {
  explicit UcxStore(EndpointResolver* resolver, const UcxMoverOptions& options,
                    RmaGrantProvider* grant_override = nullptr) {
    absl::StatusOr<std::unique_ptr<UcxDataMover>> created =
        UcxDataMover::Create(&clock, &memory, resolver, options);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return;
    mover = *std::move(created);
    absl::StatusOr<std::unique_ptr<TcpDataServer>> started = TcpDataServer::Start(
        &clock, &memory, options.tcp, grant_override != nullptr ? grant_override : mover.get());
    EXPECT_TRUE(started.ok()) << started.status();
    if (started.ok()) server = *std::move(started);
  }
  ~UcxStore() { TearDown(); }
  void TearDown() {
    if (server != nullptr) server->Shutdown();
    if (mover != nullptr) mover->Shutdown();
  }

  SteadyClock clock;  // the test process's clock, read by the mover and server
  AlignedSegmentAllocator allocator;
  SegmentMemory memory{&allocator, SegmentMemoryKnobs{}};
  std::unique_ptr<UcxDataMover> mover;
  std::unique_ptr<TcpDataServer> server;
};

UcxMoverOptions SmallPutOptions() {
  UcxMoverOptions options;
  options.put_chunk_bytes = 64 << 10;
  return options;
}

class UcxMoverTest : public ::testing::Test {
 protected:
  void SetUp() override {
    a_ = std::make_unique<UcxStore>(&resolver_, SmallPutOptions());
    b_ = std::make_unique<UcxStore>(&resolver_, SmallPutOptions());
    ASSERT_NE(a_->server, nullptr);
    ASSERT_NE(b_->server, nullptr);
    ASSERT_TRUE(a_->memory.Create(kSource, kSegmentBytes).ok());
    ASSERT_TRUE(b_->memory.Create(kTarget, kSegmentBytes).ok());
    FillSegment(a_->memory, kSource, 3);
    ASSERT_TRUE(resolver_.Set(kSource, a_->server->endpoint()).ok());
    ASSERT_TRUE(resolver_.Set(kTarget, b_->server->endpoint()).ok());
  }
  void TearDown() override {
    a_.reset();
    b_.reset();
  }

  // The clocks of the foreground trackers RestartPacedSource makes.
  SteadyClock clock_;
  ManualClock driven_clock_;  // moved only by the test
  StaticEndpointResolver resolver_;
  std::unique_ptr<UcxStore> a_;
  std::unique_ptr<UcxStore> b_;
};

TEST_F(UcxMoverTest, CopiesBytesEndToEnd) {
  ASSERT_TRUE(CopyAndWait(*a_->mover, CopyRange{kSource, 100, kTarget, 9000, 1234}).ok());
  EXPECT_EQ(*b_->memory.Read(kTarget, 9000, 1234), *a_->memory.Read(kSource, 100, 1234));
  EXPECT_EQ(*b_->memory.Read(kTarget, 8999, 1), std::string(1, '\0'));
  EXPECT_EQ(*b_->memory.Read(kTarget, 10234, 1), std::string(1, '\0'));
  EXPECT_EQ(b_->server->rma_grants(), 1u);
}

TEST_F(UcxMoverTest, CopiesObjectsLargerThanOnePut) {
  // 64 KiB puts: 5 MiB + 77 bytes is 81 puts completed by one flush.
  const uint64_t size = (5 << 20) + 77;
  ASSERT_TRUE(CopyAndWait(*a_->mover, CopyRange{kSource, 33, kTarget, 4096, size}).ok());
  EXPECT_EQ(Checksum(b_->memory, kTarget, 4096, size), Checksum(a_->memory, kSource, 33, size));
  // The reverse direction through the same stores (each is both source and target).
  ASSERT_TRUE(CopyAndWait(*b_->mover, CopyRange{kTarget, 4096, kSource, 0, size}).ok());
  EXPECT_EQ(Checksum(a_->memory, kSource, 0, size), Checksum(b_->memory, kTarget, 4096, size));
}

TEST_F(UcxMoverTest, ManyConcurrentCopies) {
  constexpr int kCopies = 24;
  constexpr uint64_t kSize = 200 * 1024 + 3;
  std::vector<std::unique_ptr<CopyResult>> results;
  for (int i = 0; i < kCopies; ++i) {
    results.push_back(std::make_unique<CopyResult>());
    a_->mover->StartCopy(CopyRange{kSource, i * kSize, kTarget, (kCopies - 1 - i) * kSize, kSize},
                         results.back()->Callback());
  }
  for (int i = 0; i < kCopies; ++i) {
    const absl::Status status = results[i]->Wait();
    ASSERT_TRUE(status.ok()) << i << ": " << status;
    EXPECT_EQ(Checksum(b_->memory, kTarget, (kCopies - 1 - i) * kSize, kSize),
              Checksum(a_->memory, kSource, i * kSize, kSize));
  }
  EXPECT_EQ(a_->mover->copies_in_flight(), 0u);
}

TEST_F(UcxMoverTest, BadRangesAndUnknownSegments) {
  EXPECT_EQ(CopyAndWait(*a_->mover, CopyRange{kSource, 0, kTarget, kSegmentBytes - 1, 2}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CopyAndWait(*a_->mover, CopyRange{kSource, kSegmentBytes - 1, kTarget, 0, 2}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CopyAndWait(*a_->mover, CopyRange{SegmentId(5), 0, kTarget, 0, 2}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(CopyAndWait(*a_->mover, CopyRange{kSource, 0, SegmentId(6), 0, 2}).code(),
            absl::StatusCode::kNotFound);
  ASSERT_TRUE(resolver_.Set(SegmentId(7), b_->server->endpoint()).ok());
  EXPECT_EQ(CopyAndWait(*a_->mover, CopyRange{kSource, 0, SegmentId(7), 0, 2}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(b_->server->rma_grants(), 0u);
}

// Grants through the real provider, then holds the answer until the test
// has torn the target's UCX worker down: the source then puts into a peer
// that no longer exists.
class HoldingGrantProvider final : public RmaGrantProvider {
 public:
  void set_inner(RmaGrantProvider* inner) { inner_ = inner; }
  absl::StatusOr<wire::RmaGrant> GrantRemoteWrite(const wire::RangeRequest& request) override {
    absl::StatusOr<wire::RmaGrant> grant = inner_->GrantRemoteWrite(request);
    granted.Notify();
    proceed.WaitForNotification();
    return grant;
  }
  Notification granted;
  Notification proceed;

 private:
  RmaGrantProvider* inner_ = nullptr;
};

TEST_F(UcxMoverTest, TargetTornDownMidCopyIsUnavailable) {
  HoldingGrantProvider holding;
  auto target = std::make_unique<UcxStore>(&resolver_, SmallPutOptions(), &holding);
  ASSERT_NE(target->server, nullptr);
  holding.set_inner(target->mover.get());
  ASSERT_TRUE(target->memory.Create(SegmentId(40), kSegmentBytes).ok());
  ASSERT_TRUE(resolver_.Set(SegmentId(40), target->server->endpoint()).ok());

  CopyResult result;
  a_->mover->StartCopy(CopyRange{kSource, 0, SegmentId(40), 0, 4 << 20}, result.Callback());
  holding.granted.WaitForNotification();
  target->mover->Shutdown();  // the target's worker and its UCX listener are gone
  holding.proceed.Notify();
  const absl::Status status = result.Wait();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  target.reset();

  // The source mover is still healthy for other targets.
  ASSERT_TRUE(CopyAndWait(*a_->mover, CopyRange{kSource, 0, kTarget, 0, 1 << 20}).ok());
  EXPECT_EQ(Checksum(b_->memory, kTarget, 0, 1 << 20), Checksum(a_->memory, kSource, 0, 1 << 20));
}

TEST_F(UcxMoverTest, RestartedTargetIsReachedAgain) {
  ASSERT_TRUE(CopyAndWait(*a_->mover, CopyRange{kSource, 0, kTarget, 0, 4096}).ok());
  b_.reset();  // the target store goes away entirely; A keeps a cached endpoint to it
  EXPECT_EQ(CopyAndWait(*a_->mover, CopyRange{kSource, 0, kTarget, 0, 4096}).code(),
            absl::StatusCode::kUnavailable);
  b_ = std::make_unique<UcxStore>(&resolver_, SmallPutOptions());
  ASSERT_NE(b_->server, nullptr);
  ASSERT_TRUE(b_->memory.Create(kTarget, kSegmentBytes).ok());
  ASSERT_TRUE(resolver_.Set(kTarget, b_->server->endpoint()).ok());
  ASSERT_TRUE(CopyAndWait(*a_->mover, CopyRange{kSource, 8, kTarget, 16, 300000}).ok());
  EXPECT_EQ(Checksum(b_->memory, kTarget, 16, 300000), Checksum(a_->memory, kSource, 8, 300000));
}

TEST_F(UcxMoverTest, ShutdownFailsABlockedCopy) {
  Notification asked;
  FakePeer peer([&](Socket& socket) {
    auto request = wire::RecvControl(socket);
    asked.Notify();
    char byte;
    (void)RecvAll(socket, &byte, 1);  // never grants
  });
  ASSERT_TRUE(resolver_.Set(SegmentId(60), peer.endpoint()).ok());
  CopyResult blocked;
  a_->mover->StartCopy(CopyRange{kSource, 0, SegmentId(60), 0, 10}, blocked.Callback());
  asked.WaitForNotification();
  a_->mover->Shutdown();
  ASSERT_TRUE(blocked.finished());
  EXPECT_EQ(blocked.Wait().code(), absl::StatusCode::kUnavailable);
}

// Store A again, its mover and data server sharing a foreground tracker on
// `foreground_clock` (as StoreNode wires them), its copies paced in 64 KiB
// pieces.
std::shared_ptr<ForegroundTraffic> RestartPacedSource(StaticEndpointResolver& resolver,
                                                      std::unique_ptr<UcxStore>& a,
                                                      int64_t yield_max_ms,
                                                      const Clock* foreground_clock) {
  UcxMoverOptions options = SmallPutOptions();
  options.tcp.foreground = std::make_shared<ForegroundTraffic>(foreground_clock);
  options.tcp.copy_chunk_bytes = 64 << 10;
  options.tcp.copy_yield_max_ms = yield_max_ms;
  a.reset();
  a = std::make_unique<UcxStore>(&resolver, options);
  EXPECT_NE(a->server, nullptr);
  EXPECT_TRUE(a->memory.Create(kSource, kSegmentBytes).ok());
  FillSegment(a->memory, kSource, 3);
  EXPECT_TRUE(resolver.Set(kSource, a->server->endpoint()).ok());
  return options.tcp.foreground;
}

TEST_F(UcxMoverTest, APacedCopyWaitsForTheStoresForegroundReads) {
  // On a clock only the test moves, only the end of the read lets the copy
  // go on.
  std::shared_ptr<ForegroundTraffic> foreground =
      RestartPacedSource(resolver_, a_, 60000, &driven_clock_);
  auto reading = std::make_unique<ForegroundTraffic::Scope>(foreground->Enter());
  CopyResult copy;
  a_->mover->StartCopy(CopyRange{kSource, 0, kTarget, 0, 1 << 20}, copy.Callback());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (foreground->yields() == 0 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(2));
  // The copy is inside the yield before its first piece, and stays there
  // while the read goes on.
  ASSERT_EQ(foreground->yields(), 1u);
  EXPECT_FALSE(copy.finished()) << "the copy ran past a foreground read in progress";
  reading.reset();
  driven_clock_.AdvanceBy(SmallPutOptions().tcp.copy_yield_quiet_us * kNsPerUs);
  foreground->ClockAdvanced();
  ASSERT_TRUE(copy.Wait().ok());
  EXPECT_EQ(Checksum(b_->memory, kTarget, 0, 1 << 20), Checksum(a_->memory, kSource, 0, 1 << 20));
  EXPECT_EQ(foreground->yields_timed_out(), 0u);
}

TEST_F(UcxMoverTest, APacedCopyFinishesUnderEndlessForeground) {
  // The 5 ms bound passes in real time.
  std::shared_ptr<ForegroundTraffic> foreground = RestartPacedSource(resolver_, a_, 5, &clock_);
  ForegroundTraffic::Scope endless = foreground->Enter();
  const uint64_t size = (1 << 20) + 1;  // 17 pieces of 64 KiB, each after a 5 ms wait
  ASSERT_TRUE(CopyAndWait(*a_->mover, CopyRange{kSource, 3, kTarget, 5, size}).ok());
  EXPECT_EQ(Checksum(b_->memory, kTarget, 5, size), Checksum(a_->memory, kSource, 3, size));
  EXPECT_EQ(foreground->yields(), 17u);
  EXPECT_EQ(foreground->yields_timed_out(), 17u);
}

TEST(DataPlane, FactoryBuildsEitherTransport) {
  EXPECT_EQ(ParseTransport("rdma").status().code(), absl::StatusCode::kInvalidArgument);
  for (const char* transport : {"tcp", "ucx"}) {
    SCOPED_TRACE(transport);
    SteadyClock clock;
    AlignedSegmentAllocator allocator;
    SegmentMemory memory_a(&allocator, SegmentMemoryKnobs{});
    SegmentMemory memory_b(&allocator, SegmentMemoryKnobs{});
    ASSERT_TRUE(memory_a.Create(kSource, 1 << 20).ok());
    ASSERT_TRUE(memory_b.Create(kTarget, 1 << 20).ok());
    FillSegment(memory_a, kSource, 5);
    StaticEndpointResolver resolver;
    DataPlaneOptions options;
    options.transport = transport;
    absl::StatusOr<std::unique_ptr<DataPlane>> a =
        MakeDataPlane(&clock, options, &memory_a, &resolver);
    absl::StatusOr<std::unique_ptr<DataPlane>> b =
        MakeDataPlane(&clock, options, &memory_b, &resolver);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(resolver.Set(kTarget, (*b)->endpoint()).ok());
    ASSERT_TRUE(CopyAndWait((*a)->mover(), CopyRange{kSource, 0, kTarget, 10, 1000}).ok());
    EXPECT_EQ(*memory_b.Read(kTarget, 10, 1000), *memory_a.Read(kSource, 0, 1000));
    // Reads are served by every plane.
    absl::StatusOr<std::string> read = ReadRemote((*b)->endpoint(), kTarget, 10, 1000, options.tcp);
    ASSERT_TRUE(read.ok()) << read.status();
    EXPECT_EQ(*read, *memory_a.Read(kSource, 0, 1000));
    (*a)->Shutdown();
    (*b)->Shutdown();
    absl::StatusOr<std::unique_ptr<DataMover>> mover =
        MakeDataMover(&clock, transport, &memory_a, &resolver, options);
    ASSERT_TRUE(mover.ok()) << mover.status();
  }
}

}  // namespace
}  // namespace heatsink::runtime
