// Covers foreground first inside one store (foreground_traffic.h,
// docs/runtime.md "Foreground first"). The tracker's own tests drive a
// ManualClock (real time only polls a counter or bounds a failing wait): a
// yield returns at once without foreground (also before any transfer
// ended, whatever the quiet time), returns only once the last of several
// foreground transfers ended or at its bound on the clock, and waits out a
// quiet time counted on the clock from the last end, so a stream of short
// reads keeps it to its bound; ClockAdvanced() wakes a yield whose bound
// passed on the driven clock; yields and yields_timed_out are counted and
// exported as metrics.
//
// Between stores on loopback: the TCP mover's copy connections and the
// server's side of a READ under a copy lease carry SO_PRIORITY and DSCP read
// back with getsockopt, while foreground connections keep the defaults; a
// copy whose store is serving a foreground read (a real READ whose reader
// does not drain it) defers its chunks until the read ends, and under a
// foreground that never ends the bounded wait still lets the copy finish
// byte-exact; copy frames stay within copy_chunk_bytes; copy threads run
// niced; a mark that fails is logged once and is not fatal; the knobs reject
// bad values by name. A client's put (WRITE) counts as foreground while its
// bytes land, so copies wait for it; a copy coming in (COPY_WRITE) waits for
// the target's own foreground and runs on a niced thread there; only a
// COPY_WRITE or an RMA_COMMIT may carry scores. The tests that show a copy
// held until the foreground ends give the trackers a clock only the test
// moves; the others run on the steady clock, and the bounded-wait one
// measures real pacing.
#include "runtime/transport/foreground_traffic.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "core/env/manual_env.h"
#include "core/env/time.h"
#include "gtest/gtest.h"
#include "runtime/env/notification.h"
#include "runtime/env/steady_clock.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/tcp_data_mover.h"
#include "runtime/transport/tcp_data_server.h"
#include "runtime/transport/wire.h"
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

template <typename Fn>
bool WaitUntil(Fn condition, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

int PortOf(const sockaddr_in& addr) { return ntohs(addr.sin_port); }

// The descriptor of this process's TCP socket with local port `local` and
// peer port `peer` (both ends of a loopback connection live in the test
// process), or -1.
int FindSocket(int local, int peer) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (dirent* entry = readdir(dir)) {
    const int fd = std::atoi(entry->d_name);
    if (fd <= 2) continue;
    sockaddr_in mine{};
    sockaddr_in theirs{};
    socklen_t len = sizeof(mine);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &len) != 0) continue;
    len = sizeof(theirs);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&theirs), &len) != 0) continue;
    if (mine.sin_family == AF_INET && PortOf(mine) == local && PortOf(theirs) == peer) {
      found = fd;
      break;
    }
  }
  closedir(dir);
  return found;
}

struct Marks {
  int priority = -1;
  int tos = -1;
};

Marks MarksOf(int fd) {
  Marks marks;
  socklen_t len = sizeof(marks.priority);
  if (getsockopt(fd, SOL_SOCKET, SO_PRIORITY, &marks.priority, &len) != 0) marks.priority = -1;
  len = sizeof(marks.tos);
  if (getsockopt(fd, IPPROTO_IP, IP_TOS, &marks.tos, &len) != 0) marks.tos = -1;
  return marks;
}

