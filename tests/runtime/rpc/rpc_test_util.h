// Helpers shared by the gRPC tests: seeded test bytes, waiting for one
// asynchronous client call,
// a master client presenting a test certificate, and (cert_test_util.h)
// making those certificates.
#ifndef HEATSINK_TESTS_RUNTIME_RPC_RPC_TEST_UTIL_H_
#define HEATSINK_TESTS_RUNTIME_RPC_RPC_TEST_UTIL_H_

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "core/env/rng.h"
#include "gtest/gtest.h"
#include "runtime/env/notification.h"
#include "runtime/rpc/grpc_master_client.h"
#include "tests/runtime/cert_test_util.h"

namespace heatsink::runtime::test {

// `size` bytes drawn from a PRNG seeded with `seed`: the same bytes for
// the same seed, so a read can be checked against them.
inline std::string Pattern(uint64_t seed, size_t size) {
  Rng rng(seed);
  std::string out(size, '\0');
  for (char& c : out) c = static_cast<char>(rng.Next64());
  return out;
}

// Issues one asynchronous call through `issue` (which passes the callback
// on) and blocks until the callback delivers its value.
template <typename T>
T Wait(const std::function<void(absl::AnyInvocable<void(T) &&>)>& issue) {
  auto result = std::make_shared<std::optional<T>>();
  auto done = std::make_shared<Notification>();
  issue([result, done](T value) {
    result->emplace(std::move(value));
    done->Notify();
  });
  done->WaitForNotification();
  return std::move(**result);
}

// A client of the master at `address` over mutual TLS, presenting
// certificate `cert` (DIR/`cert`.pem and .key) and trusting DIR/`ca`.pem,
// sending `metadata_id` with the calls whose interface names no caller.
// Null (with a failure recorded) when the options are refused.
// `clock` (the test's) must outlive the client.
inline std::unique_ptr<GrpcMasterClient> ConnectWithCertificate(
    const Clock* clock, const std::string& address, const std::filesystem::path& dir,
    const std::string& cert, const std::string& ca = "ca", uint64_t metadata_id = 0) {
  RpcOptions rpc;
  rpc.call_timeout_ms = 3000;
  rpc.caller_client_id = metadata_id;
  rpc.tls.ca_path = (dir / (ca + ".pem")).string();
  rpc.tls.cert_path = (dir / (cert + ".pem")).string();
  rpc.tls.key_path = (dir / (cert + ".key")).string();
  absl::StatusOr<std::unique_ptr<GrpcMasterClient>> client =
      GrpcMasterClient::Connect(clock, address, rpc);
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

}  // namespace heatsink::runtime::test

#endif  // HEATSINK_TESTS_RUNTIME_RPC_RPC_TEST_UTIL_H_
