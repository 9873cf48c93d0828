// When heatsink-sim starts again with its allocator settings
// (sim/malloc_tuning.h): only when nobody chose GLIBC_TUNABLES, the user did
// not turn it off, and valgrind is not watching.
#include "sim/malloc_tuning.h"

#include "gtest/gtest.h"

namespace heatsink::sim {
namespace {

TEST(MallocTuning, SetsTheTunablesOnlyWhenNothingElseDecided) {
  EXPECT_EQ(MallocTunablesToSet(nullptr, nullptr, nullptr), std::string(kSimMallocTunables));
  EXPECT_EQ(MallocTunablesToSet(nullptr, "1", "/usr/lib/libheaptrack_preload.so"),
            std::string(kSimMallocTunables));
  // The second start, or the user's own tunables (even empty ones).
  EXPECT_FALSE(MallocTunablesToSet(kSimMallocTunables, nullptr, nullptr).has_value());
  EXPECT_FALSE(MallocTunablesToSet("", nullptr, nullptr).has_value());
  EXPECT_FALSE(MallocTunablesToSet(nullptr, "0", nullptr).has_value());
  EXPECT_FALSE(MallocTunablesToSet(nullptr, nullptr,
                                   "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so:"
                                   "/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so")
                   .has_value());
}

}  // namespace
}  // namespace heatsink::sim