int PeerPort(const Socket& socket) {
  sockaddr_in addr{};
  socklen_t len = sizeof(addr);
  if (getpeername(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) return -1;
  return PortOf(addr);
}

// A ManualClock that remembers the latest time read from it, so that a test
// can tell when a waiting yield has looked at the time again.
class WatchedClock final : public Clock {
 public:
  TimeNs NowNs() const override {
    const TimeNs now = clock_.NowNs();
    TimeNs seen = seen_ns_.load();
    while (seen < now && !seen_ns_.compare_exchange_weak(seen, now)) {
    }
    return now;
  }
  // Returns the new time.
  TimeNs AdvanceBy(DurationNs d) {
    clock_.AdvanceBy(d);
    return clock_.NowNs();
  }
  TimeNs seen_ns() const { return seen_ns_.load(); }

 private:
  ManualClock clock_;
  mutable std::atomic<TimeNs> seen_ns_{std::numeric_limits<TimeNs>::min()};
};

// A copy's yield on a thread of its own, so that the test can drive the
// clock while it waits. The destructor moves the clock past the bound of a
// yield still waiting (a test that failed) before it joins.
class YieldThread {
 public:
  YieldThread(ForegroundTraffic* traffic, WatchedClock* clock, int64_t max_wait_ms,
              int64_t quiet_us)
      : traffic_(traffic), clock_(clock), max_wait_ms_(max_wait_ms) {
    thread_ = std::thread([this, quiet_us] {
      waited_.store(traffic_->YieldToForeground(max_wait_ms_, quiet_us));
      returned_.Notify();
    });
  }
  ~YieldThread() {
    if (!returned_.HasBeenNotified()) {
      clock_->AdvanceBy(MsToNs(max_wait_ms_));
      traffic_->ClockAdvanced();
    }
    thread_.join();
  }
  YieldThread(const YieldThread&) = delete;
  YieldThread& operator=(const YieldThread&) = delete;

  // True once the yield has returned. `timeout` is real time for the thread
  // to be scheduled, never time the yield waits for (its clock is driven).
  bool Returned(absl::Duration timeout = absl::Seconds(10)) const {
    return returned_.WaitForNotificationWithTimeout(timeout);
  }
  // What the yield returned: true when it waited. REQUIRES: Returned().
  bool waited() const { return waited_.load(); }

 private:
  ForegroundTraffic* const traffic_;
  WatchedClock* const clock_;
  const int64_t max_wait_ms_;
  std::atomic<bool> waited_{false};
  Notification returned_;
  std::thread thread_;
};

// Moves the clock by `d`, wakes the one yield waiting on `traffic`, and
// returns once that yield has read the new time and let go of the traffic's
// mutex: it has returned or gone back to waiting, and yields_timed_out()
// says whether its bound ended it.
void AdvanceAndSettle(WatchedClock& clock, ForegroundTraffic& traffic, DurationNs d) {
  const TimeNs now = clock.AdvanceBy(d);
  traffic.ClockAdvanced();
  ASSERT_TRUE(WaitUntil([&] { return clock.seen_ns() >= now; }));
  // The yield read the clock holding the mutex; this takes it after the
  // yield has let go.
  traffic.ClockAdvanced();
}

TEST(ForegroundTraffic, YieldReturnsAtOnceWithoutForeground) {
  WatchedClock clock;  // never moved: a yield that waited would not return
  ForegroundTraffic traffic(&clock);
  {
    // No transfer yet, at time 0: idle, with or without a quiet time.
    YieldThread plain(&traffic, &clock, 10000, 0);
    YieldThread quiet(&traffic, &clock, 10000, 50'000);
    ASSERT_TRUE(plain.Returned());
    ASSERT_TRUE(quiet.Returned());
    EXPECT_FALSE(plain.waited());
    EXPECT_FALSE(quiet.waited());
  }
  {
    ForegroundTraffic::Scope reading = traffic.Enter();
    EXPECT_EQ(traffic.in_progress(), 1);
    // A zero bound never waits, foreground or not.
    EXPECT_FALSE(traffic.YieldToForeground(0));
  }
  EXPECT_EQ(traffic.in_progress(), 0);
  EXPECT_EQ(traffic.yields(), 0u);
}

TEST(ForegroundTraffic, YieldWaitsUntilTheLastForegroundTransferEnds) {
  WatchedClock clock;
  ForegroundTraffic traffic(&clock);
  auto first = std::make_unique<ForegroundTraffic::Scope>(traffic.Enter());
  auto second = std::make_unique<ForegroundTraffic::Scope>(traffic.Enter());
  {
    // One of the two ends; the other keeps the yield waiting to its bound.
    YieldThread copy(&traffic, &clock, /*max_wait_ms=*/10, 0);
    ASSERT_TRUE(WaitUntil([&] { return traffic.yields() == 1; }));
    first.reset();
    clock.AdvanceBy(MsToNs(10));
    traffic.ClockAdvanced();
    ASSERT_TRUE(copy.Returned());
    EXPECT_TRUE(copy.waited());
    EXPECT_EQ(traffic.yields_timed_out(), 1u)
        << "yielded while a foreground transfer was still in progress";
  }
  {
    // The last one ends: the yield returns then, its bound far away on a
    // clock that no longer moves.
    YieldThread copy(&traffic, &clock, /*max_wait_ms=*/60000, 0);
    ASSERT_TRUE(WaitUntil([&] { return traffic.yields() == 2; }));
    second.reset();
    ASSERT_TRUE(copy.Returned());
    EXPECT_TRUE(copy.waited());
  }
  EXPECT_EQ(traffic.yields(), 2u);
  EXPECT_EQ(traffic.yields_timed_out(), 1u);
}

TEST(ForegroundTraffic, YieldIsBoundedUnderEndlessForeground) {
  WatchedClock clock;
  ForegroundTraffic traffic(&clock);
  ForegroundTraffic::Scope endless = traffic.Enter();
  YieldThread copy(&traffic, &clock, /*max_wait_ms=*/30, 0);
  ASSERT_TRUE(WaitUntil([&] { return traffic.yields() == 1; }));
  AdvanceAndSettle(clock, traffic, MsToNs(29));
  EXPECT_EQ(traffic.yields_timed_out(), 0u) << "the wait ended before its bound";
  AdvanceAndSettle(clock, traffic, MsToNs(1));
  ASSERT_TRUE(copy.Returned());
  EXPECT_TRUE(copy.waited());
  EXPECT_EQ(traffic.yields(), 1u);
  EXPECT_EQ(traffic.yields_timed_out(), 1u);
}

TEST(ForegroundTraffic, AQuietTimeKeepsAStreamOfShortReadsBusy) {
  WatchedClock clock;
  ForegroundTraffic traffic(&clock);
  { ForegroundTraffic::Scope read = traffic.Enter(); }  // ends at 0
  // Without a quiet time the gap after a read is idle; with one it is not.
  EXPECT_FALSE(traffic.YieldToForeground(10000, 0));
  clock.AdvanceBy(MsToNs(20));
  {
    // The quiet time counts from the end of the read on the clock, not from
    // the yield: 30 ms more.
    YieldThread copy(&traffic, &clock, 10000, 50'000);
    ASSERT_TRUE(WaitUntil([&] { return traffic.yields() == 1; }));
    AdvanceAndSettle(clock, traffic, MsToNs(30));
    ASSERT_TRUE(copy.Returned());
    EXPECT_TRUE(copy.waited());
  }
  EXPECT_EQ(traffic.yields_timed_out(), 0u);
  // Long after the last read: idle at once.
  EXPECT_FALSE(traffic.YieldToForeground(10000, 50'000));
  EXPECT_EQ(traffic.yields(), 1u);
  // A stream of reads 5 ms apart, within a 10 ms quiet time, never looks
  // idle: the 30 ms bound ends the wait.
  { ForegroundTraffic::Scope read = traffic.Enter(); }
  YieldThread copy(&traffic, &clock, /*max_wait_ms=*/30, /*quiet_us=*/10'000);
  ASSERT_TRUE(WaitUntil([&] { return traffic.yields() == 2; }));
  for (int step = 1; step < 6; ++step) {
    AdvanceAndSettle(clock, traffic, MsToNs(5));
    ForegroundTraffic::Scope read = traffic.Enter();
  }
  EXPECT_EQ(traffic.yields_timed_out(), 0u);
  AdvanceAndSettle(clock, traffic, MsToNs(5));
  ASSERT_TRUE(copy.Returned());
  EXPECT_TRUE(copy.waited());
  EXPECT_EQ(traffic.yields(), 2u);
  EXPECT_EQ(traffic.yields_timed_out(), 1u);
}

TEST(ForegroundTraffic, ClockAdvancedWakesAYieldWhoseBoundPassedOnTheDrivenClock) {
  WatchedClock clock;
  ForegroundTraffic traffic(&clock);
  auto endless = std::make_unique<ForegroundTraffic::Scope>(traffic.Enter());
  YieldThread copy(&traffic, &clock, /*max_wait_ms=*/3'600'000, 0);
  ASSERT_TRUE(WaitUntil([&] { return traffic.yields() == 1; }));
  // The yield sleeps out its hour of real time unless told the clock moved.
  clock.AdvanceBy(SecToNs(3600));
  traffic.ClockAdvanced();
  EXPECT_TRUE(copy.Returned());
  EXPECT_EQ(traffic.yields_timed_out(), 1u);
  endless.reset();  // releases the yield, should the wake have been lost
}

TEST(ForegroundTraffic, MetricsCountYieldsAndTransfersInProgress) {
  WatchedClock clock;
  ForegroundTraffic traffic(&clock);
  auto value = [&](const std::string& name) -> int64_t {
    for (const MetricFamily& family : ForegroundMetrics(traffic)) {
      if (family.name == name) return family.samples.at(0).value;
    }
    ADD_FAILURE() << name << " missing";
    return -1;
  };
  {
    ForegroundTraffic::Scope reading = traffic.Enter();
    EXPECT_EQ(value("store_foreground_transfers_in_progress"), 1);
    YieldThread copy(&traffic, &clock, /*max_wait_ms=*/1, 0);
    ASSERT_TRUE(WaitUntil([&] { return traffic.yields() == 1; }));
    clock.AdvanceBy(MsToNs(1));
    traffic.ClockAdvanced();
    ASSERT_TRUE(copy.Returned());  // cut short: the read goes on
  }
  EXPECT_EQ(value("store_foreground_transfers_in_progress"), 0);
  EXPECT_EQ(value("store_copy_yields_total"), 1);
  EXPECT_EQ(value("store_copy_yields_timed_out_total"), 1);
}

TEST(ForegroundTraffic, AFailedMarkIsLoggedOnceAndNotFatal) {
  Socket closed;  // no descriptor: every setsockopt fails
  EXPECT_EQ(MarkBackground(closed, 1, 8).code(), absl::StatusCode::kUnavailable);
  ::testing::internal::CaptureStderr();
  MarkCopyConnection(closed, TcpTransportKnobs());
  MarkCopyConnection(closed, TcpTransportKnobs());
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(absl::StrContains(logged, "copy connections run unmarked")) << logged;
  EXPECT_EQ(logged.find("copy connections run unmarked"),
            logged.rfind("copy connections run unmarked"))
      << "logged more than once: " << logged;
}

TEST(ForegroundTraffic, KnobsRejectBadValuesByName) {
  TcpTransportKnobs knobs;
  knobs.copy_chunk_bytes = 0;
  EXPECT_TRUE(absl::StrContains(knobs.Validate().message(), "copy_chunk_bytes"));
  knobs = TcpTransportKnobs();
  knobs.copy_yield_max_ms = -1;
  EXPECT_TRUE(absl::StrContains(knobs.Validate().message(), "copy_yield_max_ms"));
  knobs = TcpTransportKnobs();
  knobs.copy_yield_quiet_us = -1;
  EXPECT_TRUE(absl::StrContains(knobs.Validate().message(), "copy_yield_quiet_us"));
  knobs = TcpTransportKnobs();
  knobs.copy_thread_nice = 20;
  EXPECT_TRUE(absl::StrContains(knobs.Validate().message(), "copy_thread_nice"));
  knobs = TcpTransportKnobs();
  knobs.copy_socket_priority = 7;
  EXPECT_TRUE(absl::StrContains(knobs.Validate().message(), "copy_socket_priority"));
  knobs = TcpTransportKnobs();
  knobs.copy_dscp = 64;
  EXPECT_TRUE(absl::StrContains(knobs.Validate().message(), "copy_dscp"));
  EXPECT_TRUE(TcpTransportKnobs().Validate().ok());
  EXPECT_TRUE(TcpTransportKnobs::TestMin().Validate().ok());
  knobs = TcpTransportKnobs();
  ASSERT_TRUE(TcpTransportKnobs::Registry().Set(knobs, "copy_chunk_bytes", "65536").ok());
  ASSERT_TRUE(TcpTransportKnobs::Registry().Set(knobs, "copy_yield_max_ms", "7").ok());
  EXPECT_EQ(knobs.copy_chunk_bytes, 65536u);
  EXPECT_EQ(knobs.copy_yield_max_ms, 7);
}

// Store A owns kSource, serves it and runs the mover (one ForegroundTraffic
// shared by its server and mover, as StoreNode wires them); store B owns
// kTarget and serves it.
class CopyPacingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TcpTransportKnobs knobs;
    knobs.copy_chunk_bytes = 64 << 10;
    Start(knobs, &clock_);
  }

  // Both stores' foreground trackers read `foreground_clock`: clock_, or
  // driven_clock_ for a test that must see a copy held until the foreground
  // ends (its yields' bounds then pass only when the test moves the clock).
  void Start(TcpTransportKnobs knobs, const Clock* foreground_clock) {
    knobs.foreground = std::make_shared<ForegroundTraffic>(foreground_clock);
    knobs_ = knobs;
    ASSERT_TRUE(memory_a_.Create(kSource, kSegmentBytes).ok());
    ASSERT_TRUE(memory_b_.Create(kTarget, kSegmentBytes).ok());
    FillSegment(memory_a_, kSource, 7);
    absl::StatusOr<std::unique_ptr<TcpDataServer>> server_a =
        TcpDataServer::Start(&clock_, &memory_a_, knobs);
    ASSERT_TRUE(server_a.ok()) << server_a.status();
    server_a_ = *std::move(server_a);
    TcpTransportKnobs b_knobs = knobs;
    foreground_b_ = std::make_shared<ForegroundTraffic>(foreground_clock);
    b_knobs.foreground = foreground_b_;  // store B's own
    absl::StatusOr<std::unique_ptr<TcpDataServer>> server_b =
        TcpDataServer::Start(&clock_, &memory_b_, b_knobs);
    ASSERT_TRUE(server_b.ok()) << server_b.status();
    server_b_ = *std::move(server_b);
    ASSERT_TRUE(resolver_.Set(kTarget, server_b_->endpoint()).ok());
    mover_a_ = std::make_unique<TcpDataMover>(&clock_, &memory_a_, &resolver_, knobs);
  }

  void Restart(const TcpTransportKnobs& knobs, const Clock* foreground_clock) {
    mover_a_.reset();
    server_a_.reset();
    server_b_.reset();
    ASSERT_TRUE(memory_a_.Remove(kSource).ok());
    ASSERT_TRUE(memory_b_.Remove(kTarget).ok());
    Start(knobs, foreground_clock);
  }

  // Once `traffic`'s last foreground transfer has ended, moves driven_clock_
  // past the quiet time and wakes the yields waiting for it.
  void PassTheQuietTime(ForegroundTraffic& traffic) {
    // Leave() reads the clock before the count drops: the move comes after.
    ASSERT_TRUE(WaitUntil([&] { return traffic.in_progress() == 0; }));
    driven_clock_.AdvanceBy(knobs_.copy_yield_quiet_us * kNsPerUs);
    traffic.ClockAdvanced();
  }

  ForegroundTraffic& foreground() { return *knobs_.foreground; }

  SteadyClock clock_;  // the test process's clock, read by the mover
  ManualClock driven_clock_;
  TcpTransportKnobs knobs_;
  std::shared_ptr<ForegroundTraffic> foreground_b_;
  AlignedSegmentAllocator allocator_;
  SegmentMemory memory_a_{&allocator_, SegmentMemoryKnobs{}};
  SegmentMemory memory_b_{&allocator_, SegmentMemoryKnobs{}};
  StaticEndpointResolver resolver_;
  std::unique_ptr<TcpDataServer> server_a_;
  std::unique_ptr<TcpDataServer> server_b_;
  std::unique_ptr<TcpDataMover> mover_a_;
};

TEST_F(CopyPacingTest, CopyConnectionsAreMarkedLowPriorityInSmallFrames) {
  // The target is a scripted peer in this process: it finds the mover's end
  // of the connection and reads its marks back.
  Marks marks;
  std::vector<uint32_t> frames;
  const uint64_t size = (200 << 10) + 3;
  FakePeer peer([&](Socket& socket) {
    auto request = wire::RecvControl(socket);
    if (!request.ok()) return;
    sockaddr_in mine{};
    socklen_t len = sizeof(mine);
    getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&mine), &len);
    const int mover_fd = FindSocket(PeerPort(socket), PortOf(mine));
    if (mover_fd >= 0) marks = MarksOf(mover_fd);
    if (!wire::SendStatus(socket, absl::OkStatus(), 0).ok()) return;
    uint64_t got = 0;
    std::string chunk;
    while (got < size) {
      auto header = wire::RecvHeader(socket, 1 << 24);
      if (!header.ok()) return;
      frames.push_back(header->payload_bytes);
      chunk.resize(header->payload_bytes);
      if (!RecvAll(socket, chunk.data(), chunk.size()).ok()) return;
      got += header->payload_bytes;
    }
    (void)wire::SendStatus(socket, absl::OkStatus(), got);
  });
  ASSERT_TRUE(resolver_.Set(SegmentId(50), peer.endpoint()).ok());
  ASSERT_TRUE(CopyAndWait(*mover_a_, CopyRange{kSource, 0, SegmentId(50), 0, size}).ok());
  EXPECT_EQ(marks.priority, 1);
  EXPECT_EQ(marks.tos, 0x20);  // DSCP CS1
  ASSERT_EQ(frames.size(), 4u);
  for (uint32_t frame : frames) EXPECT_LE(frame, knobs_.copy_chunk_bytes);

  // A foreground connection keeps the defaults.
  absl::StatusOr<Socket> foreground = ConnectTcp(server_b_->endpoint(), 1000, 2000);
  ASSERT_TRUE(foreground.ok());
  const Marks plain = MarksOf(foreground->fd());
  EXPECT_EQ(plain.priority, 0);
  EXPECT_EQ(plain.tos, 0);
}

TEST_F(CopyPacingTest, TheServerMarksTheConnectionOfAReadUnderACopyLease) {
  TcpTransportKnobs knobs = knobs_;
  knobs.copy_socket_priority = 3;
  knobs.copy_dscp = 10;  // AF11
  Restart(knobs, &clock_);
  const int server_port = server_a_->port();
  for (const bool leased : {false, true}) {
    absl::StatusOr<Socket> socket = ConnectTcp(server_a_->endpoint(), 1000, 5000);
    ASSERT_TRUE(socket.ok());
    sockaddr_in mine{};
    socklen_t len = sizeof(mine);
    getsockname(socket->fd(), reinterpret_cast<sockaddr*>(&mine), &len);
    const uint64_t size = 100 << 10;
    ASSERT_TRUE(
        wire::SendFrame(*socket, wire::FrameType::kRead,
                        wire::EncodeReadRange({kSource, 5, size}, leased ? LeaseId(9) : LeaseId()))
            .ok());
    uint64_t announced = 0;
    ASSERT_TRUE(wire::RecvStatus(*socket, &announced).ok());
    ASSERT_EQ(announced, size);
    // The server's end, marked (or not) before its STATUS went out.
    const int server_fd = FindSocket(server_port, PortOf(mine));
    ASSERT_GE(server_fd, 0);
    const Marks marks = MarksOf(server_fd);
    EXPECT_EQ(marks.priority, leased ? 3 : 0) << leased;
    EXPECT_EQ(marks.tos, leased ? 40 : 0) << leased;
    std::string bytes(size, '\0');
    uint64_t got = 0;
    while (got < size) {
      auto header = wire::RecvHeader(*socket, knobs.frame_bytes_max);
      ASSERT_TRUE(header.ok());
      if (leased) {
        EXPECT_LE(header->payload_bytes, knobs.copy_chunk_bytes);
      }
      ASSERT_TRUE(RecvAll(*socket, bytes.data() + got, header->payload_bytes).ok());
      got += header->payload_bytes;
    }
    EXPECT_EQ(StableHash(bytes), Checksum(memory_a_, kSource, 5, size));
  }
  // The server counts a read once its last frame went out, which may be
  // after the reader has the bytes.
  EXPECT_TRUE(WaitUntil([&] { return server_a_->reads_completed() == 2; }));
  EXPECT_EQ(server_a_->copy_reads_completed(), 1u);
  EXPECT_EQ(server_a_->reads_completed(), 2u);
}

// A reader that asks store A for its whole segment and does not drain it:
// with a tiny receive buffer the server blocks mid-read, a foreground read
// in progress for as long as the reader wants.
Socket StalledReader(const std::string& endpoint) {
  absl::StatusOr<HostPort> hp = ParseEndpoint(endpoint);
  EXPECT_TRUE(hp.ok());
  Socket socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  const int small = 4096;
  setsockopt(socket.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(hp->port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  EXPECT_EQ(::connect(socket.fd(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_TRUE(ConfigureStream(socket, 10000).ok());
  EXPECT_TRUE(wire::SendFrame(socket, wire::FrameType::kRead,
                              wire::EncodeRange({kSource, 0, kSegmentBytes}))
                  .ok());
  return socket;
}

// Drains the rest of the stalled read.
void Drain(const Socket& socket) {
  uint64_t size = 0;
  ASSERT_TRUE(wire::RecvStatus(socket, &size).ok());
  std::string chunk;
  uint64_t got = 0;
  while (got < size) {
    auto header = wire::RecvHeader(socket, 1 << 24);
    ASSERT_TRUE(header.ok());
    chunk.resize(header->payload_bytes);
    ASSERT_TRUE(RecvAll(socket, chunk.data(), chunk.size()).ok());
    got += header->payload_bytes;
  }
}

TEST_F(CopyPacingTest, ACopyDefersItsChunksWhileTheStoreServesAForegroundRead) {
  TcpTransportKnobs knobs = knobs_;
  knobs.copy_yield_max_ms = 60000;
  // On a clock only the test moves, only the end of the read lets the copy
  // go on.
  Restart(knobs, &driven_clock_);
  Socket reader = StalledReader(server_a_->endpoint());
  ASSERT_TRUE(WaitUntil([&] { return foreground().in_progress() == 1; }));

  const uint64_t size = 1 << 20;
  CopyResult copy;
  mover_a_->StartCopy(CopyRange{kSource, 0, kTarget, 0, size}, copy.Callback());
  // The copy is inside the yield before its first chunk, and stays there
  // while the read goes on.
  ASSERT_TRUE(WaitUntil([&] { return foreground().yields() == 1; }));
  EXPECT_FALSE(copy.finished()) << "the copy ran past a foreground read in progress";
  EXPECT_EQ(server_b_->bytes_written(), 0u);

  Drain(reader);
  PassTheQuietTime(foreground());
  ASSERT_TRUE(copy.Wait().ok());
  EXPECT_EQ(Checksum(memory_b_, kTarget, 0, size), Checksum(memory_a_, kSource, 0, size));
  EXPECT_EQ(foreground().yields_timed_out(), 0u);
  EXPECT_TRUE(WaitUntil([&] { return server_a_->reads_completed() == 1; }));
  EXPECT_EQ(foreground().in_progress(), 0);
}

TEST_F(CopyPacingTest, TheBoundedWaitLetsACopyFinishUnderEndlessForeground) {
  TcpTransportKnobs knobs = knobs_;
  knobs.copy_chunk_bytes = 16 << 10;
  knobs.copy_yield_max_ms = 5;
  Restart(knobs, &clock_);  // the bound passes in real time
  ForegroundTraffic::Scope endless = foreground().Enter();
  const uint64_t size = 256 << 10;  // 16 chunks, each waits its 5 ms
  const absl::Time start = absl::Now();
  ASSERT_TRUE(CopyAndWait(*mover_a_, CopyRange{kSource, 0, kTarget, 0, size}).ok());
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(16 * 5 - 5));
  EXPECT_EQ(Checksum(memory_b_, kTarget, 0, size), Checksum(memory_a_, kSource, 0, size));
  EXPECT_EQ(foreground().yields(), 16u);
  EXPECT_EQ(foreground().yields_timed_out(), 16u);
}

TEST_F(CopyPacingTest, CopyThreadsRunNiced) {
  int nice = -100;
  CopyResult copy;
  mover_a_->StartCopy(CopyRange{kSource, 0, kTarget, 0, 4096},
                      [&, done = copy.Callback()](absl::Status status) mutable {
                        // `done` runs on the copy thread that ran the copy.
                        errno = 0;
                        nice =
                            ::getpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)));
                        std::move(done)(std::move(status));
                      });
  ASSERT_TRUE(copy.Wait().ok());
  EXPECT_EQ(nice, knobs_.copy_thread_nice);
  EXPECT_EQ(nice, 10);
}

TEST_F(CopyPacingTest, ForegroundReadsNeverWaitForCopies) {
  // A copy that yields forever does not hold a foreground read back: the
  // read is served while the copy waits.
  TcpTransportKnobs knobs = knobs_;
  knobs.copy_yield_max_ms = 60000;
  Restart(knobs, &clock_);
  auto held = std::make_unique<ForegroundTraffic::Scope>(foreground().Enter());
  CopyResult copy;
  mover_a_->StartCopy(CopyRange{kSource, 0, kTarget, 0, 1 << 20}, copy.Callback());
  ASSERT_TRUE(WaitUntil([&] { return foreground().yields() == 1; }));
  absl::StatusOr<std::string> bytes = ReadRemote(server_a_->endpoint(), kSource, 0, 4096, knobs_);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(StableHash(*bytes), Checksum(memory_a_, kSource, 0, 4096));
  EXPECT_FALSE(copy.finished());
  held.reset();
  ASSERT_TRUE(copy.Wait().ok());
}

// Threads of this process whose nice value is `nice` (/proc/self/task).
int ThreadsAtNice(int nice) {
  int count = 0;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] == '.') continue;
    errno = 0;
    const int value = ::getpriority(PRIO_PROCESS, static_cast<id_t>(std::atoi(entry->d_name)));
    if (errno == 0 && value == nice) ++count;
  }
  ::closedir(dir);
  return count;
}

