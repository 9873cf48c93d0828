// Covers TLS on the gRPC control plane and the store's gRPC data service,
// on loopback. Certificates are generated at test time with the `openssl`
// command-line tool (a test CA, a server certificate for localhost and
// 127.0.0.1, a client certificate proving client 10, and a second CA with its
// own client certificate; tools/make-certs.sh and identity_test.cc cover the
// identities themselves); without `openssl` on PATH the tests are skipped and say so.
//   - a master requiring client certificates answers a client that presents
//     one signed by its client CA;
//   - it refuses (UNAVAILABLE: the handshake fails) a client without a
//     certificate, a client whose certificate another CA signed, a plaintext
//     client, and a client that does not trust the server's CA;
//   - the store's data service under TLS serves a client with a valid
//     certificate and refuses one without;
//   - the heatsink-master process started with --tls-cert/--tls-key/
//     --tls-client-ca and --tenant bindings serves a client with a valid
//     certificate inside its tenant, refuses it outside, and refuses a
//     client without a certificate; SIGTERM stops it with exit status 0.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/replication/replicated_master.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/runtime_env.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/rpc/grpc_master_client.h"
#include "runtime/rpc/grpc_store_client.h"
#include "runtime/rpc/master_server.h"
#include "runtime/rpc/store_server.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime {
namespace {

namespace fs = std::filesystem;

using test::HaveOpenssl;
using test::kNoOpensslSkip;

// Runs `command` in `dir`; true on exit status 0.
bool Run(const fs::path& dir, const std::string& command) {
  const std::string line =
      absl::StrCat("cd '", dir.string(), "' && ", command, " > /dev/null 2>&1");
  return std::system(line.c_str()) == 0;
}

constexpr char kEcKey[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

bool MakeCa(const fs::path& dir, const std::string& name) {
  return Run(dir, absl::StrCat("openssl req -x509 ", kEcKey, " -keyout ", name, ".key -out ", name,
                               ".pem -days 2 -subj /CN=", name));
}

// A certificate `name`.pem / `name`.key signed by `ca`, with `extensions`.
bool MakeLeaf(const fs::path& dir, const std::string& name, const std::string& ca,
              const std::string& common_name, const std::string& extensions) {
  std::FILE* ext = std::fopen((dir / (name + ".ext")).c_str(), "w");
  if (ext == nullptr) return false;
  std::fputs(extensions.c_str(), ext);
  std::fclose(ext);
  return Run(dir, absl::StrCat("openssl req ", kEcKey, " -keyout ", name, ".key -out ", name,
                               ".csr -subj /CN=", common_name)) &&
         Run(dir, absl::StrCat("openssl x509 -req -in ", name, ".csr -CA ", ca, ".pem -CAkey ", ca,
                               ".key -CAcreateserial -out ", name, ".pem -days 2 -extfile ", name,
                               ".ext"));
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveOpenssl()) {
      GTEST_SKIP() << kNoOpensslSkip;
    }
    dir_ = fs::temp_directory_path() /
           absl::StrCat("heatsink_tls_", getpid(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    ASSERT_TRUE(MakeCa(dir_, "ca"));
    ASSERT_TRUE(MakeCa(dir_, "other-ca"));
    ASSERT_TRUE(MakeLeaf(dir_, "server", "ca", "localhost",
                         "subjectAltName=DNS:localhost,IP:127.0.0.1\n"
                         "extendedKeyUsage=serverAuth\n"));
    ASSERT_TRUE(MakeLeaf(dir_, "client", "ca", "heatsink-client",
                         "subjectAltName=URI:spiffe://heatsink.local/heatsink/client/10\n"
                         "extendedKeyUsage=clientAuth\n"));
    ASSERT_TRUE(
        MakeLeaf(dir_, "stranger", "other-ca", "heatsink-client", "extendedKeyUsage=clientAuth\n"));
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  std::string Path(const std::string& file) const { return (dir_ / file).string(); }

  TlsFiles ServerTls() const {
    TlsFiles tls;
    tls.cert_path = Path("server.pem");
    tls.key_path = Path("server.key");
    tls.client_ca_path = Path("ca.pem");
    return tls;
  }
  RpcOptions ClientRpc(const std::string& cert, const std::string& ca = "ca") const {
    RpcOptions rpc;
    rpc.call_timeout_ms = 3000;
    rpc.tls.ca_path = Path(ca + ".pem");
    if (!cert.empty()) {
      rpc.tls.cert_path = Path(cert + ".pem");
      rpc.tls.key_path = Path(cert + ".key");
    }
    return rpc;
  }

  fs::path dir_;
  SteadyClock clock_;  // the test process's clock, where no Env is at hand
};

absl::Status PingWith(const Clock* clock, const std::string& address, const RpcOptions& rpc) {
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> client =
      GrpcMasterClient::Connect(clock, address, rpc);
  if (!client.ok()) return client.status();
  return (*client)->Ping();
}

TEST_F(TlsTest, MasterServesOnlyClientsWithAValidCertificate) {
  RuntimeEnv env(RuntimeEnvOptions{.executor = {.threads = 2}, .seed = 1});
  absl::StatusOr<std::unique_ptr<ReplicatedMaster>> master =
      ReplicatedMaster::Create(env.env(), MasterKnobs{}, ReplicationKnobs{}, nullptr);
  ASSERT_TRUE(master.ok()) << master.status();
  RpcOptions server_rpc;
  server_rpc.tls = ServerTls();
  absl::StatusOr<std::unique_ptr<MasterServer>> server =
      MasterServer::Start(master->get(), "127.0.0.1:0", server_rpc);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string address = absl::StrCat("localhost:", (*server)->port());

  // A client certificate signed by the client CA: calls work, identity and all.
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> good =
      GrpcMasterClient::Connect(env.env()->clock, address, ClientRpc("client"));
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_TRUE((*good)->Ping().ok());
  absl::StatusOr<std::vector<SegmentView>> segments = (*good)->ListSegments();
  EXPECT_TRUE(segments.ok()) << segments.status();
  const int64_t served = (*server)->stats().calls_total;
  EXPECT_GE(served, 2);

  // Refused at the handshake: the call never reaches the service.
  EXPECT_EQ(PingWith(env.env()->clock, address, ClientRpc("")).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(PingWith(env.env()->clock, address, ClientRpc("stranger")).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(PingWith(env.env()->clock, address, ClientRpc("client", "other-ca")).code(),
            absl::StatusCode::kUnavailable);
  RpcOptions plaintext;
  plaintext.call_timeout_ms = 3000;
  EXPECT_EQ(PingWith(env.env()->clock, address, plaintext).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ((*server)->stats().calls_total, served);

  // Unreadable certificate files are refused before anything connects.
  RpcOptions missing = ClientRpc("client");
  missing.tls.ca_path = Path("no-such.pem");
  EXPECT_EQ(GrpcMasterClient::Connect(env.env()->clock, address, missing).status().code(),
            absl::StatusCode::kNotFound);
  good->reset();
  (*server)->Shutdown(absl::Seconds(1));
  env.Shutdown();
}

TEST_F(TlsTest, StoreDataServiceServesOnlyClientsWithAValidCertificate) {
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(SegmentId(3), 1 << 16).ok());
  ASSERT_TRUE(memory.Write(SegmentId(3), 100, "over tls").ok());
  RpcOptions server_rpc;
  server_rpc.tls = ServerTls();
  absl::StatusOr<std::unique_ptr<StoreServer>> server =
      StoreServer::Start(&memory, "127.0.0.1:0", server_rpc, StoreServiceOptions{});
  ASSERT_TRUE(server.ok()) << server.status();
  SegmentLocation location;
  location.id = SegmentId(3);
  location.data_service_endpoint = absl::StrCat(
      "localhost:", (*server)->endpoint().substr((*server)->endpoint().rfind(':') + 1));

  GrpcDataPathOptions good;
  good.rpc = ClientRpc("client");
  absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> path = GrpcObjectDataPath::Create(good);
  ASSERT_TRUE(path.ok()) << path.status();
  absl::StatusOr<std::string> read = (*path)->Read(location, SegmentId(3), 100, 8);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, "over tls");

  GrpcDataPathOptions anonymous;
  anonymous.rpc = ClientRpc("");
  absl::StatusOr<std::unique_ptr<GrpcObjectDataPath>> refused =
      GrpcObjectDataPath::Create(anonymous);
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ((*refused)->Read(location, SegmentId(3), 100, 8).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ((*refused)->Write(location, SegmentId(3), 0, "nope").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(*memory.Read(SegmentId(3), 0, 4), std::string(4, '\0'));
  (*server)->Shutdown();
}

TEST_F(TlsTest, MasterProcessWithTlsFlagsAndTenantBindings) {
  const fs::path address_file = dir_ / "master.address";
  std::vector<std::string> args = {std::string(HEATSINK_TOOLS_DIR) + "/heatsink-master",
                                   "--listen",
                                   "127.0.0.1:0",
                                   "--address-file",
                                   address_file.string(),
                                   "--tls-cert",
                                   Path("server.pem"),
                                   "--tls-key",
                                   Path("server.key"),
                                   "--tls-client-ca",
                                   Path("ca.pem"),
                                   "--tenant",
                                   "10=t1"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string log = (dir_ / "master.log").string();
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&actions);
  std::string address;
  for (int i = 0; i < 2000 && address.empty(); ++i) {
    std::ifstream in(address_file);
    std::getline(in, address);
    if (address.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_FALSE(address.empty()) << "heatsink-master did not start";
  address = absl::StrCat("localhost:", address.substr(address.rfind(':') + 1));

  RpcOptions rpc = ClientRpc("client");
  rpc.caller_client_id = 10;
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> master =
      GrpcMasterClient::Connect(&clock_, address, rpc);
  ASSERT_TRUE(master.ok()) << master.status();
  EXPECT_TRUE((*master)->Ping().ok());
  HeatsinkClientOptions own;
  own.client_id = ClientId(10);
  own.tenant = "t1";
  EXPECT_EQ(HeatsinkClient(master->get(), own).Get("k").status().code(),
            absl::StatusCode::kNotFound);
  HeatsinkClientOptions foreign = own;
  foreign.tenant = "t2";
  EXPECT_EQ(HeatsinkClient(master->get(), foreign).Get("k").status().code(),
            absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(PingWith(&clock_, address, ClientRpc("")).code(), absl::StatusCode::kUnavailable);
  master->reset();

  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace heatsink::runtime
