// Covers callers' identities proven by client certificates
// (runtime/rpc/certificate_identity.h, docs/runtime.md "Identities from
// certificates", "Rotating certificates"):
//   - the SAN-to-identity mapping: both URI forms, URIs that are not ours
//     ignored, malformed heatsink URIs and two identities refused, the
//     inverse IdentityUri, trust-domain validation;
//   - with the real heatsink-master process and certificates made at test
//     time by tools/make-certs.sh: a client whose certificate proves client 4
//     and which claims client 3 in metadata gets PERMISSION_DENIED on every
//     object call, on FetchTasks and on DynamicReplicaCopyStart of client 3's
//     leased copy, and nothing changes (object count, used bytes, heat-window
//     observations; the lease still starts for client 3 afterwards);
//   - a certificate from another CA and an expired certificate are refused at
//     the handshake; a certificate of another trust domain connects but
//     proves no client;
//   - the master says once, at start, whether identities are asserted or
//     proven;
//   - rotation: after new PEM files and SIGHUP, new connections get the new
//     server certificate and the new client CA is accepted, while clients
//     with certificates of the old CA (still in the bundle) keep working until
//     theirs expire; a reload of a bad key changes nothing.
// Tests that need `openssl` skip, saying why, when it is not installed.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "gtest/gtest.h"
#include "heatsink/master.grpc.pb.h"
#include "runtime/env/notification.h"
#include "runtime/env/steady_clock.h"
#include "runtime/rpc/certificate_identity.h"
#include "runtime/rpc/grpc_master_client.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime {
namespace {

namespace fs = std::filesystem;
using test::HttpGet;
using test::MetricValue;
using test::Process;
using test::ReadLines;
using test::WaitFor;

constexpr char kDomain[] = "heatsink.local";

absl::StatusOr<std::optional<CertificateIdentity>> Map(const std::vector<std::string>& sans) {
  return IdentityFromUriSans(sans, kDomain);
}

TEST(CertificateIdentity, BothFormsMapToClientAndTenant) {
  absl::StatusOr<std::optional<CertificateIdentity>> plain =
      Map({"spiffe://heatsink.local/heatsink/client/3"});
  ASSERT_TRUE(plain.ok()) << plain.status();
  ASSERT_TRUE(plain->has_value());
  EXPECT_EQ((*plain)->client, ClientId(3));
  EXPECT_EQ((*plain)->tenant, "");
  absl::StatusOr<std::optional<CertificateIdentity>> tenant =
      Map({"https://example.com/x", "spiffe://heatsink.local/heatsink/tenant/team-a.1_b/client/"
                                    "18446744073709551615"});
  ASSERT_TRUE(tenant.ok()) << tenant.status();
  ASSERT_TRUE(tenant->has_value());
  EXPECT_EQ((*tenant)->client, ClientId(18446744073709551615ull));
  EXPECT_EQ((*tenant)->tenant, "team-a.1_b");
  for (const CertificateIdentity& identity :
       {CertificateIdentity{ClientId(7), ""}, CertificateIdentity{ClientId(9), "t"}}) {
    absl::StatusOr<std::optional<CertificateIdentity>> back =
        Map({IdentityUri(kDomain, identity)});
    ASSERT_TRUE(back.ok() && back->has_value());
    EXPECT_EQ(**back, identity);
  }
}

TEST(CertificateIdentity, UrisThatAreNotOursAreIgnored) {
  for (const char* san : {"spiffe://other.domain/heatsink/client/3",
                          "spiffe://heatsink.localx/heatsink/client/3",
                          "spiffe://heatsink.local/other/client/3",
                          "spiffe://heatsink.local/heatsinkclient/3",
                          "SPIFFE://heatsink.local/heatsink/client/3",
                          "http://heatsink.local/heatsink/client/3", "", "localhost"}) {
    absl::StatusOr<std::optional<CertificateIdentity>> mapped = Map({san});
    ASSERT_TRUE(mapped.ok()) << san << ": " << mapped.status();
    EXPECT_FALSE(mapped->has_value()) << san;
  }
  absl::StatusOr<std::optional<CertificateIdentity>> none = Map({});
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
}

TEST(CertificateIdentity, MalformedHeatsinkUrisAreRefused) {
  for (const char* san : {"spiffe://heatsink.local/heatsink/client/0",
                          "spiffe://heatsink.local/heatsink/client/03",
                          "spiffe://heatsink.local/heatsink/client/+3",
                          "spiffe://heatsink.local/heatsink/client/-3",
                          "spiffe://heatsink.local/heatsink/client/3/",
                          "spiffe://heatsink.local/heatsink/client/3?x=1",
                          "spiffe://heatsink.local/heatsink/client/3#f",
                          "spiffe://heatsink.local/heatsink/client/18446744073709551616",
                          "spiffe://heatsink.local/heatsink/client/",
                          "spiffe://heatsink.local/heatsink/client//3",
                          "spiffe://heatsink.local/heatsink/",
                          "spiffe://heatsink.local/heatsink/tenant//client/3",
                          "spiffe://heatsink.local/heatsink/tenant/../client/3",
                          "spiffe://heatsink.local/heatsink/tenant/a%2Fb/client/3",
                          "spiffe://heatsink.local/heatsink/tenant/a/client/3/extra",
                          "spiffe://heatsink.local/heatsink/tenant/a/b/client/3"}) {
    absl::StatusOr<std::optional<CertificateIdentity>> mapped = Map({san});
    EXPECT_EQ(mapped.status().code(), absl::StatusCode::kInvalidArgument) << san;
  }
  const std::string long_tenant(kCertificateTenantBytesMax + 1, 't');
  EXPECT_FALSE(
      Map({absl::StrCat("spiffe://heatsink.local/heatsink/tenant/", long_tenant, "/client/3")})
          .ok());
  // Two identities, even equal ones, are ambiguous.
  EXPECT_EQ(Map({"spiffe://heatsink.local/heatsink/client/3",
                 "spiffe://heatsink.local/heatsink/client/3"})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Map(std::vector<std::string>(kUriSansMax + 1, "https://x")).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CertificateIdentity, TrustDomainsAreValidated) {
  EXPECT_TRUE(ValidateTrustDomain("heatsink.local").ok());
  EXPECT_TRUE(ValidateTrustDomain("prod-1_eu.example").ok());
  for (const std::string& bad : {std::string(), std::string("Heatsink.local"),
                                 std::string("a/b"), std::string("a:1"),
                                 std::string(kTrustDomainBytesMax + 1, 'a')}) {
    absl::Status status = ValidateTrustDomain(bad);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(absl::StrContains(status.message(), "--tls-trust-domain")) << status;
  }
  RpcOptions rpc;
  rpc.tls.cert_path = "server.pem";
  rpc.tls.key_path = "server.key";
  rpc.tls.client_ca_path = "ca.pem";
  rpc.tls.trust_domain = "Bad";
  EXPECT_EQ(rpc.Validate().code(), absl::StatusCode::kInvalidArgument);
  RpcOptions ca_only;
  ca_only.tls.client_ca_path = "ca.pem";
  EXPECT_EQ(ca_only.Validate().code(), absl::StatusCode::kInvalidArgument);
}

using test::HaveOpenssl;
using test::kNoOpensslSkip;
using test::MakeCerts;

using test::Wait;

absl::Status Call(const std::function<void(MasterClient::StatusCallback)>& issue) {
  return Wait<absl::Status>(
      [&](absl::AnyInvocable<void(absl::Status) &&> done) { issue(std::move(done)); });
}

class IdentityProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveOpenssl()) {
      GTEST_SKIP() << kNoOpensslSkip;
    }
    dir_ = fs::temp_directory_path() /
           absl::StrCat("heatsink_identity_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    ASSERT_TRUE(MakeCerts(absl::StrCat("cluster ", dir_.string(), " 3 4 5")));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string Path(const std::string& file) const { return (dir_ / file).string(); }

  // heatsink-master with TLS and client certificates (unless `plaintext`),
  // enforce mode, 4 reads in 1 s cross the hit count, and `extra_args`.
  // `cert`, `ca`: DIR/`cert`.pem and .key, DIR/`ca`.pem.
  std::unique_ptr<Process> StartMaster(const std::vector<std::string>& extra_args,
                                       bool plaintext = false,
                                       const std::string& cert = "master",
                                       const std::string& ca = "ca") {
    const fs::path address_file = dir_ / "master.address";
    std::vector<std::string> argv = {std::string(HEATSINK_TOOLS_DIR) + "/heatsink-master",
                                     "--listen", "127.0.0.1:0", "--metrics-listen",
                                     "127.0.0.1:0", "--address-file", address_file.string()};
    if (!plaintext) {
      for (const std::string& arg : {std::string("--tls-cert"), Path(cert + ".pem"),
                                     std::string("--tls-key"), Path(cert + ".key"),
                                     std::string("--tls-client-ca"), Path(ca + ".pem")}) {
        argv.push_back(arg);
      }
    }
    for (const char* set :
         {"dynamic_replication_mode=enforce", "dynamic_replication_domain_aware=true",
          "dynamic_replication_heat_window_seconds=1",
          "dynamic_replication_admission_qps_threshold=4"}) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    auto master = std::make_unique<Process>(argv, std::vector<std::string>{}, dir_ / "master.log");
    EXPECT_TRUE(WaitFor([&] { return ReadLines(address_file).size() == 2; }))
        << "the master did not start";
    const std::vector<std::string> lines = ReadLines(address_file);
    if (lines.size() == 2) {
      // The master's certificate names localhost.
      master_address_ = absl::StrCat("localhost:", lines[0].substr(lines[0].rfind(':') + 1));
      metrics_address_ = lines[1];
    }
    return master;
  }

  // A client presenting certificate `cert` (DIR/`cert`.pem), sending
  // `metadata_id` with the calls whose interface names no caller.
  std::unique_ptr<GrpcMasterClient> Connect(const std::string& cert, uint64_t metadata_id = 0,
                                            const std::string& ca = "ca") {
    return test::ConnectWithCertificate(&clock_, master_address_, dir_, cert, ca, metadata_id);
  }

  std::string Read(const std::string& file) const {
    std::ifstream in(dir_ / file, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }
  void Write(const std::string& file, const std::string& text) const {
    std::ofstream out(dir_ / file, std::ios::binary | std::ios::trunc);
    out << text;
  }

  // The certificate the master presents to a new connection of a client
  // holding `cert`; empty when the handshake fails.
  std::string PresentedCertificate(const std::string& cert) const {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = Read("ca.pem");
    options.pem_cert_chain = Read(cert + ".pem");
    options.pem_private_key = Read(cert + ".key");
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own
    auto stub = v1::Master::NewStub(
        grpc::CreateCustomChannel(master_address_, grpc::SslCredentials(options), args));
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    v1::Empty req, resp;
    if (!stub->Ping(&ctx, req, &resp).ok() || ctx.auth_context() == nullptr) return "";
    for (const grpc::string_ref& pem : ctx.auth_context()->FindPropertyValues("x509_pem_cert")) {
      return std::string(pem.data(), pem.size());
    }
    return "";
  }

  std::string LogText() const {
    std::string text;
    for (const std::string& line : ReadLines(dir_ / "master.log")) text += line + "\n";
    return text;
  }

  SteadyClock clock_;  // the test process's clock, read by its master clients
  fs::path dir_;
  std::string master_address_;
  std::string metrics_address_;
};

// Registers `client` in `domain` and mounts one segment `segment` for it.
void RegisterWithSegment(GrpcMasterClient& rpc, ClientId client, const std::string& domain,
                         SegmentId segment) {
  ASSERT_TRUE(Call([&](auto done) {
                rpc.RegisterClient({client, absl::StrCat("host-", domain), domain},
                                   std::move(done));
              }).ok());
  MountSegmentRequest mount;
  mount.segment_id = segment;
  mount.name = absl::StrCat("segment-", segment.value);
  mount.host = absl::StrCat("host-", domain);
  mount.domain = domain;
  mount.capacity_bytes = 1 << 20;
  mount.transport_endpoint = "127.0.0.1:1";
  const absl::Status mounted =
      Call([&](auto done) { rpc.MountSegment(client, mount, std::move(done)); });
  ASSERT_TRUE(mounted.ok()) << mounted;
}

TEST_F(IdentityProcessTest, ImpersonationIsRefusedOnEveryCallAndChangesNothing) {
  std::unique_ptr<Process> master =
      StartMaster({"--tenant", "3=team-a", "--tenant", "4=team-b", "--tenant", "5=team-a"});
  ASSERT_FALSE(master_address_.empty());
  std::unique_ptr<GrpcMasterClient> owner = Connect("client-3", 3);
  std::unique_ptr<GrpcMasterClient> target = Connect("client-5", 5);
  std::unique_ptr<GrpcMasterClient> impostor = Connect("client-4", 3);  // claims 3
  ASSERT_TRUE(owner && target && impostor);
  const ClientId kOwner(3), kImpostor(4);
  RegisterWithSegment(*owner, kOwner, "a", SegmentId(300));
  RegisterWithSegment(*target, ClientId(5), "b", SegmentId(500));
  const ObjectName name{"team-a", "k"};
  PutStartRequest put;
  put.name = name;
  put.size_bytes = 100;
  put.preferred_segments = {SegmentId(300)};
  absl::StatusOr<PutStartResponse> started = Wait<absl::StatusOr<PutStartResponse>>(
      [&](auto done) { owner->PutStart(kOwner, put, std::move(done)); });
  ASSERT_TRUE(started.ok()) << started.status();
  const Version version = started->version;
  ASSERT_TRUE(Call([&](auto done) { owner->PutEnd(kOwner, {name, version}, std::move(done)); })
                  .ok());

  const std::string before = HttpGet(metrics_address_, "/metrics");
  ASSERT_EQ(MetricValue(before, "heatsink_master_objects"), 1) << before;
  const int64_t used_bytes = MetricValue(before, "heatsink_master_used_bytes");
  const int64_t observations =
      MetricValue(before, "heatsink_dynamic_replication_hot_read_observations_total");
  EXPECT_GT(used_bytes, 0);
  EXPECT_EQ(MetricValue(before, "heatsink_rpc_calls_identity_mismatch_total"), 0);

  // Every object call of the impostor, claiming client 3 in metadata.
  const auto denied = absl::StatusCode::kPermissionDenied;
  PutStartRequest foreign_put = put;
  foreign_put.name = ObjectName{"team-a", "new"};
  EXPECT_EQ(Wait<absl::StatusOr<PutStartResponse>>([&](auto done) {
              impostor->PutStart(kOwner, foreign_put, std::move(done));
            }).status().code(),
            denied);
  EXPECT_EQ(
      Call([&](auto done) { impostor->PutEnd(kOwner, {name, version}, std::move(done)); }).code(),
      denied);
  EXPECT_EQ(Call([&](auto done) {
              impostor->PutRevoke(kOwner, {name, version}, std::move(done));
            }).code(),
            denied);
  BatchPutStartRequest batch;
  batch.names = {ObjectName{"team-a", "b1"}};
  batch.sizes_bytes = {100};
  EXPECT_EQ(Wait<absl::StatusOr<BatchPutStartResponse>>([&](auto done) {
              impostor->BatchPutStart(kOwner, batch, std::move(done));
            }).status().code(),
            denied);
  EXPECT_EQ(Wait<absl::StatusOr<BatchPutResponse>>([&](auto done) {
              impostor->BatchPutEnd(kOwner, BatchPutEndRequest{{{name, version}}},
                                    std::move(done));
            }).status().code(),
            denied);
  EXPECT_EQ(Wait<absl::StatusOr<BatchPutResponse>>([&](auto done) {
              impostor->BatchPutRevoke(kOwner, BatchPutRevokeRequest{{{name, version}}},
                                       std::move(done));
            }).status().code(),
            denied);
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(Wait<absl::StatusOr<GetReplicaListResponse>>([&](auto done) {
                impostor->GetReplicaList({name, kOwner, "b"}, std::move(done));
              }).status().code(),
              denied);
  }
  EXPECT_EQ(Wait<absl::StatusOr<BatchGetReplicaListResponse>>([&](auto done) {
              impostor->BatchGetReplicaList({{name}, kOwner, "b"}, std::move(done));
            }).status().code(),
            denied);
  EXPECT_EQ(Call([&](auto done) { impostor->Remove({name}, std::move(done)); }).code(), denied);
  // Without metadata the certificate's identity (4, tenant team-b) is used:
  // reading in client 3's name and naming team-a are refused all the same.
  std::unique_ptr<GrpcMasterClient> silent = Connect("client-4");
  ASSERT_TRUE(silent);
  EXPECT_EQ(Wait<absl::StatusOr<GetReplicaListResponse>>([&](auto done) {
              silent->GetReplicaList({name, kOwner, "b"}, std::move(done));
            }).status().code(),
            denied);
  EXPECT_EQ(Wait<absl::StatusOr<GetReplicaListResponse>>([&](auto done) {
              silent->GetReplicaList({name, kImpostor, "b"}, std::move(done));
            }).status().code(),
            denied);
  EXPECT_EQ(Call([&](auto done) { silent->Remove({name}, std::move(done)); }).code(), denied);

  // Nothing changed: objects, bytes, heat (reads are drained into the window
  // within 5 ms; a refused read never reaches it).
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const std::string after = HttpGet(metrics_address_, "/metrics");
  EXPECT_EQ(MetricValue(after, "heatsink_master_objects"), 1);
  EXPECT_EQ(MetricValue(after, "heatsink_master_used_bytes"), used_bytes);
  EXPECT_EQ(MetricValue(after, "heatsink_dynamic_replication_hot_read_observations_total"),
            observations);
  // 14 calls of the impostor, and the silent client's read as client 3
  // (GrpcMasterClient sends a read's requester as the metadata id).
  EXPECT_EQ(MetricValue(after, "heatsink_rpc_calls_identity_mismatch_total"), 15);
  EXPECT_GE(MetricValue(after, "heatsink_rpc_calls_permission_denied_total"), 17);

  // Client 3's own hot reads from domain b grant a lease for a copy from its
  // segment; the task is queued for client 3.
  for (int i = 0; i < 4; ++i) {
    absl::StatusOr<GetReplicaListResponse> listed =
        Wait<absl::StatusOr<GetReplicaListResponse>>(
            [&](auto done) { owner->GetReplicaList({name, kOwner, "b"}, std::move(done)); });
    ASSERT_TRUE(listed.ok()) << listed.status();
  }
  // The impostor cannot fetch client 3's tasks.
  EXPECT_EQ(Wait<absl::StatusOr<FetchTasksResponse>>([&](auto done) {
              impostor->FetchTasks(kOwner, 4, 0, std::move(done));
            }).status().code(),
            denied);
  std::optional<Task> task;
  ASSERT_TRUE(WaitFor([&] {
    absl::StatusOr<FetchTasksResponse> fetched = Wait<absl::StatusOr<FetchTasksResponse>>(
        [&](auto done) { owner->FetchTasks(kOwner, 4, 0, std::move(done)); });
    if (fetched.ok() && !fetched->tasks.empty()) task = fetched->tasks[0];
    return task.has_value();
  }));
  ASSERT_TRUE(task->copy.leased());
  const CopyTaskFence fence{task->id, version, task->copy.lease_id};
  const auto start = [&](GrpcMasterClient& rpc, ClientId caller) {
    return Wait<absl::StatusOr<CopyStartResponse>>([&](auto done) {
             rpc.DynamicReplicaCopyStart(caller, fence, std::move(done));
           })
        .status()
        .code();
  };
  EXPECT_EQ(start(*impostor, kOwner), denied);    // claims the source
  // As itself (metadata or none) it is not the source.
  EXPECT_EQ(start(*impostor, kImpostor), denied);
  EXPECT_EQ(start(*silent, ClientId()), denied);
  // The lease survived: the real source starts the copy.
  EXPECT_EQ(start(*owner, kOwner), absl::StatusCode::kOk);
  EXPECT_TRUE(
      Call([&](auto done) { owner->DynamicReplicaCopyRevoke(kOwner, fence, std::move(done)); })
          .ok());
  // The owner, without metadata, is who its certificate says.
  std::unique_ptr<GrpcMasterClient> owner_silent = Connect("client-3");
  PutStartRequest second = put;
  second.name = ObjectName{"team-a", "k2"};
  absl::StatusOr<PutStartResponse> second_started = Wait<absl::StatusOr<PutStartResponse>>(
      [&](auto done) { owner_silent->PutStart(ClientId(), second, std::move(done)); });
  ASSERT_TRUE(second_started.ok()) << second_started.status();
  ASSERT_TRUE(Call([&](auto done) {
                owner_silent->PutEnd(ClientId(), {second.name, second_started->version},
                                     std::move(done));
              }).ok());
  EXPECT_EQ(MetricValue(HttpGet(metrics_address_, "/metrics"), "heatsink_master_objects"), 2);
  const absl::Status removed =
      Call([&](auto done) { owner_silent->Remove({second.name}, std::move(done)); });
  EXPECT_TRUE(removed.ok()) << removed;
  const std::string end = HttpGet(metrics_address_, "/metrics");
  EXPECT_EQ(MetricValue(end, "heatsink_master_objects"), 1);
  EXPECT_EQ(MetricValue(end, "heatsink_rpc_calls_identity_mismatch_total"), 17);

  owner.reset();
  target.reset();
  impostor.reset();
  silent.reset();
  owner_silent.reset();
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
  const std::string log = LogText();
  EXPECT_TRUE(absl::StrContains(
      log, "caller identities from client certificates (spiffe://heatsink.local/"))
      << log;
  EXPECT_FALSE(absl::StrContains(log, "asserted")) << log;
}

TEST_F(IdentityProcessTest, ForeignCaExpiredAndForeignDomainCertificates) {
  ASSERT_TRUE(MakeCerts(absl::StrCat("ca ", dir_.string(), " --name other-ca")));
  ASSERT_TRUE(
      MakeCerts(absl::StrCat("client ", dir_.string(), " 3 --ca other-ca --name stranger")));
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", dir_.string(),
                                     " 3 --name expired --not-before 20200101000000Z "
                                     "--not-after 20200102000000Z")));
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", dir_.string(),
                                     " 3 --name foreign-domain --trust-domain other.example")));
  std::unique_ptr<Process> master = StartMaster({});
  ASSERT_FALSE(master_address_.empty());

  std::unique_ptr<GrpcMasterClient> good = Connect("client-3", 3);
  ASSERT_TRUE(good);
  EXPECT_TRUE(
      Call([&](auto done) { good->RegisterClient({ClientId(3), "h", "a"}, std::move(done)); })
          .ok());
  // Refused at the handshake: the calls never reach the service.
  const std::string before = HttpGet(metrics_address_, "/metrics");
  for (const char* cert : {"stranger", "expired"}) {
    std::unique_ptr<GrpcMasterClient> refused = Connect(cert, 3);
    ASSERT_TRUE(refused);
    EXPECT_EQ(refused->Ping().code(), absl::StatusCode::kUnavailable) << cert;
    EXPECT_EQ(Call([&](auto done) { refused->Heartbeat(ClientId(3), std::move(done)); }).code(),
              absl::StatusCode::kUnavailable)
        << cert;
  }
  const std::string after = HttpGet(metrics_address_, "/metrics");
  EXPECT_EQ(MetricValue(after, "heatsink_rpc_calls_total"),
            MetricValue(before, "heatsink_rpc_calls_total"));
  // Another trust domain connects (same CA) but proves no client.
  std::unique_ptr<GrpcMasterClient> foreign = Connect("foreign-domain");
  ASSERT_TRUE(foreign);
  EXPECT_TRUE(foreign->Ping().ok());
  EXPECT_EQ(Call([&](auto done) { foreign->Heartbeat(ClientId(3), std::move(done)); }).code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(Call([&](auto done) {
              foreign->RegisterClient({ClientId(), "h", "a"}, std::move(done));
            }).code(),
            absl::StatusCode::kUnauthenticated);
  good.reset();
  foreign.reset();
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

TEST_F(IdentityProcessTest, AssertedIdentitiesAreLoggedOnceAtStart) {
  std::unique_ptr<Process> master = StartMaster({}, /*plaintext=*/true);
  ASSERT_FALSE(master_address_.empty());
  master->Signal(SIGHUP);  // a reload does not say it again
  ASSERT_TRUE(WaitFor([&] { return absl::StrContains(LogText(), "reload (SIGHUP)"); }));
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
  const std::string log = LogText();
  size_t count = 0;
  for (size_t at = log.find("identities are asserted"); at != std::string::npos;
       at = log.find("identities are asserted", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << log;
}

TEST_F(IdentityProcessTest, SighupRotatesCertificatesWithoutARestart) {
  const std::string d = dir_.string();
  // Client 3's short-lived certificate expires 8 s from now.
  const absl::Time expiry = absl::FromUnixSeconds(absl::ToUnixSeconds(absl::Now()) + 8);
  const std::string not_after = absl::FormatTime("%Y%m%d%H%M%SZ", expiry, absl::UTCTimeZone());
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", d, " 3 --name short --not-after ", not_after)));
  ASSERT_TRUE(MakeCerts(absl::StrCat("server ", d, " master-new")));
  ASSERT_TRUE(MakeCerts(absl::StrCat("ca ", d, " --name ca2")));
  ASSERT_TRUE(MakeCerts(absl::StrCat("client ", d, " 3 --ca ca2 --name client-3-ca2")));
  // The master reads live.pem, live.key and live-ca.pem.
  Write("live.pem", Read("master.pem"));
  Write("live.key", Read("master.key"));
  Write("live-ca.pem", Read("ca.pem"));
  std::unique_ptr<Process> master = StartMaster({}, /*plaintext=*/false, "live", "live-ca");
  ASSERT_FALSE(master_address_.empty());

  std::unique_ptr<GrpcMasterClient> old_client = Connect("client-3", 3);
  ASSERT_TRUE(old_client);
  const absl::Status registered = Call([&](auto done) {
    old_client->RegisterClient({ClientId(3), "h", "a"}, std::move(done));
  });
  ASSERT_TRUE(registered.ok()) << registered << "\n" << LogText();
  std::unique_ptr<GrpcMasterClient> short_lived = Connect("short", 3);
  ASSERT_TRUE(short_lived);
  EXPECT_TRUE(short_lived->Ping().ok());
  EXPECT_EQ(Connect("client-3-ca2", 3)->Ping().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(PresentedCertificate("client-3"), Read("master.pem"));

  // New server certificate; the client CA file becomes the old and the new CA.
  Write("live.pem", Read("master-new.pem"));
  Write("live.key", Read("master-new.key"));
  Write("live-ca.pem", Read("ca.pem") + Read("ca2.pem"));
  master->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return PresentedCertificate("client-3") == Read("master-new.pem"); },
                      absl::Seconds(10)));
  EXPECT_TRUE(absl::StrContains(LogText(), "TLS certificate ")) << LogText();
  // The new CA's client is served; the open connection and a new one with the
  // old CA's valid certificate keep working.
  std::unique_ptr<GrpcMasterClient> new_ca_client = Connect("client-3-ca2", 3);
  EXPECT_TRUE(new_ca_client->Ping().ok());
  EXPECT_TRUE(
      Call([&](auto done) { new_ca_client->Heartbeat(ClientId(3), std::move(done)); }).ok());
  EXPECT_TRUE(Call([&](auto done) { old_client->Heartbeat(ClientId(3), std::move(done)); }).ok());
  EXPECT_TRUE(Connect("client-3", 3)->Ping().ok());
  // ... until it expires: after its not-after, new connections with the
  // short-lived certificate are refused.
  while (absl::Now() < expiry + absl::Seconds(1)) absl::SleepFor(absl::Milliseconds(100));
  EXPECT_EQ(Connect("short", 3)->Ping().code(), absl::StatusCode::kUnavailable);

  // A key that does not load changes nothing.
  Write("live.key", "not a key");
  master->Signal(SIGHUP);
  EXPECT_TRUE(WaitFor([&] { return absl::StrContains(LogText(), "the previous ones stay"); }));
  EXPECT_TRUE(absl::StrContains(LogText(), "--tls-key")) << LogText();
  absl::SleepFor(absl::Seconds(2));  // two refresh intervals of the watcher
  EXPECT_EQ(PresentedCertificate("client-3"), Read("master-new.pem"));
  EXPECT_TRUE(Connect("client-3-ca2", 3)->Ping().ok());

  old_client.reset();
  short_lived.reset();
  new_ca_client.reset();
  master->Signal(SIGTERM);
  EXPECT_EQ(master->Wait(), 0);
}

}  // namespace
}  // namespace heatsink::runtime
