// Covers foreground first inside one store (foreground_traffic.h,
// docs/runtime.md "Foreground first"): a yield returns at once without
// foreground reads, waits while one is in progress and is bounded by its
// limit; the TCP mover's copy connections and the server's side of a READ
// under a copy lease carry SO_PRIORITY and DSCP read back with getsockopt,
// while foreground connections keep the defaults; a copy whose store is
// serving a foreground read (a real READ whose reader does not drain it)
// defers its chunks until the read ends, and under a foreground that never
// ends the bounded wait still lets the copy finish byte-exact; copy frames
// stay within copy_chunk_bytes; copy threads run niced; a mark that fails is
// logged once and is not fatal; the knobs reject bad values by name. A
// client's put (WRITE) counts as foreground while its bytes land, so copies
// wait for it; a copy coming in (COPY_WRITE) waits for the target's own
// foreground and runs on a niced thread there; only a COPY_WRITE or an
// RMA_COMMIT may carry scores.
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
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
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

TEST(ForegroundTraffic, YieldReturnsAtOnceWithoutForeground) {
  ForegroundTraffic traffic;
  const absl::Time start = absl::Now();
  EXPECT_FALSE(traffic.YieldToForeground(10000));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
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
  ForegroundTraffic traffic;
  auto first = std::make_unique<ForegroundTraffic::Scope>(traffic.Enter());
  auto second = std::make_unique<ForegroundTraffic::Scope>(traffic.Enter());
  std::atomic<bool> returned{false};
  std::thread copy([&] {
    EXPECT_TRUE(traffic.YieldToForeground(60000));
    returned.store(true);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  first.reset();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(returned.load()) << "yielded while a foreground transfer was still in progress";
  second.reset();
  copy.join();
  EXPECT_EQ(traffic.yields(), 1u);
  EXPECT_EQ(traffic.yields_timed_out(), 0u);
}

TEST(ForegroundTraffic, YieldIsBoundedUnderEndlessForeground) {
  ForegroundTraffic traffic;
  ForegroundTraffic::Scope endless = traffic.Enter();
  const absl::Time start = absl::Now();
  EXPECT_TRUE(traffic.YieldToForeground(30));
  const absl::Duration waited = absl::Now() - start;
  EXPECT_GE(waited, absl::Milliseconds(25));
  EXPECT_LT(waited, absl::Seconds(5));
  EXPECT_EQ(traffic.yields_timed_out(), 1u);
}

TEST(ForegroundTraffic, AQuietTimeKeepsAStreamOfShortReadsBusy) {
  ForegroundTraffic traffic;
  { ForegroundTraffic::Scope read = traffic.Enter(); }
  // Without a quiet time the gap after a read is idle; with one it is not.
  EXPECT_FALSE(traffic.YieldToForeground(10000, 0));
  const absl::Time start = absl::Now();
  EXPECT_TRUE(traffic.YieldToForeground(10000, 50'000));
  const absl::Duration waited = absl::Now() - start;
  EXPECT_GE(waited, absl::Milliseconds(40));
  EXPECT_LT(waited, absl::Seconds(5));
  EXPECT_EQ(traffic.yields_timed_out(), 0u);
  // Long after the last read: idle at once.
  EXPECT_FALSE(traffic.YieldToForeground(10000, 50'000));
  // A stream that never pauses for the quiet time: the bound ends the wait.
  std::atomic<bool> stop{false};
  std::thread stream([&] {
    while (!stop.load()) {
      ForegroundTraffic::Scope read = traffic.Enter();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(traffic.YieldToForeground(30, 50'000));
  stop.store(true);
  stream.join();
  EXPECT_EQ(traffic.yields_timed_out(), 1u);
}

TEST(ForegroundTraffic, MetricsCountYieldsAndTransfersInProgress) {
  ForegroundTraffic traffic;
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
    EXPECT_TRUE(traffic.YieldToForeground(1));  // cut short: the read goes on
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
    Start(knobs);
  }

  void Start(TcpTransportKnobs knobs) {
    knobs.foreground = std::make_shared<ForegroundTraffic>();
    knobs_ = knobs;
    ASSERT_TRUE(memory_a_.Create(kSource, kSegmentBytes).ok());
    ASSERT_TRUE(memory_b_.Create(kTarget, kSegmentBytes).ok());
    FillSegment(memory_a_, kSource, 7);
    absl::StatusOr<std::unique_ptr<TcpDataServer>> server_a =
        TcpDataServer::Start(&memory_a_, knobs);
    ASSERT_TRUE(server_a.ok()) << server_a.status();
    server_a_ = *std::move(server_a);
    TcpTransportKnobs b_knobs = knobs;
    foreground_b_ = std::make_shared<ForegroundTraffic>();
    b_knobs.foreground = foreground_b_;  // store B's own
    absl::StatusOr<std::unique_ptr<TcpDataServer>> server_b =
        TcpDataServer::Start(&memory_b_, b_knobs);
    ASSERT_TRUE(server_b.ok()) << server_b.status();
    server_b_ = *std::move(server_b);
    ASSERT_TRUE(resolver_.Set(kTarget, server_b_->endpoint()).ok());
    mover_a_ = std::make_unique<TcpDataMover>(&clock_, &memory_a_, &resolver_, knobs);
  }

  void Restart(const TcpTransportKnobs& knobs) {
    mover_a_.reset();
    server_a_.reset();
    server_b_.reset();
    ASSERT_TRUE(memory_a_.Remove(kSource).ok());
    ASSERT_TRUE(memory_b_.Remove(kTarget).ok());
    Start(knobs);
  }

  ForegroundTraffic& foreground() { return *knobs_.foreground; }

  SteadyClock clock_;  // the test process's clock, read by the mover
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
  Restart(knobs);
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
  knobs.copy_yield_max_ms = 60000;  // only the end of the read lets the copy go on
  Restart(knobs);
  Socket reader = StalledReader(server_a_->endpoint());
  ASSERT_TRUE(WaitUntil([&] { return foreground().in_progress() == 1; }));

  const uint64_t size = 1 << 20;
  CopyResult copy;
  mover_a_->StartCopy(CopyRange{kSource, 0, kTarget, 0, size}, copy.Callback());
  ASSERT_TRUE(WaitUntil([&] { return foreground().yields() == 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(copy.finished()) << "the copy ran past a foreground read in progress";
  EXPECT_EQ(server_b_->bytes_written(), 0u);

  Drain(reader);
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
  Restart(knobs);
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
  Restart(knobs);
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
  knobs.copy_yield_max_ms = 60000;  // only the end of B's foreground lets it in
  Restart(knobs);
  const int niced_before = ThreadsAtNice(knobs.copy_thread_nice);
  auto held = std::make_unique<ForegroundTraffic::Scope>(foreground_b_->Enter());
  const uint64_t size = 1 << 20;
  CopyResult copy;
  mover_a_->StartCopy(CopyRange{kSource, 0, kTarget, 0, size}, copy.Callback());
  ASSERT_TRUE(WaitUntil([&] { return foreground_b_->yields() == 1; }));
  // B's connection thread and A's copy thread, both niced.
  EXPECT_EQ(ThreadsAtNice(knobs.copy_thread_nice) - niced_before, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(copy.finished()) << "the target took a copy in past its foreground";
  EXPECT_EQ(server_b_->writes_completed(), 0u);
  EXPECT_EQ(foreground().yields(), 0u) << "store A had no foreground to yield to";

  held.reset();
  ASSERT_TRUE(copy.Wait().ok());
  EXPECT_EQ(Checksum(memory_b_, kTarget, 0, size), Checksum(memory_a_, kSource, 0, size));
  EXPECT_EQ(server_b_->copy_writes_completed(), 1u);
  EXPECT_EQ(foreground_b_->yields_timed_out(), 0u);
}

TEST(WireCopyWrite, OnlyACopyWriteOrAnRmaCommitCarriesScores) {
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(kTarget, kSegmentBytes).ok());
  absl::StatusOr<std::unique_ptr<TcpDataServer>> server =
      TcpDataServer::Start(&memory, TcpTransportKnobs{});
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
