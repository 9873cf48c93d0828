// Shared helpers of the data-plane tests: deterministic segment contents,
// checksums, waiting for a copy, and a scripted fake peer on a loopback port.
#ifndef HEATSINK_TESTS_RUNTIME_TRANSPORT_TEST_UTIL_H_
#define HEATSINK_TESTS_RUNTIME_TRANSPORT_TEST_UTIL_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/env/data_mover.h"
#include "core/env/rng.h"
#include "gtest/gtest.h"
#include "runtime/env/notification.h"
#include "runtime/memory/segment_memory.h"
#include "runtime/transport/socket.h"

namespace heatsink::runtime::testing {

// Fills a whole segment with bytes drawn from `seed`.
inline void FillSegment(SegmentMemory& memory, SegmentId id, uint64_t seed) {
  absl::StatusOr<std::shared_ptr<SegmentBuffer>> buffer = memory.Find(id);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  Rng rng(seed);
  uint8_t* p = (*buffer)->data();
  const uint64_t n = (*buffer)->size_bytes();
  for (uint64_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = rng.Next64();
    for (int b = 0; b < 8; ++b) p[i + b] = static_cast<uint8_t>(v >> (8 * b));
  }
  for (uint64_t i = n - n % 8; i < n; ++i) p[i] = static_cast<uint8_t>(rng.Next64());
}

inline uint64_t Checksum(const SegmentMemory& memory, SegmentId id, uint64_t offset,
                         uint64_t size) {
  absl::StatusOr<std::string> bytes = memory.Read(id, offset, size);
  EXPECT_TRUE(bytes.ok()) << bytes.status();
  return bytes.ok() ? StableHash(*bytes) : 0;
}

// Collects the single `done` of a copy.
class CopyResult {
 public:
  absl::AnyInvocable<void(absl::Status) &&> Callback() {
    return [this](absl::Status status) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        EXPECT_FALSE(status_.has_value()) << "done called twice";
        status_ = std::move(status);
      }
      done_.Notify();
    };
  }
  absl::Status Wait(absl::Duration timeout = absl::Seconds(60)) {
    if (!done_.WaitForNotificationWithTimeout(timeout)) {
      return absl::DeadlineExceededError("copy did not finish in time");
    }
    std::unique_lock<std::mutex> lock(mu_);
    return *status_;
  }
  bool finished() const { return done_.HasBeenNotified(); }

 private:
  std::mutex mu_;
  std::optional<absl::Status> status_;
  Notification done_;
};

inline absl::Status CopyAndWait(DataMover& mover, const CopyRange& range) {
  CopyResult result;
  mover.StartCopy(range, result.Callback());
  return result.Wait();
}

// A loopback listener that hands its first connection to `script` on its own
// thread. Destroying it breaks the connection and joins the thread.
class FakePeer {
 public:
  explicit FakePeer(std::function<void(Socket&)> script) {
    absl::StatusOr<Socket> listener = ListenTcp("127.0.0.1", 0, 4);
    EXPECT_TRUE(listener.ok()) << listener.status();
    listener_ = *std::move(listener);
    endpoint_ = absl::StrCat("127.0.0.1:", *LocalPort(listener_));
    thread_ = std::thread([this, script = std::move(script)] {
      absl::StatusOr<Socket> accepted = AcceptTcp(listener_);
      if (!accepted.ok()) return;
      {
        std::unique_lock<std::mutex> lock(mu_);
        connection_ = *std::move(accepted);
      }
      script(connection_);
    });
  }
  ~FakePeer() {
    listener_.ShutdownBoth();
    {
      std::unique_lock<std::mutex> lock(mu_);
      connection_.ShutdownBoth();
    }
    thread_.join();
  }
  const std::string& endpoint() const { return endpoint_; }

 private:
  Socket listener_;
  std::string endpoint_;
  std::mutex mu_;
  Socket connection_;
  std::thread thread_;
};

// Records the reads a data service reports (SegmentReadObserver).
class RecordingReadObserver final : public SegmentReadObserver {
 public:
  struct Read {
    SegmentId id;
    uint64_t offset = 0;
    uint64_t size_bytes = 0;
    friend bool operator==(const Read&, const Read&) = default;
  };
  void OnSegmentRead(SegmentId id, uint64_t offset, uint64_t size_bytes) override {
    std::lock_guard<std::mutex> lock(mu_);
    reads_.push_back(Read{id, offset, size_bytes});
  }
  std::vector<Read> reads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return reads_;
  }
  // Waits (bounded) until at least `count` reads were reported: a service
  // reports a read after its last byte went out, so possibly after the
  // reader has it.
  std::vector<Read> WaitForReads(size_t count) const {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (reads().size() < count && absl::Now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return reads();
  }

 private:
  mutable std::mutex mu_;
  std::vector<Read> reads_;
};

}  // namespace heatsink::runtime::testing

#endif  // HEATSINK_TESTS_RUNTIME_TRANSPORT_TEST_UTIL_H_
