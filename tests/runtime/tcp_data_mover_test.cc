// Covers the plain TCP data plane between two in-process stores on loopback:
// copies land byte-exact (checksums), including objects many chunks long and
// many concurrent copies; bad ranges on either side are OUT_OF_RANGE and
// unknown segments NOT_FOUND; a peer that closes mid-copy, a peer that is
// down, and a mover shut down under a blocked copy all give UNAVAILABLE; a
// target whose store restarted on another port is found there once the
// resolver forgets the refused endpoint (ConnectToSegment);
// copies_in_flight_max and connections_max reject with RESOURCE_EXHAUSTED;
// ReadRemote returns the served bytes and enforces its limits, and the server
// reports each served read to the segments' read observer. Over TLS
// (tls_stream.h): a copy lands the same bytes as a clear one, and the server
// refuses clear clients, other CAs' and missing client certificates.
#include "runtime/transport/tcp_data_mover.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "runtime/env/steady_clock.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/endpoint_resolver.h"
#include "runtime/transport/tcp_data_server.h"
#include "runtime/transport/tls_stream.h"
#include "runtime/transport/wire.h"
#include "tests/runtime/cert_test_util.h"
#include "tests/runtime/transport_test_util.h"

namespace heatsink::runtime {
namespace {

using ::heatsink::runtime::testing::Checksum;
using ::heatsink::runtime::testing::CopyAndWait;
using ::heatsink::runtime::testing::CopyResult;
using ::heatsink::runtime::testing::FakePeer;
using ::heatsink::runtime::testing::FillSegment;
using ::heatsink::runtime::testing::RecordingReadObserver;

constexpr SegmentId kSource(11);
constexpr SegmentId kTarget(22);
constexpr uint64_t kSegmentBytes = 8 << 20;

// Store A owns kSource and runs the mover; store B owns kTarget and serves it.
class TcpMoverTest : public ::testing::Test {
 protected:
  void SetUp() override { Start(TcpTransportKnobs{}); }

  void Start(const TcpTransportKnobs& knobs) {
    knobs_ = knobs;
    mover_.reset();
    server_b_.reset();
    ASSERT_TRUE(memory_a_.Create(kSource, kSegmentBytes).ok());
    ASSERT_TRUE(memory_b_.Create(kTarget, kSegmentBytes).ok());
    FillSegment(memory_a_, kSource, 7);
    absl::StatusOr<std::unique_ptr<TcpDataServer>> server =
        TcpDataServer::Start(&clock_, &memory_b_, knobs);
    ASSERT_TRUE(server.ok()) << server.status();
    server_b_ = *std::move(server);
    ASSERT_TRUE(resolver_.Set(kTarget, server_b_->endpoint()).ok());
    mover_ = std::make_unique<TcpDataMover>(&clock_, &memory_a_, &resolver_, knobs);
  }

  void Restart(const TcpTransportKnobs& knobs) {
    mover_.reset();
    server_b_.reset();
    ASSERT_TRUE(memory_a_.Remove(kSource).ok());
    ASSERT_TRUE(memory_b_.Remove(kTarget).ok());
    Start(knobs);
  }

