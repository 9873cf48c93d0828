// Holds the route-class network (sim/network) to the per-flow solver it
// replaced (tests/sim/legacy_network.*, the previous sim/network kept as a
// reference model): on open-loop random workloads -- the flows started do
// not depend on the ones that end -- every flow ends at the same nanosecond
// with the same status in both, including flows failed one by one and trunk
// degradation. Only the order of callbacks due at the same nanosecond may
// differ (see the tie rule in sim/network.h).
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sim/network.h"
#include "tests/sim/legacy_network.h"
#include "tests/sim/legacy_network.inc"
#include "tests/sim/network_fixture.h"

namespace heatsink::sim {
namespace {

using testing::kGBps;

NetworkTopology ThreeDomains() {
  NetworkTopology t;
  for (const char* d : {"A", "B", "C"}) {
    DomainSpec domain{d, {}};
    for (int i = 0; i < 3; ++i) {
      domain.hosts.push_back(testing::Host(absl::StrCat(d, i), (1 + i) * kGBps, 1 + i % 2));
    }
    t.domains.push_back(domain);
  }
  t.trunks.push_back(TrunkSpec{"A", "B", 2 * kGBps, 20'000, 200});
  t.trunks.push_back(TrunkSpec{"B", "C", 3 * kGBps, 30'000, 100});
  return t;
}

struct Ending {
  TimeNs t_ns = -1;
  absl::StatusCode code = absl::StatusCode::kUnknown;
  bool operator==(const Ending& o) const { return t_ns == o.t_ns && code == o.code; }
};

struct Op {
  TimeNs at;
  int kind;  // 0 start, 1 fail flow #arg, 2 degrade
  FlowSpec spec;
  int arg;
};

std::vector<Op> MakeOps(uint64_t seed) {
  Rng rng(seed);
  std::vector<Op> ops;
  for (int i = 0; i < 400; ++i) {
    Op op{};
    // Coarse start times so many flows start together.
    op.at = static_cast<TimeNs>(rng.Uniform(20)) * 2'000'000;
    op.kind = 0;
    op.spec.src_host = static_cast<int>(rng.Uniform(9));
    op.spec.dst_host = rng.Bernoulli(3, 4) ? (op.spec.src_host / 3) * 3 + static_cast<int>(rng.Uniform(3))
                                           : static_cast<int>(rng.Uniform(9));
    // Few sizes so many flows tie.
    op.spec.bytes = int64_t{262'144} << rng.Uniform(4);
    ops.push_back(op);
  }
  for (int i = 0; i < 20; ++i) {
    Op op{};
    op.at = static_cast<TimeNs>(rng.Uniform(40'000'000));
    op.kind = 1;
    op.arg = static_cast<int>(rng.Uniform(400));
    ops.push_back(op);
  }
  Op degrade{};
  degrade.at = 7'000'000;
  degrade.kind = 2;
  ops.push_back(degrade);
  return ops;
}

template <typename Net>
std::map<int, Ending> RunOps(const std::vector<Op>& ops, std::vector<int>* order) {
  Engine engine;
  Rng rng(3);
  auto created = Net::Create(&engine, &rng, ThreeDomains(), testing::ExactKnobs());
  EXPECT_TRUE(created.ok());
  Net& net = **created;
  std::map<int, Ending> endings;
  std::vector<FlowId> ids(400, 0);
  int started = 0;
  for (const Op& op : ops) {
    engine.ScheduleAt(op.at, [&, op] {
      if (op.kind == 0) {
        const int index = started++;
        const FlowSpec& spec = op.spec;
        auto id = net.StartFlow(
            {spec.src_host, spec.dst_host, spec.bytes, -1, -1, 0},
            [&endings, &engine, order, index](absl::Status s) {
              endings[index] = Ending{engine.NowNs(), s.code()};
              order->push_back(index);
            });
        EXPECT_TRUE(id.ok());
        ids[index] = *id;
      } else if (op.kind == 1) {
        if (ids[op.arg] != 0) net.FailFlow(ids[op.arg], absl::AbortedError("x"));
      } else {
        EXPECT_TRUE(net.DegradeTrunk("A", "B", 40, 0).ok());
      }
    });
  }
  EXPECT_TRUE(engine.Run().ok());
  return endings;
}

TEST(NetworkVsLegacy, SameEndingsOnOpenLoopWorkloads) {
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const std::vector<Op> ops = MakeOps(seed);
    std::vector<int> new_order, old_order;
    const auto now = RunOps<Network>(ops, &new_order);
    const auto old = RunOps<legacy::Network>(ops, &old_order);
    ASSERT_EQ(now.size(), old.size());
    int differ = 0;
    for (const auto& [index, ending] : now) {
      EXPECT_EQ(ending.t_ns, old.at(index).t_ns) << "seed " << seed << " flow " << index;
      EXPECT_EQ(ending.code, old.at(index).code) << "seed " << seed << " flow " << index;
    }
    for (size_t i = 0; i < new_order.size(); ++i) differ += new_order[i] != old_order[i];
    std::printf("seed %d: %zu flows, %d callbacks in another order\n", static_cast<int>(seed),
                new_order.size(), differ);
  }
}

}  // namespace
}  // namespace heatsink::sim
