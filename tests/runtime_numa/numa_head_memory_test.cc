// Covers NumaHeadMemory and the memory-policy calls on the running kernel:
//   - on any machine (node 0): regions are 2 MiB aligned, bound with
//     MPOL_BIND to their node (get_mempolicy) and every page sits there
//     (move_pages); reads, writes and swaps keep their bytes, ranges are
//     checked; a node the kernel does not have is INVALID_ARGUMENT; the
//     serving policy reads back as MPOL_BIND | MPOL_F_STATIC_NODES;
//   - on a host with several memory nodes (tools/numa-qemu-test.sh boots a
//     2- and a 4-node guest for this): each region's pages sit on the node
//     its placement names, each worker moves its regions' dense score arrays
//     onto its node, and a promotion exchange driven by the real threads
//     moves the hot block's bytes onto the serving node's pages.
//     These skip, saying why, on a one-node machine.
#include "runtime/numa/numa_head_memory.h"

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/numa/mempolicy.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/promotion_service.h"
#include "runtime/numa/topology.h"
#include "tests/runtime_numa/machine_nodes.h"
#include "tests/runtime_numa/tiering_fixture.h"

namespace heatsink::runtime {
namespace {

using testing::BlocksPerRegion;
using testing::ExpectAllOn;
using testing::HeadBytes;
using testing::Key;
using testing::MemoryNodes;
using testing::PutHeads;
using testing::ReadHeads;
using testing::SteadyEnv;

std::vector<RegionPlacement> OnNode0(std::vector<uint64_t> sizes) {
  std::vector<RegionPlacement> regions;
  for (size_t i = 0; i < sizes.size(); ++i) {
    RegionPlacement r;
    r.region = static_cast<int>(i);
    r.node = 0;
    r.bytes = sizes[i];
    r.preferred = i == 0;
    regions.push_back(r);
  }
  return regions;
}

TEST(NumaHeadMemory, RegionsAreBoundAndResidentOnNode0) {
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(OnNode0({4 * kMiB, 3 * kMiB + 4096}), {});
  ASSERT_TRUE(memory.ok()) << memory.status();
  NumaHeadMemory& m = **memory;
  ASSERT_EQ(m.region_count(), 2);
  EXPECT_EQ(m.region_bytes(1), 3 * kMiB + 4096);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(m.data(r)) % kHugePageBytes, 0u);
    EXPECT_EQ(m.region_node(r), 0);
    absl::StatusOr<MemPolicy> policy = m.RegionPolicy(r);
    ASSERT_TRUE(policy.ok()) << policy.status();
    EXPECT_EQ(policy->mode, kMpolBind);
    EXPECT_EQ(policy->nodes, std::vector<int>{0});
    absl::StatusOr<std::vector<int>> pages = m.PageNodes(r, 0, m.region_bytes(r));
    ASSERT_TRUE(pages.ok()) << pages.status();
    EXPECT_EQ(pages->size(), (m.region_bytes(r) + 4095) / 4096);
    ExpectAllOn(*pages, 0);
    EXPECT_TRUE(m.VerifyPlacement(r).ok());
  }
}