  SteadyClock clock_;  // the test process's clock, read by the movers and servers
  TcpTransportKnobs knobs_;
  AlignedSegmentAllocator allocator_;
  SegmentMemory memory_a_{&allocator_, SegmentMemoryKnobs{}};
  SegmentMemory memory_b_{&allocator_, SegmentMemoryKnobs{}};
  StaticEndpointResolver resolver_;
  std::unique_ptr<TcpDataServer> server_b_;
  std::unique_ptr<TcpDataMover> mover_;
};

TEST_F(TcpMoverTest, CopiesBytesEndToEnd) {
  const CopyRange range{kSource, 1000, kTarget, 5000, 777};
  ASSERT_TRUE(CopyAndWait(*mover_, range).ok());
  EXPECT_EQ(Checksum(memory_b_, kTarget, 5000, 777), Checksum(memory_a_, kSource, 1000, 777));
  EXPECT_EQ(*memory_b_.Read(kTarget, 5000, 777), *memory_a_.Read(kSource, 1000, 777));
  // Bytes outside the target range are untouched.
  EXPECT_EQ(*memory_b_.Read(kTarget, 4999, 1), std::string(1, '\0'));
  EXPECT_EQ(*memory_b_.Read(kTarget, 5777, 1), std::string(1, '\0'));
  EXPECT_EQ(server_b_->writes_completed(), 1u);
  EXPECT_EQ(server_b_->bytes_written(), 777u);
}

TEST_F(TcpMoverTest, CopiesObjectsLargerThanOneChunk) {
  // Default chunk is 1 MiB: 6 MiB + 123 bytes crosses seven chunks.
  const uint64_t size = (6 << 20) + 123;
  const CopyRange range{kSource, 17, kTarget, 4096, size};
  ASSERT_TRUE(CopyAndWait(*mover_, range).ok());
  EXPECT_EQ(Checksum(memory_b_, kTarget, 4096, size), Checksum(memory_a_, kSource, 17, size));

  // Tiny chunks: a 100 KiB object in 4 KiB frames.
  TcpTransportKnobs small = TcpTransportKnobs::TestMin();
  Restart(small);
  ASSERT_TRUE(CopyAndWait(*mover_, CopyRange{kSource, 3, kTarget, 0, 100 << 10}).ok());
  EXPECT_EQ(Checksum(memory_b_, kTarget, 0, 100 << 10), Checksum(memory_a_, kSource, 3, 100 << 10));
}

TEST_F(TcpMoverTest, ManyConcurrentCopies) {
  constexpr int kCopies = 32;
  constexpr uint64_t kSize = 100 * 1024 + 1;
  std::vector<std::unique_ptr<CopyResult>> results;
  for (int i = 0; i < kCopies; ++i) {
    results.push_back(std::make_unique<CopyResult>());
    mover_->StartCopy(CopyRange{kSource, i * kSize, kTarget, (kCopies - 1 - i) * kSize, kSize},
                      results.back()->Callback());
  }
  for (int i = 0; i < kCopies; ++i) {
    ASSERT_TRUE(results[i]->Wait().ok()) << i;
    EXPECT_EQ(Checksum(memory_b_, kTarget, (kCopies - 1 - i) * kSize, kSize),
              Checksum(memory_a_, kSource, i * kSize, kSize));
  }
  EXPECT_EQ(mover_->copies_in_flight(), 0u);
}

TEST_F(TcpMoverTest, BadRangesAreOutOfRange) {
  // Target range leaves the target segment: rejected by the target before any byte moves.
  EXPECT_EQ(CopyAndWait(*mover_, CopyRange{kSource, 0, kTarget, kSegmentBytes - 10, 11}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(CopyAndWait(*mover_, CopyRange{kSource, 0, kTarget, ~uint64_t{0}, 2}).code(),
            absl::StatusCode::kOutOfRange);
  // Source range leaves the source segment.
  EXPECT_EQ(CopyAndWait(*mover_, CopyRange{kSource, kSegmentBytes, kTarget, 0, 1}).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(server_b_->writes_completed(), 0u);
}

TEST_F(TcpMoverTest, UnknownSegmentsAreNotFound) {
  EXPECT_EQ(CopyAndWait(*mover_, CopyRange{SegmentId(99), 0, kTarget, 0, 1}).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(CopyAndWait(*mover_, CopyRange{kSource, 0, SegmentId(98), 0, 1}).code(),
            absl::StatusCode::kNotFound);  // no endpoint known
  ASSERT_TRUE(resolver_.Set(SegmentId(97), server_b_->endpoint()).ok());
  EXPECT_EQ(CopyAndWait(*mover_, CopyRange{kSource, 0, SegmentId(97), 0, 1}).code(),
            absl::StatusCode::kNotFound);  // the target store has no such segment
}

TEST_F(TcpMoverTest, PeerClosingMidCopyIsUnavailable) {
  // The peer accepts the write, takes one chunk, then drops the connection.
  FakePeer peer([](Socket& socket) {
    auto request = wire::RecvControl(socket);
    if (!request.ok()) return;
    if (!wire::SendStatus(socket, absl::OkStatus(), 0).ok()) return;
    auto header = wire::RecvHeader(socket, 1 << 24);
    if (!header.ok()) return;
    std::string chunk(header->payload_bytes, '\0');
    (void)RecvAll(socket, chunk.data(), chunk.size());
    socket.ShutdownBoth();  // the copy's next send or receive fails
  });
  ASSERT_TRUE(resolver_.Set(SegmentId(50), peer.endpoint()).ok());
  const absl::Status status = CopyAndWait(*mover_, CopyRange{kSource, 0, SegmentId(50), 0, 6 << 20});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST_F(TcpMoverTest, PeerThatNeverAcknowledgesTimesOut) {
  TcpTransportKnobs knobs;
  knobs.io_timeout_ms = 200;
  Restart(knobs);
  Notification release;
  FakePeer peer([&](Socket& socket) {
    auto request = wire::RecvControl(socket);
    if (!request.ok()) return;
    if (!wire::SendStatus(socket, absl::OkStatus(), 0).ok()) return;
    std::string sink(4096, '\0');
    (void)RecvAll(socket, sink.data(), 64 + wire::kHeaderBytes);  // whole object, no ack
    release.WaitForNotificationWithTimeout(absl::Seconds(10));
  });
  ASSERT_TRUE(resolver_.Set(SegmentId(51), peer.endpoint()).ok());
  const absl::Status status = CopyAndWait(*mover_, CopyRange{kSource, 0, SegmentId(51), 0, 64});
  release.Notify();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

TEST_F(TcpMoverTest, TargetDownIsUnavailable) {
  const std::string endpoint = server_b_->endpoint();
  server_b_->Shutdown();
  const absl::Status status = CopyAndWait(*mover_, CopyRange{kSource, 0, kTarget, 0, 100});
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
}

// Resolves every segment to `stale` until told to forget it, then to
// `fresh`: the directory of a store restarted under the same client id (the
// same segment ids) on another port.
class MovingResolver final : public EndpointResolver {
 public:
  MovingResolver(std::string stale, std::string fresh)
      : stale_(std::move(stale)), fresh_(std::move(fresh)) {}
  absl::StatusOr<std::string> Resolve(SegmentId) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return forgets_ > 0 ? fresh_ : stale_;
  }
  void Forget(SegmentId, absl::string_view endpoint) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (endpoint == stale_) ++forgets_;
  }
  int forgets() const {
    std::lock_guard<std::mutex> lock(mu_);
    return forgets_;
  }

 private:
  const std::string stale_;
  const std::string fresh_;
  mutable std::mutex mu_;
  int forgets_ = 0;
};

TEST_F(TcpMoverTest, ACopyToAStoreThatMovedFindsItsNewEndpoint) {
  const std::string stale = server_b_->endpoint();
  server_b_->Shutdown();
  absl::StatusOr<std::unique_ptr<TcpDataServer>> moved =
      TcpDataServer::Start(&clock_, &memory_b_, knobs_);
  ASSERT_TRUE(moved.ok()) << moved.status();
  MovingResolver resolver(stale, (*moved)->endpoint());
  TcpDataMover mover(&clock_, &memory_a_, &resolver, knobs_);
  const CopyRange range{kSource, 0, kTarget, 64, 4096};
  ASSERT_TRUE(CopyAndWait(mover, range).ok());
  EXPECT_EQ(resolver.forgets(), 1) << "the refused endpoint is forgotten";
  EXPECT_EQ(*memory_b_.Read(kTarget, 64, 4096), *memory_a_.Read(kSource, 0, 4096));
  // The next copy goes to the new endpoint at once.
  ASSERT_TRUE(CopyAndWait(mover, CopyRange{kSource, 0, kTarget, 8192, 100}).ok());
  EXPECT_EQ(resolver.forgets(), 1);
  EXPECT_EQ((*moved)->writes_completed(), 2u);
}

TEST_F(TcpMoverTest, InFlightLimitAndShutdownUnderABlockedCopy) {
  TcpTransportKnobs knobs;
  knobs.copies_in_flight_max = 1;
  Restart(knobs);
  Notification accepted;
  FakePeer peer([&](Socket& socket) {
    auto request = wire::RecvControl(socket);
    accepted.Notify();
    // Never answers: the copy blocks until the mover breaks the connection.
    char byte;
    (void)RecvAll(socket, &byte, 1);
  });
  ASSERT_TRUE(resolver_.Set(SegmentId(52), peer.endpoint()).ok());
  CopyResult blocked;
  mover_->StartCopy(CopyRange{kSource, 0, SegmentId(52), 0, 10}, blocked.Callback());
  accepted.WaitForNotification();
  EXPECT_EQ(CopyAndWait(*mover_, CopyRange{kSource, 0, kTarget, 0, 10}).code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(blocked.finished());
  mover_->Shutdown();
  ASSERT_TRUE(blocked.finished());  // every done has run when Shutdown returns
  EXPECT_EQ(blocked.Wait().code(), absl::StatusCode::kUnavailable);
}

TEST_F(TcpMoverTest, ServerRejectsConnectionsAboveTheLimit) {
  TcpTransportKnobs knobs;
  knobs.connections_max = 1;
  Restart(knobs);
  absl::StatusOr<Socket> first = ConnectTcp(server_b_->endpoint(), 1000, 2000);
  ASSERT_TRUE(first.ok());
  // The first connection is served: a read on it works.
  ASSERT_TRUE(wire::SendFrame(*first, wire::FrameType::kRead,
                              wire::EncodeRange({kTarget, 0, 0}))
                  .ok());
  ASSERT_TRUE(wire::RecvStatus(*first, nullptr).ok());
  absl::StatusOr<Socket> second = ConnectTcp(server_b_->endpoint(), 1000, 2000);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(wire::RecvStatus(*second, nullptr).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(server_b_->connections_rejected(), 1u);
}

TEST_F(TcpMoverTest, ReadRemoteReturnsServedBytes) {
  // The bytes are written before the server starts: a store writes a replica before the
  // master publishes it, and that ordering travels through sockets, which ThreadSanitizer
  // cannot see. Starting the server's threads after the writes orders them visibly.
  server_b_.reset();
  FillSegment(memory_b_, kTarget, 99);
  ASSERT_TRUE(memory_b_.Write(kTarget, 300, "replica bytes").ok());
  RecordingReadObserver observer;
  memory_b_.set_read_observer(&observer);
  absl::StatusOr<std::unique_ptr<TcpDataServer>> server =
      TcpDataServer::Start(&clock_, &memory_b_, knobs_);
  ASSERT_TRUE(server.ok()) << server.status();
  server_b_ = *std::move(server);

  absl::StatusOr<std::string> bytes = ReadRemote(server_b_->endpoint(), kTarget, 300, 13, knobs_);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, "replica bytes");

  // Larger than one chunk.
  const uint64_t size = (3 << 20) + 5;
  bytes = ReadRemote(server_b_->endpoint(), kTarget, 11, size, knobs_);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(StableHash(*bytes), Checksum(memory_b_, kTarget, 11, size));

  EXPECT_EQ(ReadRemote(server_b_->endpoint(), kTarget, kSegmentBytes, 1, knobs_).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(ReadRemote(server_b_->endpoint(), SegmentId(3), 0, 1, knobs_).status().code(),
            absl::StatusCode::kNotFound);
  TcpTransportKnobs limited = knobs_;
  limited.read_bytes_max = 10;
  EXPECT_EQ(ReadRemote(server_b_->endpoint(), kTarget, 0, 11, limited).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ReadRemote("127.0.0.1:notaport", kTarget, 0, 1, knobs_).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(server_b_->reads_completed(), 2u);
  // Each served read is reported once, after its bytes; refused ones never.
  // Two connections: their reports may come in either order.
  using Read = RecordingReadObserver::Read;
  std::vector<Read> reads = observer.WaitForReads(2);
  std::sort(reads.begin(), reads.end(),
            [](const Read& a, const Read& b) { return a.offset < b.offset; });
  EXPECT_EQ(reads, (std::vector<Read>{{kTarget, 11, size}, {kTarget, 300, 13}}));
  server_b_.reset();
  memory_b_.set_read_observer(nullptr);
}

TEST_F(TcpMoverTest, ServerClosesOnMalformedFrames) {
  absl::StatusOr<Socket> socket = ConnectTcp(server_b_->endpoint(), 1000, 2000);
  ASSERT_TRUE(socket.ok());
  const std::string garbage = "this is not a frame header";
  ASSERT_TRUE(SendAll(*socket, garbage.data(), garbage.size()).ok());
  char byte;
  EXPECT_EQ(RecvAll(*socket, &byte, 1).code(), absl::StatusCode::kUnavailable);
  // A well-formed header with an oversized data frame inside a write.
  absl::StatusOr<Socket> writer = ConnectTcp(server_b_->endpoint(), 1000, 2000);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(wire::SendFrame(*writer, wire::FrameType::kWrite, wire::EncodeRange({kTarget, 0, 64}))
                  .ok());
  ASSERT_TRUE(wire::RecvStatus(*writer, nullptr).ok());
  ASSERT_TRUE(wire::SendFrame(*writer, wire::FrameType::kData, std::string(65, 'x')).ok());
  uint64_t value = 0;
  EXPECT_EQ(wire::RecvStatus(*writer, &value).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(server_b_->writes_completed(), 0u);
}

// TLS on the framed protocol (tls_stream.h): store B's data server speaks
// only TLS and requires client certificates of its CA; certificates come
// from tools/make-certs.sh at test time (skipped, saying why, without
// `openssl`).
class TlsMoverTest : public TcpMoverTest {
 protected:
  void SetUp() override {
    if (!test::HaveOpenssl()) {
      GTEST_SKIP() << test::kNoOpensslSkip;
    }
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("heatsink_tls_mover_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(MakeCerts(absl::StrCat("cluster ", dir_.string(), " 1 2")));
    ASSERT_TRUE(MakeCerts(absl::StrCat("ca ", dir_.string(), " --name other-ca")));
    ASSERT_TRUE(
        MakeCerts(absl::StrCat("client ", dir_.string(), " 2 --ca other-ca --name stranger")));
    TcpTransportKnobs knobs;
    knobs.tls_server = Context(TlsContext::Side::kServer, "master", "ca");
    knobs.tls_client = Context(TlsContext::Side::kClient, "client-1", "ca");
    ASSERT_TRUE(knobs.tls_server && knobs.tls_client);
    Start(knobs);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  static bool MakeCerts(const std::string& args) { return test::MakeCerts(args); }
  std::string Path(const std::string& file) const { return (dir_ / file).string(); }
  // A context presenting `cert` (none when empty) and trusting `ca`.
  std::shared_ptr<const TlsContext> Context(TlsContext::Side side, const std::string& cert,
                                            const std::string& ca) const {
    TlsPemFiles files;
    if (!cert.empty()) {
      files.cert_path = Path(cert + ".pem");
      files.key_path = Path(cert + ".key");
    }
    files.ca_path = Path(ca + ".pem");
    absl::StatusOr<std::shared_ptr<const TlsContext>> context = TlsContext::Create(side, files);
    EXPECT_TRUE(context.ok()) << context.status();
    return context.ok() ? *context : nullptr;
  }
  // Knobs of a client presenting `cert` and trusting `ca`.
  TcpTransportKnobs ClientKnobs(const std::string& cert, const std::string& ca = "ca") const {
    TcpTransportKnobs knobs;
    knobs.tls_client = Context(TlsContext::Side::kClient, cert, ca);
    return knobs;
  }

  std::filesystem::path dir_;
};

TEST_F(TlsMoverTest, TlsCopyMovesTheSameBytesAsAClearOne) {
  EXPECT_TRUE(absl::StartsWith(server_b_->endpoint(), "tls://")) << server_b_->endpoint();
  const uint64_t size = (3 << 20) + 5;  // several chunks
  const CopyRange range{kSource, 1000, kTarget, 64, size};
  ASSERT_TRUE(CopyAndWait(*mover_, range).ok());

  // The same copy in clear, to a third store.
  constexpr SegmentId kClearTarget(33);
  SegmentMemory memory_c{&allocator_, SegmentMemoryKnobs{}};
  ASSERT_TRUE(memory_c.Create(kClearTarget, kSegmentBytes).ok());
  absl::StatusOr<std::unique_ptr<TcpDataServer>> clear_server =
      TcpDataServer::Start(&clock_, &memory_c, TcpTransportKnobs{});
  ASSERT_TRUE(clear_server.ok());
  EXPECT_FALSE(absl::StartsWith((*clear_server)->endpoint(), "tls://"));
  ASSERT_TRUE(resolver_.Set(kClearTarget, (*clear_server)->endpoint()).ok());
  TcpDataMover clear_mover(&clock_, &memory_a_, &resolver_, TcpTransportKnobs{});
  ASSERT_TRUE(CopyAndWait(clear_mover, CopyRange{kSource, 1000, kClearTarget, 64, size}).ok());

  const uint64_t source_sum = Checksum(memory_a_, kSource, 1000, size);
  EXPECT_EQ(Checksum(memory_b_, kTarget, 64, size), source_sum);
  EXPECT_EQ(Checksum(memory_c, kClearTarget, 64, size), source_sum);
  // Reads over TLS return the same bytes.
  absl::StatusOr<std::string> read =
      ReadRemote(server_b_->endpoint(), kTarget, 64, size, knobs_);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, *memory_a_.Read(kSource, 1000, size));
  EXPECT_EQ(server_b_->writes_completed(), 1u);
  clear_mover.Shutdown();
  (*clear_server)->Shutdown();
}

TEST_F(TlsMoverTest, TlsServerRefusesClearAndUnknownClients) {
  const std::string endpoint = server_b_->endpoint();
  const std::string address = ParseDataEndpoint(endpoint).address;
  // A clear client of a TLS server: the handshake it never sent fails.
  EXPECT_EQ(ReadRemote(address, kTarget, 0, 16, TcpTransportKnobs{}).status().code(),
            absl::StatusCode::kUnavailable);
  // A "tls://" endpoint without a client context is a configuration error.
  EXPECT_EQ(ReadRemote(endpoint, kTarget, 0, 16, TcpTransportKnobs{}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  // Another CA's certificate, no certificate, a client not trusting the server.
  for (const auto& [cert, ca] : std::vector<std::pair<std::string, std::string>>{
           {"stranger", "ca"}, {"", "ca"}, {"client-1", "other-ca"}}) {
    EXPECT_EQ(ReadRemote(endpoint, kTarget, 0, 16, ClientKnobs(cert, ca)).status().code(),
              absl::StatusCode::kUnavailable)
        << cert << " / " << ca;
  }
  TcpDataMover stranger(&clock_, &memory_a_, &resolver_, ClientKnobs("stranger"));
  EXPECT_EQ(CopyAndWait(stranger, CopyRange{kSource, 0, kTarget, 0, 4096}).code(),
            absl::StatusCode::kUnavailable);
  stranger.Shutdown();
  EXPECT_EQ(server_b_->writes_completed(), 0u);
  EXPECT_EQ(server_b_->reads_completed(), 0u);
  EXPECT_EQ(*memory_b_.Read(kTarget, 0, 8), std::string(8, '\0'));
  // The store's own client certificate works.
  EXPECT_TRUE(ReadRemote(endpoint, kTarget, 0, 16, ClientKnobs("client-2")).ok());
}

TEST_F(TlsMoverTest, ContextsRefuseUnusableFiles) {
  const auto code = [](TlsContext::Side side, TlsPemFiles files) {
    return TlsContext::Create(side, files).status().code();
  };
  const auto invalid = absl::StatusCode::kInvalidArgument;
  EXPECT_EQ(code(TlsContext::Side::kServer, {Path("nope.pem"), Path("master.key"), ""}), invalid);
  EXPECT_EQ(code(TlsContext::Side::kServer, {Path("master.pem"), Path("client-1.key"), ""}),
            invalid);  // the key of another certificate
  EXPECT_EQ(code(TlsContext::Side::kServer, {"", "", Path("ca.pem")}), invalid);
  EXPECT_EQ(code(TlsContext::Side::kClient, {Path("client-1.pem"), Path("client-1.key"), ""}),
            invalid);  // a client must verify servers
  EXPECT_EQ(code(TlsContext::Side::kClient, {"", "", Path("master.key")}), invalid);
  EXPECT_TRUE(TlsContext::Create(TlsContext::Side::kClient, {"", "", Path("ca.pem")}).ok());
}

// Records what a data server asks its read gate, and refuses reads of
// offsets from `refuse_from` on.
class RecordingGate final : public ReadGate {
 public:
  absl::Status Allow(const ReadPeer& peer, const ReadQuery& query) override {
    std::lock_guard<std::mutex> lock(mu);
    peers.push_back(peer);
    queries.push_back(query);
    if (query.offset >= refuse_from) return absl::PermissionDeniedError("not yours");
    return absl::OkStatus();
  }
  std::mutex mu;
  uint64_t refuse_from = 4096;
  std::vector<ReadPeer> peers;
  std::vector<ReadQuery> queries;
};

// The TCP data server asks its gate before a READ, with the reader's
// verified certificate and the READ's copy lease; a refusal is a STATUS
// without DATA, counted, and the connection serves the next request.
TEST_F(TlsMoverTest, ReadsAskTheGateWithTheReadersCertificateAndLease) {
  RecordingGate gate;
  server_b_.reset();
  absl::StatusOr<std::unique_ptr<TcpDataServer>> server =
      TcpDataServer::Start(&clock_, &memory_b_, knobs_, nullptr, &gate);
  ASSERT_TRUE(server.ok()) << server.status();
  server_b_ = *std::move(server);
  const std::string endpoint = server_b_->endpoint();
  ASSERT_TRUE(ReadRemote(endpoint, kTarget, 0, 16, ClientKnobs("client-2"), LeaseId(77)).ok());
  EXPECT_EQ(ReadRemote(endpoint, kTarget, 8192, 16, ClientKnobs("client-2")).status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(server_b_->reads_refused(), 1u);
  EXPECT_EQ(server_b_->reads_completed(), 1u);
  {
    std::lock_guard<std::mutex> lock(gate.mu);
    ASSERT_EQ(gate.queries.size(), 2u);
    EXPECT_EQ(gate.queries[0].copy_lease, LeaseId(77));
    EXPECT_EQ(gate.queries[0].size, 16u);
    EXPECT_FALSE(gate.queries[1].copy_lease.valid());
    EXPECT_TRUE(gate.peers[0].verified);
    EXPECT_EQ(gate.peers[0].uri_sans,
              std::vector<std::string>{"spiffe://heatsink.local/heatsink/client/2"});
  }
  // One connection: refused, then served.
  absl::StatusOr<Socket> socket = ConnectDataEndpoint(endpoint, ClientKnobs("client-1"));
  ASSERT_TRUE(socket.ok()) << socket.status();
  EXPECT_FALSE(socket->secure()->PeerCertificateSha256().empty());
  EXPECT_EQ(socket->secure()->PeerCertificateSha256(), *PemCertificateSha256(Path("master.pem")));
  ASSERT_TRUE(wire::SendFrame(*socket, wire::FrameType::kRead,
                              wire::EncodeReadRange({kTarget, 8192, 16}, LeaseId()))
                  .ok());
  EXPECT_EQ(wire::RecvStatus(*socket, nullptr).code(), absl::StatusCode::kPermissionDenied);
  ASSERT_TRUE(wire::SendFrame(*socket, wire::FrameType::kRead,
                              wire::EncodeReadRange({kTarget, 0, 4}, LeaseId()))
                  .ok());
  uint64_t size = 0;
  EXPECT_TRUE(wire::RecvStatus(*socket, &size).ok());
  EXPECT_EQ(size, 4u);
}

// Reload() swaps the files new handshakes use; connections keep theirs, and
// files that do not load change nothing.
TEST_F(TlsMoverTest, AReloadedServerContextPresentsTheNewCertificate) {
  const std::string files[] = {"server.pem", "server.key"};
  std::filesystem::copy_file(Path("master.pem"), Path(files[0]));
  std::filesystem::copy_file(Path("master.key"), Path(files[1]));
  absl::StatusOr<std::shared_ptr<TlsContext>> context = TlsContext::Create(
      TlsContext::Side::kServer, {Path(files[0]), Path(files[1]), Path("ca.pem")});
  ASSERT_TRUE(context.ok()) << context.status();
  TcpTransportKnobs knobs;
  knobs.tls_server = *context;
  SegmentMemory memory{&allocator_, SegmentMemoryKnobs{}};
  ASSERT_TRUE(memory.Create(SegmentId(44), 1 << 20).ok());
  absl::StatusOr<std::unique_ptr<TcpDataServer>> server =
      TcpDataServer::Start(&clock_, &memory, knobs);
  ASSERT_TRUE(server.ok()) << server.status();
  const auto presented = [&] {
    absl::StatusOr<Socket> socket =
        ConnectDataEndpoint((*server)->endpoint(), ClientKnobs("client-1"));
    return socket.ok() ? socket->secure()->PeerCertificateSha256() : std::string();
  };
  EXPECT_EQ(presented(), *PemCertificateSha256(Path("master.pem")));
  absl::StatusOr<Socket> kept = ConnectDataEndpoint((*server)->endpoint(), ClientKnobs("client-1"));
  ASSERT_TRUE(kept.ok());
  std::filesystem::copy_file(Path("client-2.pem"), Path(files[0]),
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(Path("client-2.key"), Path(files[1]),
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_TRUE((*context)->Reload().ok());
  EXPECT_EQ((*context)->reloads(), 1);
  EXPECT_EQ(presented(), *PemCertificateSha256(Path("client-2.pem")));
  // The connection made before still works.
  ASSERT_TRUE(wire::SendFrame(*kept, wire::FrameType::kRead,
                              wire::EncodeReadRange({SegmentId(44), 0, 4}, LeaseId()))
                  .ok());
  EXPECT_TRUE(wire::RecvStatus(*kept, nullptr).ok());
  // A key of another certificate: refused, the previous files stay.
  std::filesystem::copy_file(Path("client-1.key"), Path(files[1]),
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_EQ((*context)->Reload().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*context)->reloads(), 1);
  EXPECT_EQ(presented(), *PemCertificateSha256(Path("client-2.pem")));
  (*server)->Shutdown();
}

TEST(Wire, FramesRoundTrip) {
  uint8_t header[wire::kHeaderBytes];
  wire::EncodeHeader({wire::FrameType::kRmaGrant, 1234}, header);
  absl::StatusOr<wire::FrameHeader> decoded = wire::DecodeHeader(header);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->type, wire::FrameType::kRmaGrant);
  EXPECT_EQ(decoded->payload_bytes, 1234u);
  header[0] ^= 1;
  EXPECT_FALSE(wire::DecodeHeader(header).ok());

  absl::StatusOr<wire::RangeRequest> range =
      wire::DecodeRange(wire::EncodeRange({SegmentId(5), 6, 7}));
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(range->segment, SegmentId(5));
  EXPECT_EQ(range->offset, 6u);
  EXPECT_EQ(range->size, 7u);
  EXPECT_FALSE(wire::DecodeRange("short").ok());

  // READ: the plain range, or the range and a copy lease.
  EXPECT_EQ(wire::EncodeReadRange({SegmentId(5), 6, 7}, LeaseId()),
            wire::EncodeRange({SegmentId(5), 6, 7}));
  absl::StatusOr<wire::ReadRange> read =
      wire::DecodeReadRange(wire::EncodeReadRange({SegmentId(5), 6, 7}, LeaseId(9)));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->range.offset, 6u);
  EXPECT_EQ(read->copy_lease, LeaseId(9));
  EXPECT_FALSE(wire::DecodeReadRange(wire::EncodeRange({SegmentId(5), 6, 7}) +
                                     std::string(8, '\0'))
                   .ok());  // lease 0
  EXPECT_FALSE(wire::DecodeReadRange(wire::EncodeRange({SegmentId(5), 6, 7}) + "abc").ok());

  absl::Status carried;
  uint64_t value = 0;
  ASSERT_TRUE(wire::DecodeStatus(wire::EncodeStatus(absl::OutOfRangeError("far"), 9), &carried,
                                 &value));
  EXPECT_EQ(carried, absl::OutOfRangeError("far"));
  EXPECT_EQ(value, 9u);
  EXPECT_FALSE(wire::DecodeStatus("x", &carried, &value));

  wire::RmaGrant grant{0xdeadbeef, "key", "address"};
  absl::StatusOr<wire::RmaGrant> back = wire::DecodeGrant(wire::EncodeGrant(grant));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->remote_address, 0xdeadbeefu);
  EXPECT_EQ(back->remote_key, "key");
  EXPECT_EQ(back->worker_address, "address");
  EXPECT_FALSE(wire::DecodeGrant(wire::EncodeGrant({1, "", "a"})).ok());
}

TEST(Socket, ParsesEndpoints) {
  EXPECT_TRUE(ParseEndpoint("127.0.0.1:80").ok());
  EXPECT_TRUE(ParseEndpoint("localhost:65535").ok());
  EXPECT_FALSE(ParseEndpoint("127.0.0.1").ok());
  EXPECT_FALSE(ParseEndpoint("127.0.0.1:0").ok());
  EXPECT_FALSE(ParseEndpoint("127.0.0.1:70000").ok());
  EXPECT_FALSE(ParseEndpoint("example:80").ok());
}

}  // namespace
}  // namespace heatsink::runtime