TEST_F(CopyPacingTest, APutIsForegroundWhileItsBytesLand) {
  // A client's WRITE, sent by hand so that it stays half-way.
  const uint64_t size = 64 << 10;
  absl::StatusOr<Socket> socket = ConnectTcp(server_a_->endpoint(), 1000, 5000);
  ASSERT_TRUE(socket.ok());
  ASSERT_TRUE(
      wire::SendFrame(*socket, wire::FrameType::kWrite, wire::EncodeRange({kSource, 0, size}))
          .ok());
  ASSERT_TRUE(wire::RecvStatus(*socket, nullptr).ok());
  const std::string bytes(size, 'p');
  auto send_half = [&](size_t from) {
    uint8_t header[wire::kHeaderBytes];
    wire::EncodeHeader(wire::FrameHeader{wire::FrameType::kData, size / 2}, header);
    return SendAll2(*socket, header, sizeof(header),
                    reinterpret_cast<const uint8_t*>(bytes.data()) + from, size / 2);
  };
  ASSERT_TRUE(send_half(0).ok());
  ASSERT_TRUE(WaitUntil([&] { return foreground().in_progress() == 1; }));

  // A copy out of the same store waits for the put.
  CopyResult copy;
  mover_a_->StartCopy(CopyRange{kSource, size, kTarget, 0, 4096}, copy.Callback());
  ASSERT_TRUE(WaitUntil([&] { return foreground().yields() == 1; }));

  ASSERT_TRUE(send_half(size / 2).ok());
  uint64_t landed = 0;
  ASSERT_TRUE(wire::RecvStatus(*socket, &landed).ok());
  EXPECT_EQ(landed, size);
  EXPECT_EQ(*memory_a_.Read(kSource, 0, size), bytes);
  EXPECT_TRUE(WaitUntil([&] { return foreground().in_progress() == 0; }));
  ASSERT_TRUE(copy.Wait().ok());
  EXPECT_EQ(server_a_->writes_completed(), 1u);
  EXPECT_EQ(server_a_->copy_writes_completed(), 0u);
  EXPECT_EQ(server_b_->copy_writes_completed(), 1u);
}

