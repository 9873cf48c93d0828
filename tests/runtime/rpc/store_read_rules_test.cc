// Covers a store's read rules and certificate rotation with the real
// processes and certificates made at test time by tools/make-certs.sh
// (runtime/rpc/read_access.h, docs/runtime.md "Who may read a range",
// "Rotating certificates"):
//   - a range read from a caller of another tenant, of no tenant, beyond the
//     objects of the store or across two tenants' objects is refused on both
//     data services (PERMISSION_DENIED, no byte sent, the store's refusal
//     counter counts each), while the objects' tenant reads them over both;
//     an expired certificate fails the handshake and is not counted;
//   - a hot object's copy between two stores that require client
//     certificates completes, and the reader gets the same bytes from the
//     copy (checksums);
//   - a read under a copy lease is served to the lease's target store only
//     while the master confirms the lease: another client presenting it, a
//     lease id that is not live, a range outside the copy's source, and the
//     lease after its copy failed are refused;
//   - SIGHUP on a store: after its PEM files are replaced, new connections to
//     both data services see the new certificate (SHA-256), a connection
//     opened before keeps working, and a client with its old certificate is
//     still served; the store's channel to the master uses its renewed
//     client certificate (a master that trusts only the new CA gets it back).
// The tests skip, saying why, when `openssl` is not installed.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "gtest/gtest.h"
#include "heatsink/store.grpc.pb.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/client/object_data_path.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/store/store_node.h"
#include "runtime/transport/socket.h"
#include "runtime/transport/tcp_data_mover.h"
#include "runtime/transport/tls_stream.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/processes_fixture.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime {
namespace {

namespace fs = std::filesystem;
using test::FreePort;
using test::HaveOpenssl;
using test::HttpGet;
using test::MetricValue;
using test::Pattern;
using test::Process;
using test::ReadLines;
using test::Wait;
using test::WaitFor;
using test::kNoOpensslSkip;
using test::MakeCerts;

constexpr char kDenied[] = "heatsink_store_reads_permission_denied_total";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What one gRPC ReadObject call got: its status and every byte it received.
struct GrpcRead {
  absl::Status status;
  std::string bytes;
  std::string server_certificate;  // PEM the server presented
};

class StoreReadRulesTest : public test::ProcessesTest {
 protected:
  void SetUp() override {
    if (!HaveOpenssl()) {
      GTEST_SKIP() << kNoOpensslSkip;
    }
    ProcessesTest::SetUp();
  }

  // The CA, the master's certificate and one per client, ID or ID:TENANT
  // (each test makes only the ones it uses: openssl takes its time).
  void MakeCluster(const std::string& clients) {
    ASSERT_TRUE(MakeCerts(absl::StrCat("cluster ", dir_.string(), " ", clients)));
  }

  std::string Path(const std::string& file) const { return (dir_ / file).string(); }

  // The master with mutual TLS (its certificate names localhost).
  std::unique_ptr<Process> StartTlsMaster(const std::vector<std::string>& sets,
                                          const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--tls-cert", Path("master.pem"), "--tls-key",
                                     Path("master.key"), "--tls-client-ca", Path("ca.pem")};
    args.insert(args.end(), extra.begin(), extra.end());
    std::unique_ptr<Process> master = StartMaster(sets, args);
    master_address_ =
        absl::StrCat("localhost:", master_address_.substr(master_address_.rfind(':') + 1));
    return master;
  }

  // A store with client certificates on both sides: `cert` for the control
  // plane, copies and both data services; readers must present theirs.
  std::unique_ptr<Process> StartTlsStore(uint64_t id, const std::string& domain,
                                         const std::string& tag, const std::string& cert,
                                         int metrics_port) {
    return StartStore(id, absl::StrCat("host-", domain), domain, {}, tag,
                      {"--tls-ca", Path("ca.pem"), "--tls-cert", Path(cert + ".pem"), "--tls-key",
                       Path(cert + ".key"), "--data-tls-cert", Path(cert + ".pem"),
                       "--data-tls-key", Path(cert + ".key"), "--data-tls-client-ca",
                       Path("ca.pem"), "--metrics-listen", absl::StrCat("127.0.0.1:", metrics_port)});
  }