TEST(NumaHeadMemory, ReadWriteSwapKeepBytes) {
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(OnNode0({4 * kMiB, 4 * kMiB}), {});
  ASSERT_TRUE(memory.ok()) << memory.status();
  NumaHeadMemory& m = **memory;
  const std::vector<uint8_t> a = HeadBytes(2 * kMiB, 1);
  const std::vector<uint8_t> b = HeadBytes(2 * kMiB, 2);
  ASSERT_TRUE(m.Write(0, 2 * kMiB, a).ok());
  ASSERT_TRUE(m.Write(1, 0, b).ok());
  ASSERT_TRUE(m.Swap({0, 2 * kMiB, 2 * kMiB}, {1, 0, 2 * kMiB}).ok());
  std::vector<uint8_t> out(2 * kMiB);
  ASSERT_TRUE(m.Read(0, 2 * kMiB, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out, b);
  ASSERT_TRUE(m.Read(1, 0, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out, a);
  // An exchange moves contents, never pages: both ranges stay on their node.
  EXPECT_TRUE(m.VerifyPlacement(0).ok());
  EXPECT_TRUE(m.VerifyPlacement(1).ok());

  // Swap within one region, non-overlapping.
  ASSERT_TRUE(m.Swap({0, 0, kMiB}, {0, 2 * kMiB, kMiB}).ok());
  ASSERT_TRUE(m.Read(0, 0, absl::MakeSpan(out.data(), kMiB)).ok());
  EXPECT_TRUE(std::equal(out.begin(), out.begin() + kMiB, b.begin()));
}

TEST(NumaHeadMemory, RangesAreChecked) {
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(OnNode0({2 * kMiB}), {});
  ASSERT_TRUE(memory.ok()) << memory.status();
  NumaHeadMemory& m = **memory;
  uint8_t buf[16] = {};
  EXPECT_EQ(m.Read(0, 2 * kMiB - 8, absl::MakeSpan(buf)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(m.Write(1, 0, absl::MakeConstSpan(buf)).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(m.Read(0, UINT64_MAX - 4, absl::MakeSpan(buf)).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(m.Swap({0, 0, 4096}, {0, 8192, 8192}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Swap({0, 0, 8192}, {0, 4096, 8192}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m.Swap({0, 0, 4096}, {0, 2 * kMiB, 4096}).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(m.PageNodes(0, 2 * kMiB, 1).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(NumaHeadMemory, RejectsNodesTheKernelDoesNotHave) {
  const std::vector<int> nodes = MemoryNodes();
  ASSERT_FALSE(nodes.empty());
  // The first id above every memory node, and one beyond the kernel's range.
  for (int node : {nodes.back() + 1, MaxPossibleNode() + 1}) {
    std::vector<RegionPlacement> regions = OnNode0({2 * kMiB, 2 * kMiB});
    regions[1].node = node;
    absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory = NumaHeadMemory::Create(regions, {});
    ASSERT_EQ(memory.status().code(), absl::StatusCode::kInvalidArgument)
        << "node " << node << ": " << memory.status();
    EXPECT_NE(memory.status().message().find(absl::StrCat("node ", node)),
              absl::string_view::npos)
        << memory.status();
  }
  EXPECT_EQ(NumaHeadMemory::Create({}, {}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<RegionPlacement> misnumbered = OnNode0({2 * kMiB});
  misnumbered[0].region = 3;
  EXPECT_EQ(NumaHeadMemory::Create(misnumbered, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NumaHeadMemory, MlockedRegion) {
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(OnNode0({2 * kMiB}), NumaMemoryOptions{false, true});
  if (!memory.ok()) {
    // A container without CAP_IPC_LOCK and a small RLIMIT_MEMLOCK may refuse;
    // the refusal must then be the documented one.
    ASSERT_EQ(memory.status().code(), absl::StatusCode::kResourceExhausted) << memory.status();
    GTEST_SKIP() << "mlock refused here: " << memory.status();
  }
  EXPECT_TRUE((*memory)->VerifyPlacement(0).ok());
}

TEST(NumaHeadMemory, HugePageRegion) {
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(OnNode0({2 * kMiB}), NumaMemoryOptions{true, false});
  if (!memory.ok()) {
    // No 2 MiB pages reserved on node 0: the refusal must be the documented
    // one, and nothing may have been mapped (the guest harness reserves some).
    ASSERT_EQ(memory.status().code(), absl::StatusCode::kResourceExhausted) << memory.status();
    GTEST_SKIP() << "no huge pages here: " << memory.status();
  }
  NumaHeadMemory& m = **memory;
  EXPECT_TRUE(m.VerifyPlacement(0).ok()) << m.VerifyPlacement(0);
  const std::vector<uint8_t> bytes = HeadBytes(2 * kMiB, 5);
  ASSERT_TRUE(m.Write(0, 0, bytes).ok());
  std::vector<uint8_t> out(2 * kMiB);
  ASSERT_TRUE(m.Read(0, 0, absl::MakeSpan(out)).ok());
  EXPECT_EQ(out, bytes);
}

// The serving policy is per thread (and inherited by threads created later),
// so it is set on a thread of its own.
TEST(MemPolicy, ServingPolicyIsBindStatic) {
  absl::Status status;
  absl::StatusOr<MemPolicy> policy;
  absl::StatusOr<MemPolicy> child_policy;
  std::thread serving([&] {
    status = BindServingPolicy(0);
    policy = ThreadMemPolicy();
    std::thread child([&] { child_policy = ThreadMemPolicy(); });
    child.join();
  });
  serving.join();
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_TRUE(policy.ok()) << policy.status();
  EXPECT_EQ(policy->mode, kMpolBind | kMpolFStaticNodes);
  EXPECT_EQ(policy->nodes, std::vector<int>{0});
  ASSERT_TRUE(child_policy.ok()) << child_policy.status();
  EXPECT_EQ(child_policy->mode, kMpolBind | kMpolFStaticNodes);
  // This thread was not touched.
  absl::StatusOr<MemPolicy> mine = ThreadMemPolicy();
  ASSERT_TRUE(mine.ok());
  EXPECT_NE(mine->mode, kMpolBind | kMpolFStaticNodes);

  std::thread bad([&] { status = BindServingPolicy(MaxPossibleNode() + 1); });
  bad.join();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
}

// Records where each service thread ended up after the real binding.
class CheckingBinder final : public ThreadBinder {
 public:
  explicit CheckingBinder(const Topology* topology) : real_(topology), topology_(topology) {}
  absl::Status BindCurrentThread(int node) override {
    absl::Status s = real_.BindCurrentThread(node);
    absl::StatusOr<MemPolicy> policy = ThreadMemPolicy();
    const int cpu = sched_getcpu();
    std::lock_guard<std::mutex> lock(mu_);
    if (s.ok() && policy.ok()) {
      const std::vector<int>& cpus = topology_->FindNode(node)->cpus;
      const bool cpu_ok = cpus.empty() || std::find(cpus.begin(), cpus.end(), cpu) != cpus.end();
      const bool policy_ok = policy->mode == (kMpolBind | kMpolFStaticNodes) &&
                             policy->nodes == std::vector<int>{node};
      if (cpu_ok && policy_ok) ++bound_ok_;
    }
    ++binds_;
    return s;
  }
  absl::Status BindMemory(const void* addr, uint64_t bytes, int node) override {
    absl::Status s = real_.BindMemory(addr, bytes, node);
    std::lock_guard<std::mutex> lock(mu_);
    ++memory_binds_;
    return s;
  }
  int memory_binds() {
    std::lock_guard<std::mutex> lock(mu_);
    return memory_binds_;
  }
  int binds() {
    std::lock_guard<std::mutex> lock(mu_);
    return binds_;
  }
  int bound_ok() {
    std::lock_guard<std::mutex> lock(mu_);
    return bound_ok_;
  }

 private:
  LinuxThreadBinder real_;
  const Topology* const topology_;
  std::mutex mu_;
  int binds_ = 0;
  int bound_ok_ = 0;
  int memory_binds_ = 0;
};

TEST(LinuxThreadBinder, BindsToTopologyNodesOnly) {
  absl::StatusOr<Topology> topology = LoadTopology({});
  ASSERT_TRUE(topology.ok());
  LinuxThreadBinder binder(&*topology);
  const int node = topology->nodes.front().id;
  absl::Status good, bad;
  absl::StatusOr<MemPolicy> policy = absl::InternalError("not run");
  int cpu = -1;
  std::thread t([&] {
    good = binder.BindCurrentThread(node);
    policy = ThreadMemPolicy();
    cpu = sched_getcpu();
    bad = binder.BindCurrentThread(topology->nodes.back().id + 1);
  });
  t.join();
  ASSERT_TRUE(good.ok()) << good;
  ASSERT_TRUE(policy.ok());
  EXPECT_EQ(policy->mode, kMpolBind | kMpolFStaticNodes);
  EXPECT_EQ(policy->nodes, std::vector<int>{node});
  const std::vector<int>& cpus = topology->nodes.front().cpus;
  EXPECT_NE(std::find(cpus.begin(), cpus.end(), cpu), cpus.end()) << cpu;
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  // Memory: moved onto a topology node (every page there, the range's
  // policy bound to it), refused for a node outside the topology.
  DenseScoreArray scores(1024);
  ASSERT_TRUE(binder.BindMemory(scores.storage(), scores.storage_bytes(), node).ok());
  absl::StatusOr<std::vector<int>> pages = PageNodes(scores.storage(), scores.storage_bytes());
  ASSERT_TRUE(pages.ok()) << pages.status();
  ExpectAllOn(*pages, node);
  absl::StatusOr<MemPolicy> range_policy = AddressMemPolicy(scores.storage());
  ASSERT_TRUE(range_policy.ok());
  EXPECT_EQ(range_policy->mode, kMpolBind);
  EXPECT_EQ(range_policy->nodes, std::vector<int>{node});
  EXPECT_EQ(
      binder.BindMemory(scores.storage(), scores.storage_bytes(), topology->nodes.back().id + 1)
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// Hot heads stored in the foreign region, cold ones filling the preferred
// region; the service must exchange the blocks and the hot bytes must then
// sit on the pages of the preferred region's node.
void RunExchangeOnRealMemory(const Topology& topology, const NumaPlacement& placement,
                             const TieringKnobs& knobs) {
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(placement.regions, {});
  ASSERT_TRUE(memory.ok()) << memory.status();
  for (int r = 0; r < (*memory)->region_count(); ++r) {
    ASSERT_TRUE((*memory)->VerifyPlacement(r).ok()) << (*memory)->VerifyPlacement(r);
    absl::StatusOr<MemPolicy> policy = (*memory)->RegionPolicy(r);
    ASSERT_TRUE(policy.ok());
    EXPECT_EQ(policy->nodes, std::vector<int>{placement.regions[r].node});
  }
  SteadyEnv env;
  absl::StatusOr<std::unique_ptr<TierManager>> created =
      TierManager::Create(&env.env, knobs, memory->get());
  ASSERT_TRUE(created.ok()) << created.status();
  TierManager& manager = **created;
  const int heads = static_cast<int>(knobs.heads_per_block());
  PutHeads(manager, "cold", heads, 0);
  PutHeads(manager, "hot", heads, 100);
  const int foreign_node = placement.regions[1].node;
  const int preferred_node = placement.regions[0].node;
  std::optional<KeyInfo> hot = manager.Lookup(Key("hot", 0));
  ASSERT_TRUE(hot.has_value());
  ASSERT_EQ(hot->region, 1);
  absl::StatusOr<std::vector<int>> pages = (*memory)->PageNodes(1, hot->offset, hot->size_bytes);
  ASSERT_TRUE(pages.ok());
  ExpectAllOn(*pages, foreign_node);
  ReadHeads(manager, "hot", heads, 100, 3);

  std::vector<int> region_nodes;
  for (const RegionPlacement& r : placement.regions) region_nodes.push_back(r.node);
  CheckingBinder binder(&topology);
  NumaPromotionService service(&env.env, &manager,
                               {.region_nodes = region_nodes,
                                .serving_node = placement.serving_node,
                                .binder = &binder});
  ASSERT_TRUE(service.Start().ok());
  // Each worker moved its regions' dense score arrays onto its node.
  EXPECT_EQ(binder.memory_binds(), manager.head_region_count());
  for (int r = 0; r < manager.head_region_count(); ++r) {
    const DenseScoreArray& scores = manager.dense_scores(r);
    absl::StatusOr<std::vector<int>> array_pages =
        PageNodes(scores.storage(), scores.storage_bytes());
    ASSERT_TRUE(array_pages.ok()) << array_pages.status();
    ExpectAllOn(*array_pages, placement.regions[r].node);
    absl::StatusOr<MemPolicy> array_policy = AddressMemPolicy(scores.storage());
    ASSERT_TRUE(array_policy.ok());
    EXPECT_EQ(array_policy->nodes, std::vector<int>{placement.regions[r].node}) << "region " << r;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (service.stats().exchanges == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  service.Stop();
  EXPECT_EQ(binder.binds(), static_cast<int>(placement.head_nodes.size()) + 2);
  EXPECT_EQ(binder.bound_ok(), binder.binds());
  ASSERT_EQ(service.stats().exchanges, 1);

  for (int i = 0; i < heads; ++i) {
    hot = manager.Lookup(Key("hot", i));
    ASSERT_TRUE(hot.has_value());
    ASSERT_EQ(hot->region, 0) << i;
    pages = (*memory)->PageNodes(0, hot->offset, hot->size_bytes);
    ASSERT_TRUE(pages.ok());
    ExpectAllOn(*pages, preferred_node);
    std::optional<KeyInfo> cold = manager.Lookup(Key("cold", i));
    ASSERT_TRUE(cold.has_value());
    EXPECT_EQ(cold->region, 1);
    pages = (*memory)->PageNodes(1, cold->offset, cold->size_bytes);
    ASSERT_TRUE(pages.ok());
    ExpectAllOn(*pages, foreign_node);
  }
  ReadHeads(manager, "hot", heads, 100, 1);
  ReadHeads(manager, "cold", heads, 0, 1);
  EXPECT_TRUE(manager.CheckInvariants().ok());
  EXPECT_EQ(manager.stats().exchange_bytes, static_cast<int64_t>(2 * knobs.block_bytes));
}

TieringKnobs OneBlockPerRegion(size_t foreign_regions) {
  return BlocksPerRegion(1, foreign_regions);
}

TEST(NumaPromotion, ExchangeOnNode0MovesBytesBetweenRegions) {
  const std::vector<int> nodes = MemoryNodes();
  ASSERT_FALSE(nodes.empty());
  absl::StatusOr<Topology> topology = LoadTopology({});
  ASSERT_TRUE(topology.ok());
  // Two logical regions on one real node: the real allocation and thread
  // binding paths, whatever the machine.
  NumaPlacement placement;
  placement.serving_node = nodes.front();
  placement.regions = OnNode0({2 * kMiB, 2 * kMiB});
  for (RegionPlacement& r : placement.regions) r.node = nodes.front();
  placement.head_nodes = {nodes.front()};
  RunExchangeOnRealMemory(*topology, placement, OneBlockPerRegion(1));
}

TEST(NumaMultiNode, HeadsSitOnTheNodesThePlacementNames) {
  const std::vector<int> nodes = MemoryNodes();
  if (nodes.size() < 2) {
    GTEST_SKIP() << "one NUMA node with memory here; tools/numa-qemu-test.sh runs this in a "
                    "multi-node guest";
  }
  absl::StatusOr<Topology> topology = LoadTopology({});
  ASSERT_TRUE(topology.ok());
  TieringKnobs knobs = OneBlockPerRegion(nodes.size() - 1);
  knobs.memory_bytes = 8 * kMiB;
  absl::StatusOr<NumaPlacement> placement = PlanNumaPlacement(*topology, knobs, {});
  ASSERT_TRUE(placement.ok()) << placement.status();
  std::vector<int> used;
  for (const RegionPlacement& r : placement->regions) used.push_back(r.node);
  std::sort(used.begin(), used.end());
  EXPECT_EQ(used, nodes);  // one region on every memory node
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(placement->regions, {});
  ASSERT_TRUE(memory.ok()) << memory.status();
  for (int r = 0; r < (*memory)->region_count(); ++r) {
    absl::StatusOr<std::vector<int>> pages =
        (*memory)->PageNodes(r, 0, (*memory)->region_bytes(r));
    ASSERT_TRUE(pages.ok()) << pages.status();
    ExpectAllOn(*pages, placement->regions[r].node);
    absl::StatusOr<MemPolicy> policy = (*memory)->RegionPolicy(r);
    ASSERT_TRUE(policy.ok());
    EXPECT_EQ(policy->mode, kMpolBind);
    EXPECT_EQ(policy->nodes, std::vector<int>{placement->regions[r].node});
  }
}

TEST(NumaMultiNode, ExchangeMovesTheHotBlockToTheServingNode) {
  const std::vector<int> nodes = MemoryNodes();
  if (nodes.size() < 2) {
    GTEST_SKIP() << "one NUMA node with memory here; tools/numa-qemu-test.sh runs this in a "
                    "multi-node guest";
  }
  absl::StatusOr<Topology> topology = LoadTopology({});
  ASSERT_TRUE(topology.ok());
  absl::StatusOr<NumaPlacement> placement =
      PlanNumaPlacement(*topology, OneBlockPerRegion(nodes.size() - 1), {});
  ASSERT_TRUE(placement.ok()) << placement.status();
  ASSERT_NE(placement->regions[0].node, placement->regions[1].node);
  RunExchangeOnRealMemory(*topology, *placement, OneBlockPerRegion(nodes.size() - 1));
}

TEST(NumaMultiNode, ServingPolicyOnEveryNode) {
  const std::vector<int> nodes = MemoryNodes();
  if (nodes.size() < 2) {
    GTEST_SKIP() << "one NUMA node with memory here; tools/numa-qemu-test.sh runs this in a "
                    "multi-node guest";
  }
  for (int node : nodes) {
    absl::Status status;
    absl::StatusOr<std::vector<int>> pages = absl::InternalError("no mapping");
    std::thread serving([&] {
      status = BindServingPolicy(node);
      // Fresh pages this thread faults in must come from its node. (A mapping
      // of its own: malloc may hand back pages an earlier thread touched.)
      void* p = mmap(nullptr, 2 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
      if (p == MAP_FAILED) return;
      std::memset(p, 1, 2 * kMiB);
      pages = PageNodes(p, 2 * kMiB);
      munmap(p, 2 * kMiB);
    });
    serving.join();
    ASSERT_TRUE(status.ok()) << status;
    ASSERT_TRUE(pages.ok()) << pages.status();
    ExpectAllOn(*pages, node);
  }
}

}  // namespace
}  // namespace heatsink::runtime
