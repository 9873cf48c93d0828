// The fixture of the tests that run heatsink-master and heatsink-store as
// separate processes on loopback (processes_test.cc,
// master_restart_process_test.cc): a temporary directory for logs, and
// helpers that start a master and stores with the settings every such test
// shares, plus the writer and reader options of the replication tests.
#ifndef HEATSINK_TESTS_RUNTIME_RPC_PROCESSES_FIXTURE_H_
#define HEATSINK_TESTS_RUNTIME_RPC_PROCESSES_FIXTURE_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/env/rng.h"
#include "gtest/gtest.h"
#include "runtime/client/heatsink_client.h"
#include "runtime/env/steady_clock.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/rpc_test_util.h"

namespace heatsink::runtime::test {

// A loopback port free right now (a restarted master must listen where the
// stores and clients already point).
inline int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

class ProcessesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / absl::StrCat("heatsink_processes_", getpid());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Process> StartStore(uint64_t id, const std::string& host,
                                      const std::string& domain_flag,
                                      const std::vector<std::string>& env, const std::string& tag,
                                      const std::vector<std::string>& extra_args = {}) {
    const fs::path endpoint_file = dir_ / (tag + ".endpoint");
    fs::remove(endpoint_file);
    std::vector<std::string> argv = store_command_prefix_;
    argv.insert(argv.end(),
                {std::string(HEATSINK_TOOLS_DIR) + "/heatsink-store", "--master", master_address_,
                 "--client-id", absl::StrCat(id), "--host", host, "--segment-mib",
                 store_segment_mib_, "--heartbeat-interval-ms", "200", "--fetch-interval-ms", "20",
                 "--endpoint-file", endpoint_file.string()});
    if (!domain_flag.empty()) {
      argv.push_back("--domain");
      argv.push_back(domain_flag);
    }
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    auto process = std::make_unique<Process>(argv, env, dir_ / (tag + ".log"));
    EXPECT_TRUE(WaitFor([&] { return fs::exists(endpoint_file); })) << tag << " did not start";
    return process;
  }

  // Starts heatsink-master on loopback with what every test here shares
  // (stage 2 on, 4 reads in a 1 s window cross the hit count, 100 ms sweeps),
  // then `sets` (name=value, applied after, so they may override) and
  // `extra_args`; waits for its gRPC and metrics addresses.
  std::unique_ptr<Process> StartMaster(const std::vector<std::string>& sets,
                                       const std::vector<std::string>& extra_args = {},
                                       const std::string& listen = "127.0.0.1:0") {
    const fs::path address_file = dir_ / "master.address";
    fs::remove(address_file);
    std::vector<std::string> argv = {std::string(HEATSINK_TOOLS_DIR) + "/heatsink-master",
                                     "--listen",
                                     listen,
                                     "--metrics-listen",
                                     "127.0.0.1:0",
                                     "--address-file",
                                     address_file.string()};
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    std::vector<std::string> all_sets = {
        "dynamic_replication_domain_aware=true", "dynamic_replication_heat_window_seconds=1",
        "dynamic_replication_admission_qps_threshold=4", "sweep_interval_ms=100"};
    all_sets.insert(all_sets.end(), sets.begin(), sets.end());
    for (const std::string& set : all_sets) {
      argv.push_back("--set");
      argv.push_back(set);
    }
    auto master = std::make_unique<Process>(argv, std::vector<std::string>{},
                                            dir_ / (++masters_ == 1
                                                        ? std::string("master.log")
                                                        : absl::StrCat("master", masters_, ".log")));
    EXPECT_TRUE(WaitFor([&] { return ReadLines(address_file).size() == 2; }))
        << "the master did not start";
    const std::vector<std::string> lines = ReadLines(address_file);
    if (lines.size() == 2) {
      master_address_ = lines[0];
      metrics_address_ = lines[1];
    }
    return master;
  }

  void CopyOverUcxAndReadInDomainB(const std::vector<std::string>& store_b_flags,
                                   const std::vector<std::string>& store_a_flags = {});
  // Waits until the master lists `count` segments and returns them as
  // (store 1's, store 2's) by owner: ClientId(1) first, any other second.
  // Invalid ids when they did not show up in time.
  std::pair<SegmentId, SegmentId> SegmentsOfStores1And2(GrpcMasterClient& rpc, size_t count = 2) {
    EXPECT_TRUE(WaitFor([&] {
      absl::StatusOr<std::vector<SegmentView>> segments = rpc.ListSegments();
      return segments.ok() && segments->size() == count;
    }));
    std::pair<SegmentId, SegmentId> out;
    absl::StatusOr<std::vector<SegmentView>> segments = rpc.ListSegments();
    if (!segments.ok()) return out;
    for (const SegmentView& s : *segments) {
      (s.location.owner == ClientId(1) ? out.first : out.second) = s.location.id;
    }
    return out;
  }
  // Any log line of `file` contains `text`.
  bool LogSays(const std::string& file, const std::string& text) {
    for (const std::string& line : ReadLines(dir_ / file)) {
      if (line.find(text) != std::string::npos) return true;
    }
    return false;
  }

  // The test process's clock, read by its master clients (the processes
  // under test have their own).
  SteadyClock clock_;
  fs::path dir_;
  int masters_ = 0;
  std::string store_segment_mib_ = "16";
  // Run before heatsink-store's own path (e.g. {"/usr/bin/nice", "-n", "19"}).
  std::vector<std::string> store_command_prefix_;
  std::string master_address_;
  std::string metrics_address_;
};

// The writer of the replication tests: domain a, putting into `segment`.
inline HeatsinkClientOptions WriterInDomainA(SegmentId segment) {
  HeatsinkClientOptions options;
  options.client_id = ClientId(100);
  options.domain = "a";
  options.preferred_segments = {segment};
  return options;
}

// Their hot reader: host-b in domain b, spreading over equal-cost replicas.
inline HeatsinkClientOptions SpreadReaderOnHostB() {
  HeatsinkClientOptions options;
  options.client_id = ClientId(200);
  options.host = "host-b";
  options.domain = "b";
  options.replica_selection_policy = ReplicaSelectionPolicy::kSpread;
  return options;
}

}  // namespace heatsink::runtime::test

#endif  // HEATSINK_TESTS_RUNTIME_RPC_PROCESSES_FIXTURE_H_