  // Waits until the master lists `segment`: a store writes its endpoint
  // file before its mount has reached the master.
  bool SegmentMounted(GrpcMasterClient& rpc, SegmentId segment) {
    return WaitFor([&] {
      absl::StatusOr<std::vector<SegmentView>> segments = rpc.ListSegments();
      if (!segments.ok()) return false;
      for (const SegmentView& view : *segments) {
        if (view.location.id == segment) return true;
      }
      return false;
    });
  }

  // The store's endpoint file: data endpoint, client id, gRPC endpoint.
  std::vector<std::string> Endpoints(const std::string& tag) const {
    return ReadLines(dir_ / (tag + ".endpoint"));
  }

  std::unique_ptr<GrpcMasterClient> Connect(const std::string& cert) {
    return test::ConnectWithCertificate(&clock_, master_address_, dir_, cert);
  }

  // Data-path knobs of a reader or writer presenting `cert`.
  TcpTransportKnobs DataKnobs(const std::string& cert) const {
    TcpTransportKnobs knobs;
    knobs.connect_timeout_ms = 3000;
    knobs.io_timeout_ms = 5000;
    absl::StatusOr<std::shared_ptr<TlsContext>> context = TlsContext::Create(
        TlsContext::Side::kClient, {Path(cert + ".pem"), Path(cert + ".key"), Path("ca.pem")});
    EXPECT_TRUE(context.ok()) << context.status();
    if (context.ok()) knobs.tls_client = *context;
    return knobs;
  }

  // One ReadObject on the store's gRPC data service, on a connection of its
  // own, presenting `cert`.
  GrpcRead ReadOverGrpc(const std::string& endpoint, const std::string& cert, SegmentId segment,
                        uint64_t offset, uint64_t length, LeaseId lease = LeaseId()) const {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ReadFile(dir_ / "ca.pem");
    options.pem_cert_chain = ReadFile(dir_ / (cert + ".pem"));
    options.pem_private_key = ReadFile(dir_ / (cert + ".key"));
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub = v1::Store::NewStub(
        grpc::CreateCustomChannel(endpoint, grpc::SslCredentials(options), args));
    return ReadWith(*stub, segment, offset, length, lease);
  }

  static GrpcRead ReadWith(v1::Store::Stub& stub, SegmentId segment, uint64_t offset,
                           uint64_t length, LeaseId lease = LeaseId()) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ReadObjectRequest req;
    req.set_segment_id(segment.value);
    req.set_offset(offset);
    req.set_length(length);
    req.set_copy_lease_id(lease.value);
    auto reader = stub.ReadObject(&ctx, req);
    GrpcRead out;
    v1::DataChunk chunk;
    while (reader->Read(&chunk)) out.bytes += chunk.data();
    const grpc::Status status = reader->Finish();
    out.status = absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                              status.error_message());
    if (ctx.auth_context() != nullptr) {
      for (const grpc::string_ref& pem :
           ctx.auth_context()->FindPropertyValues("x509_pem_cert")) {
        out.server_certificate.assign(pem.data(), pem.size());
      }
    }
    return out;
  }

  // The certificate the TCP data endpoint presents to a new connection of a
  // reader holding `cert` (SHA-256), or empty when the handshake fails.
  std::string TcpCertificate(const std::string& endpoint, const std::string& cert) const {
    absl::StatusOr<Socket> socket = ConnectDataEndpoint(endpoint, DataKnobs(cert));
    if (!socket.ok() || socket->secure() == nullptr) return "";
    return socket->secure()->PeerCertificateSha256();
  }

  int64_t Denied(int metrics_port) const {
    return MetricValue(HttpGet(absl::StrCat("127.0.0.1:", metrics_port), "/metrics"), kDenied);
  }

  std::optional<ReplicaDescriptor> Replica(GrpcMasterClient& master, ClientId reader,
                                           const ObjectName& name) {
    absl::StatusOr<GetReplicaListResponse> listed = Wait<absl::StatusOr<GetReplicaListResponse>>(
        [&](auto done) { master.GetReplicaList({name, reader, "a"}, std::move(done)); });
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (!listed.ok() || listed->replicas.empty()) return std::nullopt;
    return listed->replicas.front();
  }
};