TEST_F(CopyPacingTest, TheTargetTakesACopyInOnlyBehindItsOwnForeground) {
  TcpTransportKnobs knobs = knobs_;
  knobs.copy_yield_max_ms = 60000;
  // On a clock only the test moves, only the end of B's foreground lets the
  // copy in.
  Restart(knobs, &driven_clock_);
  const int niced_before = ThreadsAtNice(knobs.copy_thread_nice);
  auto held = std::make_unique<ForegroundTraffic::Scope>(foreground_b_->Enter());
  const uint64_t size = 1 << 20;
  CopyResult copy;
  mover_a_->StartCopy(CopyRange{kSource, 0, kTarget, 0, size}, copy.Callback());
  // B's connection thread is inside the yield before it takes the copy's
  // first chunk, and stays there while B's foreground goes on.
  ASSERT_TRUE(WaitUntil([&] { return foreground_b_->yields() == 1; }));
  // B's connection thread and A's copy thread, both niced.
  EXPECT_EQ(ThreadsAtNice(knobs.copy_thread_nice) - niced_before, 2);
  EXPECT_FALSE(copy.finished()) << "the target took a copy in past its foreground";
  EXPECT_EQ(server_b_->writes_completed(), 0u);
  EXPECT_EQ(foreground().yields(), 0u) << "store A had no foreground to yield to";

  held.reset();
  PassTheQuietTime(*foreground_b_);
  ASSERT_TRUE(copy.Wait().ok());
  EXPECT_EQ(Checksum(memory_b_, kTarget, 0, size), Checksum(memory_a_, kSource, 0, size));
  EXPECT_EQ(server_b_->copy_writes_completed(), 1u);
  EXPECT_EQ(foreground_b_->yields_timed_out(), 0u);
}

