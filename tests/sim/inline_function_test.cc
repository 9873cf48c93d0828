// Covers InlineFunction (sim/inline_function.h): small closures stay inline
// and large or throwing-move ones go to the heap, both call with their
// arguments and destroy their captures exactly once (after moves, reassignment
// and nullptr), empty pointers and wrappers make an empty function, and
// calling an empty one is a checked error.
#include "sim/inline_function.h"

#include <array>
#include <memory>
#include <string>
#include <utility>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace heatsink::sim {
namespace {

using Fn = InlineFunction<void(absl::Status), 48>;

// Counts live copies of itself through a shared counter.
struct Tracked {
  explicit Tracked(std::shared_ptr<int> live) : live(std::move(live)) { ++*this->live; }
  Tracked(Tracked&& other) noexcept : live(other.live) { ++*live; }
  Tracked(const Tracked& other) : live(other.live) { ++*live; }
  ~Tracked() { --*live; }
  std::shared_ptr<int> live;
};

TEST(InlineFunction, SmallClosuresAreInlineAndLargeOnesOnTheHeap) {
  struct Small {
    std::array<char, 40> bytes;
    void operator()(absl::Status) && {}
  };
  struct Large {
    std::array<char, 49> bytes;
    void operator()(absl::Status) && {}
  };
  struct ThrowingMove {
    ThrowingMove() = default;
    ThrowingMove(ThrowingMove&&) {}
    void operator()(absl::Status) && {}
  };
  EXPECT_TRUE(Fn::FitsInline<Small>());
  EXPECT_FALSE(Fn::FitsInline<Large>());
  EXPECT_FALSE(Fn::FitsInline<ThrowingMove>());
  // A nested AnyInvocable (two words plus its manager) fits an event's slot.
  EXPECT_TRUE((InlineFunction<void(), 96>::FitsInline<absl::AnyInvocable<void() &&>>()));
}

void ExpectCallsAndDestroysOnce(size_t padding_bytes) {
  auto live = std::make_shared<int>(0);
  std::string seen;
  {
    Fn f;
    {
      Tracked t(live);
      std::string pad(padding_bytes, 'x');
      if (padding_bytes == 0) {
        f = [t, &seen](absl::Status s) { seen = std::string(s.message()); };
      } else {
        std::array<char, 64> big{};
        f = [t, &seen, big](absl::Status s) { seen = std::string(s.message()) + big[0]; };
      }
    }
    EXPECT_EQ(*live, 1);
    Fn g = std::move(f);
    EXPECT_TRUE(f == nullptr);
    EXPECT_EQ(*live, 1);
    Fn h;
    h = std::move(g);
    EXPECT_EQ(*live, 1);
    std::move(h)(absl::InternalError("called"));
    EXPECT_EQ(seen.substr(0, 6), "called");
    EXPECT_EQ(*live, 1);  // the target stays until the function goes
    h = nullptr;
    EXPECT_EQ(*live, 0);
    EXPECT_FALSE(static_cast<bool>(h));
  }
  EXPECT_EQ(*live, 0);
}

TEST(InlineFunction, CallsWithArgumentsAndDestroysCapturesOnce) {
  ExpectCallsAndDestroysOnce(0);   // inline
  ExpectCallsAndDestroysOnce(64);  // on the heap
}

TEST(InlineFunction, ReassignmentDestroysTheOldTarget) {
  auto a = std::make_shared<int>(0);
  auto b = std::make_shared<int>(0);
  Fn f = [t = Tracked(a)](absl::Status) {};
  f = [t = Tracked(b)](absl::Status) {};
  EXPECT_EQ(*a, 0);
  EXPECT_EQ(*b, 1);
}

TEST(InlineFunction, EmptyPointersAndWrappersMakeAnEmptyFunction) {
  void (*null_fn)(absl::Status) = nullptr;
  EXPECT_TRUE(Fn(null_fn) == nullptr);
  EXPECT_TRUE(Fn(absl::AnyInvocable<void(absl::Status) &&>()) == nullptr);
  EXPECT_TRUE(Fn(nullptr) == nullptr);
  EXPECT_TRUE(Fn() == nullptr);
  int calls = 0;
  absl::AnyInvocable<void(absl::Status) &&> wrapped = [&calls](absl::Status) { ++calls; };
  Fn f = std::move(wrapped);
  ASSERT_FALSE(f == nullptr);
  std::move(f)(absl::OkStatus());
  EXPECT_EQ(calls, 1);
}

TEST(InlineFunctionDeathTest, CallingAnEmptyFunctionIsAnError) {
  EXPECT_DEATH(
      {
        Fn f;
        std::move(f)(absl::OkStatus());
      },
      "call of an empty InlineFunction");
}

}  // namespace
}  // namespace heatsink::sim