// Puts `bytes` as `name` into `segment` with the master client `master`
// (whose certificate proves `client`), over the TLS data path.
void Put(GrpcMasterClient& master, ClientId client, const TcpTransportKnobs& knobs,
         SegmentId segment, const ObjectName& name, const std::string& bytes) {
  TcpObjectDataPath path(knobs);
  HeatsinkClientOptions options;
  options.client_id = client;
  options.tenant = name.tenant;
  options.domain = "a";
  options.preferred_segments = {segment};
  HeatsinkClient writer(&master, &path, options);
  const absl::Status put = writer.Put(name.key, bytes);
  ASSERT_TRUE(put.ok()) << put;
}

TEST_F(StoreReadRulesTest, RangeReadsFollowTheTenantOfTheObjects) {
  MakeCluster("1 10:team-a 11:team-b 12");
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", dir_.string(),
                                     " 10 --tenant team-a --name expired --not-before "
                                     "20200101000000Z --not-after 20200102000000Z")));
  std::unique_ptr<Process> master = StartTlsMaster({"dynamic_replication_mode=off"});
  const int metrics = FreePort();
  std::unique_ptr<Process> store = StartTlsStore(1, "a", "store_a", "client-1", metrics);
  const std::vector<std::string> endpoints = Endpoints("store_a");
  ASSERT_EQ(endpoints.size(), 3u);
  const std::string& tcp = endpoints[0];
  const std::string& grpc = endpoints[2];
  EXPECT_EQ(tcp.rfind("tls://", 0), 0u) << tcp;
  EXPECT_TRUE(LogSays("store_a.log", "readers checked"));

  std::unique_ptr<GrpcMasterClient> team_a = Connect("client-10");
  std::unique_ptr<GrpcMasterClient> plain = Connect("client-12");
  ASSERT_TRUE(team_a && plain);
  const SegmentId segment = StoreSegmentId(ClientId(1), 0);
  ASSERT_TRUE(SegmentMounted(*plain, segment));
  const ObjectName secret{"team-a", "secret"};
  const ObjectName open{"", "open"};
  const std::string secret_bytes = Pattern(1, (256 << 10) + 3);
  const std::string open_bytes = Pattern(2, 4096);
  Put(*team_a, ClientId(10), DataKnobs("client-10"), segment, secret, secret_bytes);
  Put(*plain, ClientId(12), DataKnobs("client-12"), segment, open, open_bytes);
  const std::optional<ReplicaDescriptor> s = Replica(*team_a, ClientId(10), secret);
  const std::optional<ReplicaDescriptor> o = Replica(*plain, ClientId(12), open);
  ASSERT_TRUE(s && o);
  ASSERT_EQ(s->segment_id, segment);

  // The objects' tenants read them over both data services.
  const int64_t denied_before = Denied(metrics);
  EXPECT_EQ(denied_before, 0);
  absl::StatusOr<std::string> own =
      ReadRemote(tcp, segment, s->offset, s->size_bytes, DataKnobs("client-10"));
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(*own, secret_bytes);
  GrpcRead own_grpc = ReadOverGrpc(grpc, "client-10", segment, s->offset, s->size_bytes);
  ASSERT_TRUE(own_grpc.status.ok()) << own_grpc.status;
  EXPECT_EQ(own_grpc.bytes, secret_bytes);
  absl::StatusOr<std::string> open_read =
      ReadRemote(tcp, segment, o->offset, o->size_bytes, DataKnobs("client-12"));
  ASSERT_TRUE(open_read.ok()) << open_read.status();
  EXPECT_EQ(*open_read, open_bytes);

  // Another tenant, no tenant: refused on both services, nothing sent.
  EXPECT_EQ(ReadRemote(tcp, segment, s->offset, s->size_bytes, DataKnobs("client-11"))
                .status()
                .code(),
            absl::StatusCode::kPermissionDenied);
  GrpcRead other = ReadOverGrpc(grpc, "client-11", segment, s->offset, 1024);
  EXPECT_EQ(other.status.code(), absl::StatusCode::kPermissionDenied) << other.status;
  EXPECT_TRUE(other.bytes.empty());
  EXPECT_EQ(ReadRemote(tcp, segment, s->offset, 16, DataKnobs("client-12")).status().code(),
            absl::StatusCode::kPermissionDenied);
  // The owner tenant beyond its object, and across both objects.
  const uint64_t end = std::max(s->offset + s->size_bytes, o->offset + o->size_bytes);
  EXPECT_EQ(ReadRemote(tcp, segment, end, 4096, DataKnobs("client-10")).status().code(),
            absl::StatusCode::kPermissionDenied);
  const uint64_t begin = std::min(s->offset, o->offset);
  GrpcRead across = ReadOverGrpc(grpc, "client-10", segment, begin, end - begin);
  EXPECT_EQ(across.status.code(), absl::StatusCode::kPermissionDenied) << across.status;
  EXPECT_TRUE(across.bytes.empty());
  // An expired certificate fails the handshake: refused before the rules.
  EXPECT_EQ(ReadRemote(tcp, segment, s->offset, 16, DataKnobs("expired")).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(Denied(metrics), denied_before + 5);

  team_a.reset();
  plain.reset();
  store->Signal(SIGTERM);
  EXPECT_EQ(store->Wait(), 0) << ReadFile(dir_ / "store_a.log");
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

TEST_F(StoreReadRulesTest, CopiesBetweenStoresWithClientCertificatesComplete) {
  MakeCluster("1 2 10:team-a");
  std::unique_ptr<Process> master = StartTlsMaster({"dynamic_replication_mode=enforce"});
  const int metrics_a = FreePort();
  const int metrics_b = FreePort();
  std::unique_ptr<Process> store_a = StartTlsStore(1, "a", "store_a", "client-1", metrics_a);
  std::unique_ptr<Process> store_b = StartTlsStore(2, "b", "store_b", "client-2", metrics_b);
  std::unique_ptr<GrpcMasterClient> rpc = Connect("client-10");
  ASSERT_TRUE(rpc);
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<std::vector<SegmentView>> segments = rpc->ListSegments();
    return segments.ok() && segments->size() == 2;
  }));
  const SegmentId segment_a = StoreSegmentId(ClientId(1), 0);
  const SegmentId segment_b = StoreSegmentId(ClientId(2), 0);
  const std::string bytes = Pattern(11, (3 << 20) + 17);
  Put(*rpc, ClientId(10), DataKnobs("client-10"), segment_a, {"team-a", "hot"}, bytes);

  // Hot reads from domain b, of tenant team-a: the object is copied into
  // store b over TLS, and read there.
  TcpObjectDataPath path(DataKnobs("client-10"));
  HeatsinkClientOptions options = test::SpreadReaderOnHostB();
  options.client_id = ClientId(10);
  options.tenant = "team-a";
  HeatsinkClient reader(rpc.get(), &path, options);
  bool local = false;
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<GetResult> got = reader.Get("hot");
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return true;
    EXPECT_EQ(StableHash(got->bytes), StableHash(bytes));
    local = got->segment == segment_b;
    return local;
  }, absl::Seconds(15)));
  EXPECT_TRUE(local) << "no read was served from the copy in domain b";
  EXPECT_EQ(Denied(metrics_a), 0);
  EXPECT_EQ(Denied(metrics_b), 0);

  rpc.reset();
  store_a->Signal(SIGTERM);
  store_b->Signal(SIGTERM);
  EXPECT_EQ(store_a->Wait(), 0);
  EXPECT_EQ(store_b->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
  bool completed = false;
  for (const std::string& line : ReadLines(dir_ / "store_a.log")) {
    if (line.find("copies completed 1") != std::string::npos) completed = true;
  }
  EXPECT_TRUE(completed) << ReadFile(dir_ / "store_a.log");
}