TEST(WireCopyWrite, OnlyACopyWriteOrAnRmaCommitCarriesScores) {
  SteadyClock clock;
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(kTarget, kSegmentBytes).ok());
  absl::StatusOr<std::unique_ptr<TcpDataServer>> server =
      TcpDataServer::Start(&clock, &memory, TcpTransportKnobs{});
  ASSERT_TRUE(server.ok());
  const ScorePiece piece{4096, 2.5};
  for (const wire::FrameType type : {wire::FrameType::kWrite, wire::FrameType::kCopyWrite}) {
    absl::StatusOr<Socket> socket = ConnectTcp((*server)->endpoint(), 1000, 5000);
    ASSERT_TRUE(socket.ok());
    ASSERT_TRUE(
        wire::SendFrame(*socket, type, wire::EncodeScoredRange({kTarget, 0, 4096}, {&piece, 1}))
            .ok());
    const absl::Status answer = wire::RecvStatus(*socket, nullptr);
    if (type == wire::FrameType::kWrite) {
      EXPECT_EQ(answer.code(), absl::StatusCode::kInvalidArgument) << answer;
      EXPECT_TRUE(absl::StrContains(answer.message(), "only COPY_WRITE and RMA_COMMIT")) << answer;
    } else {
      EXPECT_TRUE(answer.ok()) << answer;
    }
  }
}

}  // namespace
}  // namespace heatsink::runtime
