// Helpers shared by the gRPC tests: waiting for one asynchronous client call,
// and whether the openssl tool that makes test certificates is installed.
#ifndef HEATSINK_TESTS_RUNTIME_RPC_RPC_TEST_UTIL_H_
#define HEATSINK_TESTS_RUNTIME_RPC_RPC_TEST_UTIL_H_

#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "runtime/env/notification.h"

namespace heatsink::runtime::test {

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

// True when the openssl command-line tool runs (tools/make-certs.sh needs it).
inline bool HaveOpenssl() { return std::system("openssl version > /dev/null 2>&1") == 0; }

}  // namespace heatsink::runtime::test

#endif  // HEATSINK_TESTS_RUNTIME_RPC_RPC_TEST_UTIL_H_
