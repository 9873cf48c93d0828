// A real etcd server for the tests of leader election and failover: Debian's
// `etcd` (package etcd-server) on free loopback ports with a temporary data
// directory, stopped (SIGTERM, then SIGKILL) and removed at the end.
//
// Without etcd installed the tests skip with a message, unless
// HEATSINK_REQUIRE_ETCD=1 (CI sets it), where they fail instead.
#ifndef HEATSINK_TESTS_RUNTIME_RPC_ETCD_PROCESS_H_
#define HEATSINK_TESTS_RUNTIME_RPC_ETCD_PROCESS_H_

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "runtime/etcd/etcd_client.h"
#include "tests/runtime/rpc/process_test_util.h"
#include "tests/runtime/rpc/processes_fixture.h"

namespace heatsink::runtime::test {

// The etcd binary: $HEATSINK_ETCD, else the first `etcd` on PATH; "" when
// none is executable.
inline std::string FindEtcd() {
  if (const char* given = std::getenv("HEATSINK_ETCD"); given != nullptr && *given != '\0') {
    return ::access(given, X_OK) == 0 ? std::string(given) : std::string();
  }
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path == nullptr ? "/usr/bin" : path, ':')) {
    const fs::path candidate = fs::path(std::string(dir)) / "etcd";
    if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return "";
}

inline bool EtcdRequired() {
  const char* required = std::getenv("HEATSINK_REQUIRE_ETCD");
  return required != nullptr && std::string(required) == "1";
}

// In a test body: skips (or, with HEATSINK_REQUIRE_ETCD=1, fails) when etcd
// is not installed.
#define HS_REQUIRE_ETCD()                                                                  \
  do {                                                                                     \
    if (::heatsink::runtime::test::FindEtcd().empty()) {                                   \
      if (::heatsink::runtime::test::EtcdRequired()) {                                     \
        FAIL() << "etcd is not installed (apt-get install etcd-server, or tools/setup.sh) " \
                  "and HEATSINK_REQUIRE_ETCD=1";                                           \
      }                                                                                    \
      GTEST_SKIP() << "etcd is not installed: apt-get install etcd-server (tools/setup.sh "  \
                      "does), or set HEATSINK_ETCD to its path";                           \
    }                                                                                      \
  } while (false)

class EtcdProcess {
 public:
  // Starts one etcd member with its data and log under `dir` and waits until
  // it answers (at most 20 s). Check ready() after.
  explicit EtcdProcess(const fs::path& dir) : data_dir_(dir / "etcd-data") {
    fs::create_directories(data_dir_);
    const int client_port = FreePort();
    int peer_port = FreePort();
    while (peer_port == client_port) peer_port = FreePort();
    endpoint_ = absl::StrCat("127.0.0.1:", client_port);
    const std::string client_url = absl::StrCat("http://", endpoint_);
    const std::string peer_url = absl::StrCat("http://127.0.0.1:", peer_port);
    process_ = std::make_unique<Process>(
        std::vector<std::string>{FindEtcd(), "--name", "heatsink-test", "--data-dir",
                                 data_dir_.string(), "--listen-client-urls", client_url,
                                 "--advertise-client-urls", client_url, "--listen-peer-urls",
                                 peer_url, "--initial-advertise-peer-urls", peer_url,
                                 "--initial-cluster", absl::StrCat("heatsink-test=", peer_url),
                                 "--initial-cluster-state", "new", "--log-level", "warn"},
        std::vector<std::string>{}, dir / "etcd.log");
    absl::StatusOr<std::unique_ptr<EtcdClient>> client =
        EtcdClient::Create(EtcdClientOptions{.endpoints = {endpoint_}});
    if (!client.ok()) return;
    client_ = *std::move(client);
    ready_ = WaitFor([&] {
      last_error_ = client_->Get("/ready-probe").status();
      return last_error_.ok();
    }, absl::Seconds(20));
  }
  ~EtcdProcess() {
    Stop();
    std::error_code ignored;
    fs::remove_all(data_dir_, ignored);
  }
  EtcdProcess(const EtcdProcess&) = delete;
  EtcdProcess& operator=(const EtcdProcess&) = delete;

  bool ready() const { return ready_; }
  // Why it is not ready: the last error of the probe.
  const absl::Status& last_error() const { return last_error_; }
  // "127.0.0.1:PORT"
  const std::string& endpoint() const { return endpoint_; }
  // etcd://127.0.0.1:PORT/prefix
  std::string Url(const std::string& prefix) const {
    return absl::StrCat("etcd://", endpoint_, prefix);
  }
  // A client of this member (1 s deadlines).
  EtcdClient& client() { return *client_; }
  void Signal(int signal) { process_->Signal(signal); }
  void Stop() {
    if (process_ == nullptr || !process_->running()) return;
    process_->Signal(SIGCONT);
    process_->Signal(SIGTERM);
    if (process_->Wait() < 0) process_.reset();  // the destructor kills it
  }

 private:
  fs::path data_dir_;
  std::string endpoint_;
  std::unique_ptr<Process> process_;
  std::unique_ptr<EtcdClient> client_;
  bool ready_ = false;
  absl::Status last_error_;
};

}  // namespace heatsink::runtime::test

#endif  // HEATSINK_TESTS_RUNTIME_RPC_ETCD_PROCESS_H_