// The lease id of the first decision that granted one, or 0.
uint64_t GrantedLease(const fs::path& decisions) {
  for (const std::string& line : ReadLines(decisions)) {
    const size_t at = line.find("\"lease_id\":");
    if (at == std::string::npos) continue;
    uint64_t lease = 0;
    const size_t from = at + 11;
    const size_t to = line.find_first_not_of("0123456789", from);
    if (absl::SimpleAtoi(line.substr(from, to - from), &lease) && lease != 0) return lease;
  }
  return 0;
}

TEST_F(StoreReadRulesTest, ReadsUnderACopyLeaseNeedTheMastersConfirmation) {
  MakeCluster("1 5:other 6:other 12");
  std::unique_ptr<Process> master = StartTlsMaster(
      {"dynamic_replication_mode=enforce"}, {"--decisions", Path("decisions.jsonl")});
  const int metrics = FreePort();
  std::unique_ptr<Process> store = StartTlsStore(1, "a", "store_a", "client-1", metrics);
  const std::string grpc = Endpoints("store_a").at(2);

  // Client 5 (tenant `other`) plays the copy's target store in domain b: its
  // segment's data endpoint accepts connections and never answers, so the
  // copy out of store a stays in flight, and its lease live, until the
  // listener closes.
  absl::StatusOr<Socket> black_hole = ListenTcp("127.0.0.1", 0, 4);
  ASSERT_TRUE(black_hole.ok()) << black_hole.status();
  absl::StatusOr<int> hole_port = LocalPort(*black_hole);
  ASSERT_TRUE(hole_port.ok());
  std::unique_ptr<GrpcMasterClient> target = Connect("client-5");
  ASSERT_TRUE(target);
  ASSERT_TRUE(Wait<absl::Status>([&](auto done) {
                target->RegisterClient({ClientId(5), "host-b", "b"}, std::move(done));
              }).ok());
  MountSegmentRequest mount;
  mount.segment_id = StoreSegmentId(ClientId(5), 0);
  mount.name = "target";
  mount.host = "host-b";
  mount.domain = "b";
  mount.capacity_bytes = 1 << 20;
  mount.transport_endpoint = absl::StrCat("127.0.0.1:", *hole_port);
  ASSERT_TRUE(Wait<absl::Status>([&](auto done) {
                target->MountSegment(ClientId(5), mount, std::move(done));
              }).ok());

  std::unique_ptr<GrpcMasterClient> owner = Connect("client-12");
  ASSERT_TRUE(owner);
  const SegmentId segment = StoreSegmentId(ClientId(1), 0);
  ASSERT_TRUE(SegmentMounted(*owner, segment));
  const ObjectName name{"", "hot"};
  const std::string bytes = Pattern(7, 256 << 10);
  Put(*owner, ClientId(12), DataKnobs("client-12"), segment, name, bytes);
  const std::optional<ReplicaDescriptor> source = Replica(*owner, ClientId(12), name);
  ASSERT_TRUE(source);
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Wait<absl::StatusOr<GetReplicaListResponse>>([&](auto done) {
                  owner->GetReplicaList({name, ClientId(12), "b"}, std::move(done));
                }).ok());
  }
  uint64_t lease = 0;
  ASSERT_TRUE(WaitFor([&] { return (lease = GrantedLease(dir_ / "decisions.jsonl")) != 0; },
                      absl::Seconds(10)));

  // Without the lease, client 5 is of another tenant: refused.
  EXPECT_EQ(ReadOverGrpc(grpc, "client-5", segment, source->offset, source->size_bytes)
                .status.code(),
            absl::StatusCode::kPermissionDenied);
  // With it, the copy's target reads the source range.
  GrpcRead leased;
  ASSERT_TRUE(WaitFor([&] {
    leased = ReadOverGrpc(grpc, "client-5", segment, source->offset, source->size_bytes,
                          LeaseId(lease));
    return leased.status.ok();
  }, absl::Seconds(5))) << leased.status;
  EXPECT_EQ(leased.bytes, bytes);
  // Someone else's lease, a lease that is not live, a range beyond the source.
  GrpcRead stolen = ReadOverGrpc(grpc, "client-6", segment, source->offset, source->size_bytes,
                                 LeaseId(lease));
  EXPECT_EQ(stolen.status.code(), absl::StatusCode::kPermissionDenied) << stolen.status;
  EXPECT_TRUE(stolen.bytes.empty());
  EXPECT_EQ(ReadOverGrpc(grpc, "client-5", segment, source->offset, source->size_bytes,
                         LeaseId(lease + 1000))
                .status.code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ReadOverGrpc(grpc, "client-5", segment, source->offset, source->size_bytes + 1,
                         LeaseId(lease))
                .status.code(),
            absl::StatusCode::kPermissionDenied);
  // The copy fails (its target resets the connection): the lease ends, and
  // within the store's reuse bound (1 s) the stale lease is refused.
  black_hole->Close();
  GrpcRead stale;
  EXPECT_TRUE(WaitFor([&] {
    stale = ReadOverGrpc(grpc, "client-5", segment, source->offset, source->size_bytes,
                         LeaseId(lease));
    return stale.status.code() == absl::StatusCode::kPermissionDenied;
  }, absl::Seconds(5))) << stale.status;
  EXPECT_TRUE(stale.bytes.empty());
  EXPECT_GE(Denied(metrics), 5);

  target.reset();
  owner.reset();
  store->Signal(SIGTERM);
  EXPECT_EQ(store->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

TEST_F(StoreReadRulesTest, SighupRotatesTheStoresCertificates) {
  // The store serves its data with a certificate of its own (`store-data`),
  // replaced by `store-data-new` (same CA, same identity).
  MakeCluster("1 12");
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", dir_.string(), " 1 --name store-data")));
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", dir_.string(), " 1 --name store-data-new")));
  std::unique_ptr<Process> master = StartTlsMaster({"dynamic_replication_mode=off"});
  const int metrics = FreePort();
  std::unique_ptr<Process> store = StartStore(
      1, "host-a", "a", {}, "store_a",
      {"--tls-ca", Path("ca.pem"), "--tls-cert", Path("client-1.pem"), "--tls-key",
       Path("client-1.key"), "--data-tls-cert", Path("store-data.pem"), "--data-tls-key",
       Path("store-data.key"), "--data-tls-client-ca", Path("ca.pem"), "--metrics-listen",
       absl::StrCat("127.0.0.1:", metrics)});
  const std::vector<std::string> endpoints = Endpoints("store_a");
  ASSERT_EQ(endpoints.size(), 3u);
  const std::string& tcp = endpoints[0];
  const std::string& grpc = endpoints[2];
  std::unique_ptr<GrpcMasterClient> plain = Connect("client-12");
  ASSERT_TRUE(plain);
  const SegmentId segment = StoreSegmentId(ClientId(1), 0);
  ASSERT_TRUE(SegmentMounted(*plain, segment));
  const std::string bytes = Pattern(3, 8192);
  Put(*plain, ClientId(12), DataKnobs("client-12"), segment, {"", "k"}, bytes);
  const std::optional<ReplicaDescriptor> r = Replica(*plain, ClientId(12), {"", "k"});
  ASSERT_TRUE(r);

  const absl::StatusOr<std::string> old_sha = PemCertificateSha256(Path("store-data.pem"));
  const absl::StatusOr<std::string> new_sha = PemCertificateSha256(Path("store-data-new.pem"));
  ASSERT_TRUE(old_sha.ok() && new_sha.ok());
  ASSERT_NE(*old_sha, *new_sha);
  EXPECT_EQ(TcpCertificate(tcp, "client-12"), *old_sha);
  const std::string old_pem = ReadFile(dir_ / "store-data.pem");
  const std::string new_pem = ReadFile(dir_ / "store-data-new.pem");
  GrpcRead before = ReadOverGrpc(grpc, "client-12", segment, r->offset, r->size_bytes);
  ASSERT_TRUE(before.status.ok()) << before.status;
  EXPECT_EQ(before.server_certificate, old_pem);
  // A connection opened before the rotation.
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = ReadFile(dir_ / "ca.pem");
  options.pem_cert_chain = ReadFile(dir_ / "client-12.pem");
  options.pem_private_key = ReadFile(dir_ / "client-12.key");
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto kept = v1::Store::NewStub(
      grpc::CreateCustomChannel(grpc, grpc::SslCredentials(options), args));
  ASSERT_TRUE(ReadWith(*kept, segment, r->offset, r->size_bytes).status.ok());

  fs::copy_file(dir_ / "store-data-new.pem", dir_ / "store-data.pem",
                fs::copy_options::overwrite_existing);
  fs::copy_file(dir_ / "store-data-new.key", dir_ / "store-data.key",
                fs::copy_options::overwrite_existing);
  store->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return TcpCertificate(tcp, "client-12") == *new_sha; },
                      absl::Seconds(5)));
  GrpcRead after;
  EXPECT_TRUE(WaitFor([&] {
    after = ReadOverGrpc(grpc, "client-12", segment, r->offset, r->size_bytes);
    return after.server_certificate == new_pem;
  }, absl::Seconds(5)));
  EXPECT_TRUE(after.status.ok()) << after.status;
  EXPECT_EQ(after.bytes, bytes);
  // The connection from before still reads, and so does a client whose
  // certificate was made before the rotation.
  GrpcRead still = ReadWith(*kept, segment, r->offset, r->size_bytes);
  EXPECT_TRUE(still.status.ok()) << still.status;
  EXPECT_EQ(still.bytes, bytes);
  absl::StatusOr<std::string> tcp_read =
      ReadRemote(tcp, segment, r->offset, r->size_bytes, DataKnobs("client-12"));
  ASSERT_TRUE(tcp_read.ok()) << tcp_read.status();
  EXPECT_EQ(*tcp_read, bytes);
  EXPECT_TRUE(LogSays("store_a.log", "reload (SIGHUP): TCP data endpoint"));

  // A key that does not match its certificate changes nothing.
  fs::copy_file(dir_ / "client-12.key", dir_ / "store-data.key",
                fs::copy_options::overwrite_existing);
  store->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return LogSays("store_a.log", "the previous ones stay"); }));
  EXPECT_EQ(TcpCertificate(tcp, "client-12"), *new_sha);

  kept.reset();
  plain.reset();
  store->Signal(SIGTERM);
  EXPECT_EQ(store->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

// The store's channel to the master uses the renewed client certificate
// after SIGHUP: a master restarted on the same address that trusts only the
// new certificate's CA gets the store back.
TEST_F(StoreReadRulesTest, SighupRenewsTheStoresChannelToTheMaster) {
  MakeCluster("1");
  ASSERT_TRUE(MakeCerts(absl::StrCat("ca ", dir_.string(), " --name ca2")));
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", dir_.string(), " 1 --ca ca2 --name renewed")));
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", dir_.string(), " 12 --ca ca2 --name reader")));
  {
    std::ofstream both(dir_ / "both.pem", std::ios::binary);
    both << ReadFile(dir_ / "ca.pem") << ReadFile(dir_ / "ca2.pem");
  }
  const std::string listen = absl::StrCat("127.0.0.1:", FreePort());
  const std::vector<std::string> master_tls = {"--tls-cert", Path("master.pem"), "--tls-key",
                                               Path("master.key")};
  std::vector<std::string> first_args = master_tls;
  first_args.insert(first_args.end(), {"--tls-client-ca", Path("both.pem")});
  std::unique_ptr<Process> master =
      StartMaster({"dynamic_replication_mode=off"}, first_args, listen);
  master_address_ =
      absl::StrCat("localhost:", master_address_.substr(master_address_.rfind(':') + 1));
  std::unique_ptr<Process> store = StartStore(
      1, "host-a", "a", {}, "store_a",
      {"--tls-ca", Path("ca.pem"), "--tls-cert", Path("client-1.pem"), "--tls-key",
       Path("client-1.key")});
  std::unique_ptr<GrpcMasterClient> reader = Connect("reader");
  ASSERT_TRUE(reader);
  const auto mounted = [&] {
    absl::StatusOr<std::vector<SegmentView>> segments = reader->ListSegments();
    return segments.ok() && segments->size() == 1;
  };
  ASSERT_TRUE(WaitFor(mounted));

  fs::copy_file(dir_ / "renewed.pem", dir_ / "client-1.pem", fs::copy_options::overwrite_existing);
  fs::copy_file(dir_ / "renewed.key", dir_ / "client-1.key", fs::copy_options::overwrite_existing);
  store->Signal(SIGHUP);
  ASSERT_TRUE(WaitFor([&] {
    return LogSays("store_a.log", "channel to the master --tls-ca/--tls-cert/--tls-key read again");
  }));
  // A new master at the same address trusts only the new CA.
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
  std::vector<std::string> second_args = master_tls;
  second_args.insert(second_args.end(), {"--tls-client-ca", Path("ca2.pem")});
  master = StartMaster({"dynamic_replication_mode=off"}, second_args, listen);
  master_address_ =
      absl::StrCat("localhost:", master_address_.substr(master_address_.rfind(':') + 1));
  reader = Connect("reader");
  ASSERT_TRUE(reader);
  EXPECT_TRUE(WaitFor(mounted, absl::Seconds(10))) << "the store did not come back";

  reader.reset();
  store->Signal(SIGTERM);
  EXPECT_EQ(store->Wait(), 0);
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

}  // namespace
}  // namespace heatsink::runtime
