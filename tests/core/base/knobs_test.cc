// Covers the knob name registry: typed parsing, unknown names, dumps that
// reload exactly.
#include "core/base/knobs.h"

#include "gtest/gtest.h"

namespace heatsink {
namespace {

struct DemoKnobs {
  int64_t entries_max = 10;
  double ratio = 0.5;
  bool enabled = false;
  std::string name = "x";
};

KnobRegistry<DemoKnobs> MakeRegistry() {
  KnobRegistry<DemoKnobs> r;
  r.Field("entries_max", "limit", [](DemoKnobs& k) -> int64_t& { return k.entries_max; })
      .Field("ratio", "ratio", [](DemoKnobs& k) -> double& { return k.ratio; })
      .Field("enabled", "flag", [](DemoKnobs& k) -> bool& { return k.enabled; })
      .Field("name", "name", [](DemoKnobs& k) -> std::string& { return k.name; });
  return r;
}

TEST(KnobRegistry, SetsTypedFields) {
  const auto r = MakeRegistry();
  DemoKnobs k;
  ASSERT_TRUE(r.Set(k, "entries_max", "42").ok());
  ASSERT_TRUE(r.Set(k, "ratio", "0.25").ok());
  ASSERT_TRUE(r.Set(k, "enabled", "true").ok());
  ASSERT_TRUE(r.Set(k, "name", "y").ok());
  EXPECT_EQ(k.entries_max, 42);
  EXPECT_EQ(k.ratio, 0.25);
  EXPECT_TRUE(k.enabled);
  EXPECT_EQ(k.name, "y");
  EXPECT_EQ(r.Find("ratio")->type, KnobType::kDouble);
}

TEST(KnobRegistry, RejectsBadValuesAndNames) {
  const auto r = MakeRegistry();
  DemoKnobs k;
  EXPECT_EQ(r.Set(k, "nope", "1").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(r.Set(k, "entries_max", "1.5").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Set(k, "ratio", "nan").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Set(k, "ratio", "inf").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Set(k, "enabled", "maybe").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(k.entries_max, 10);
}

TEST(KnobRegistry, DumpReloadsExactly) {
  const auto r = MakeRegistry();
  DemoKnobs a;
  a.ratio = 0.1 + 0.2;
  DemoKnobs b;
  for (const auto& [name, value] : r.Dump(a)) ASSERT_TRUE(r.Set(b, name, value).ok());
  EXPECT_EQ(a.ratio, b.ratio);
}

}  // namespace
}  // namespace heatsink
