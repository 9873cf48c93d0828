// heatsink-numa: the ADR-0019 NUMA tiering of one store host, on its own.
//
//   heatsink-numa topology [--topology-xml F]     what hwloc reports, as the core sees it
//   heatsink-numa plan [config flags]             where each head region would go, checked
//   heatsink-numa run [config flags] [load flags] allocate, bind, promote under a read load
//
// `run` follows the ADR's start-up order: the serving thread takes the strict
// MPOL_BIND|MPOL_F_STATIC_NODES policy on the serving node before the index
// and any thread exist; the head regions are mbind'ed to their nodes and
// verified page by page (move_pages); then the per-node promotion workers,
// the coordinator and the decay thread start, and reader threads on the
// serving node read heads. The load puts its hot keys where static
// local-first admission puts them -- in the foreign regions, stored last --
// so promotion has work to do. Once a second it prints the reads, the
// local-hit fraction of that second and the exchanges so far; at the end the
// totals (and the Prometheus text with --metrics).
//
// --perverse (benchmark only) places the preferred region on the node
// farthest from the serving node, for a remote-DRAM comparison;
// --no-numa-promotion keeps scores and decay but never moves a block.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "core/base/status_macros.h"
#include "core/env/env.h"
#include "core/env/rng.h"
#include "core/metrics/metrics.h"
#include "core/tiering/tier_manager.h"
#include "runtime/env/steady_clock.h"
#include "runtime/numa/numa_head_memory.h"
#include "runtime/numa/placement.h"
#include "runtime/numa/promotion_service.h"
#include "runtime/numa/topology.h"
#include "tools/numa_flags.h"

namespace heatsink::runtime {
namespace {

using ConfigFlags = NumaConfigFlags;

void AddConfigFlags(CLI::App* app, ConfigFlags* f) {
  app->add_option("--topology-xml", f->topology_xml,
                  "hwloc XML export to plan for instead of this machine (also HWLOC_XMLFILE)");
  AddHeadPoolFlags(app, f);
  app->add_flag("--huge-pages", f->huge_pages, "back head regions with 2 MiB huge pages");
  app->add_flag("--mlock", f->mlock, "lock head regions in RAM");
  app->add_option("--set", f->sets, "tiering knob override name=value (repeatable)");
}

struct LoadFlags {
  double duration_s = 10;
  int readers = 1;
  double hot_fraction = 0;  // 0: the preferred region's share of the heads
  int hot_read_percent = 90;
  uint64_t seed = 1;
  bool metrics = false;
};

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "heatsink-numa: %s\n", status.ToString().c_str());
  return 1;
}

int RunTopology(const ConfigFlags& f) {
  absl::StatusOr<Topology> topology = LoadFor(f);
  if (!topology.ok()) return Fail(topology.status());
  std::fputs(DescribeTopology(*topology).c_str(), stdout);
  return 0;
}

int RunPlan(const ConfigFlags& f) {
  absl::StatusOr<Topology> topology = LoadFor(f);
  if (!topology.ok()) return Fail(topology.status());
  absl::StatusOr<TieringKnobs> knobs = KnobsFor(f);
  if (!knobs.ok()) return Fail(knobs.status());
  absl::StatusOr<NumaPlacement> placement = PlanFor(*topology, *knobs, f);
  if (!placement.ok()) return Fail(placement.status());
  std::fputs(DescribePlacement(*placement).c_str(), stdout);
  return 0;
}

TierKey LoadKey(int64_t i) { return TierKey{ObjectName{"numa-load", absl::StrCat("k", i)}, 0}; }

// The read load's keys: every head, the last hot_keys of them hot.
struct LoadKeys {
  int64_t keys = 0;
  int64_t hot_keys = 0;
};

// Fills every head region with fixed heads, in allocation order: the
// preferred region first, so the last keys stored are the foreign ones.
absl::StatusOr<LoadKeys> StoreHeads(TierManager& manager, const NumaPlacement& placement,
                                    const TieringKnobs& knobs, const LoadFlags& load) {
  uint64_t head_bytes_total = 0;
  for (const RegionPlacement& r : placement.regions) {
    if (r.pool == PoolKind::kHead) {
      head_bytes_total += r.bytes / knobs.block_bytes * knobs.block_bytes;
    }
  }
  LoadKeys out;
  out.keys = static_cast<int64_t>(head_bytes_total / knobs.ram_head_bytes);
  std::vector<uint8_t> value(knobs.ram_head_bytes);
  for (int64_t i = 0; i < out.keys; ++i) {
    for (size_t b = 0; b < value.size(); b += 4096) value[b] = static_cast<uint8_t>(i);
    HS_RETURN_IF_ERROR(manager.Put(LoadKey(i), value));
  }
  const double preferred_share =
      static_cast<double>(placement.regions[0].bytes) / static_cast<double>(head_bytes_total);
  const double hot_fraction = load.hot_fraction > 0 ? load.hot_fraction : preferred_share;
  out.hot_keys = std::max<int64_t>(1, static_cast<int64_t>(hot_fraction * out.keys));
  std::printf("%lld heads stored; hot set: the last %lld keys, %d%% of reads\n",
              static_cast<long long>(out.keys), static_cast<long long>(out.hot_keys),
              load.hot_read_percent);
  return out;
}

// Once a second for `duration_s`: the reads, the local-hit fraction of that
// second and the exchanges so far.
void ReportEachSecond(TierManager& manager, double duration_s) {
  const auto start = std::chrono::steady_clock::now();
  TieringStats last = manager.stats();
  for (int second = 1; second <= static_cast<int>(duration_s + 0.999); ++second) {
    std::this_thread::sleep_until(start + std::chrono::seconds(second));
    const TieringStats now = manager.stats();
    const int64_t local = now.reads_local - last.reads_local;
    const int64_t foreign = now.reads_foreign - last.reads_foreign;
    std::printf("t=%ds reads=%lld local_hit=%.3f exchanges=%lld decay_passes=%lld\n", second,
                static_cast<long long>(local + foreign),
                local + foreign > 0 ? static_cast<double>(local) / (local + foreign) : 0.0,
                static_cast<long long>(now.exchanges), static_cast<long long>(now.decay_passes));
    std::fflush(stdout);
    last = now;
  }
}

// The totals line once the load stopped.
void PrintTotals(TierManager& manager, const NumaPromotionService& service, int64_t read_errors) {
  const TieringStats totals = manager.stats();
  const PromotionServiceStats service_stats = service.stats();
  std::printf(
      "total: reads=%lld local_hit_fraction=%.3f exchanges=%lld bytes_moved=%lld "
      "decay_passes=%lld rounds=%lld read_errors=%lld promotion_disabled=%s\n",
      static_cast<long long>(totals.reads_local + totals.reads_foreign), totals.LocalHitFraction(),
      static_cast<long long>(totals.exchanges), static_cast<long long>(totals.exchange_bytes),
      static_cast<long long>(totals.decay_passes), static_cast<long long>(service_stats.rounds),
      static_cast<long long>(read_errors), service_stats.promotion_disabled ? "yes" : "no");
}

int RunLoad(const ConfigFlags& f, const LoadFlags& load) {
  absl::StatusOr<Topology> topology = LoadFor(f);
  if (!topology.ok()) return Fail(topology.status());
  absl::StatusOr<TieringKnobs> knobs = KnobsFor(f);
  if (!knobs.ok()) return Fail(knobs.status());
  absl::StatusOr<NumaPlacement> placement = PlanFor(*topology, *knobs, f);
  if (!placement.ok()) return Fail(placement.status());
  if (load.readers < 1 || load.duration_s <= 0 || load.hot_read_percent < 0 ||
      load.hot_read_percent > 100 || load.hot_fraction < 0 || load.hot_fraction > 1) {
    return Fail(absl::InvalidArgumentError(
        "--readers >= 1, --duration-s > 0, --hot-read-percent in [0, 100], "
        "--hot-fraction in [0, 1]"));
  }
  std::fputs(DescribePlacement(*placement).c_str(), stdout);

  // ADR-0019: the serving policy comes before the index and every thread.
  if (absl::Status s = BindServingPolicy(placement->serving_node); !s.ok()) return Fail(s);
  NumaMemoryOptions memory_options;
  memory_options.huge_pages = f.huge_pages;
  memory_options.mlock = f.mlock;
  absl::StatusOr<std::unique_ptr<NumaHeadMemory>> memory =
      NumaHeadMemory::Create(placement->regions, memory_options);
  if (!memory.ok()) return Fail(memory.status());
  for (int r = 0; r < (*memory)->region_count(); ++r) {
    if (absl::Status s = (*memory)->VerifyPlacement(r); !s.ok()) return Fail(s);
  }
  std::printf("head regions bound and verified (move_pages)\n");

  SteadyClock clock;
  Rng rng(load.seed);
  Env env;
  env.clock = &clock;
  env.rng = &rng;
  MetricsRegistry metrics;
  absl::StatusOr<std::unique_ptr<TierManager>> created =
      TierManager::Create(&env, *knobs, memory->get(), &metrics);
  if (!created.ok()) return Fail(created.status());
  TierManager& manager = **created;

  absl::StatusOr<LoadKeys> stored = StoreHeads(manager, *placement, *knobs, load);
  if (!stored.ok()) return Fail(stored.status());
  const int64_t keys = stored->keys;
  const int64_t hot_keys = stored->hot_keys;

  LinuxThreadBinder binder(&*topology);
  PromotionServiceOptions service_options;
  for (const RegionPlacement& r : placement->regions)
    service_options.region_nodes.push_back(r.node);
  service_options.serving_node = placement->serving_node;
  service_options.binder = &binder;
  NumaPromotionService service(&env, &manager, service_options);
  if (absl::Status s = service.Start(); !s.ok()) return Fail(s);

  std::atomic<bool> stop{false};
  std::atomic<int64_t> read_errors{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < load.readers; ++t) {
    readers.emplace_back([&, t] {
      if (!binder.BindCurrentThread(placement->serving_node).ok()) read_errors.fetch_add(1);
      Rng reader_rng(rng.SubSeed(absl::StrCat("reader-", t)));
      std::vector<uint8_t> out(knobs->ram_head_bytes);
      while (!stop.load(std::memory_order_relaxed)) {
        const bool hot = reader_rng.Uniform(100) < static_cast<uint64_t>(load.hot_read_percent);
        const int64_t i = hot ? keys - 1 - static_cast<int64_t>(reader_rng.Uniform(hot_keys))
                              : static_cast<int64_t>(reader_rng.Uniform(keys));
        absl::StatusOr<ReadToken> token = manager.OpenRead(LoadKey(i));
        if (!token.ok() || !manager.ReadBytes(*token, 0, absl::MakeSpan(out)).ok()) {
          read_errors.fetch_add(1);
          continue;
        }
        manager.CompleteRead(std::move(*token));
      }
    });
  }

  ReportEachSecond(manager, load.duration_s);
  stop = true;
  for (std::thread& t : readers) t.join();
  service.Stop();

  PrintTotals(manager, service, read_errors.load());
  if (load.metrics) std::fputs(RenderPrometheusText(metrics.Snapshot()).c_str(), stdout);
  if (absl::Status s = manager.CheckInvariants(); !s.ok()) return Fail(s);
  return read_errors.load() == 0 ? 0 : 1;
}

}  // namespace
}  // namespace heatsink::runtime

int main(int argc, char** argv) {
  using namespace heatsink::runtime;
  CLI::App app{"heatsink-numa: ADR-0019 NUMA head placement and promotion on this host"};
  app.require_subcommand(1);
  ConfigFlags topology_flags, plan_flags, run_flags;
  LoadFlags load;
  CLI::App* topology = app.add_subcommand("topology", "print the NUMA topology hwloc reports");
  topology->add_option("--topology-xml", topology_flags.topology_xml, "hwloc XML export to read");
  topology->add_option("--nic", topology_flags.nic, "network device whose node serves");
  CLI::App* plan = app.add_subcommand("plan", "check a configuration and print the placement");
  AddConfigFlags(plan, &plan_flags);
  CLI::App* run = app.add_subcommand("run", "bind memory, start promotion and read under load");
  AddConfigFlags(run, &run_flags);
  run->add_option("--duration-s", load.duration_s, "seconds of load")->capture_default_str();
  run->add_option("--readers", load.readers, "reader threads on the serving node")
      ->capture_default_str();
  run->add_option("--hot-fraction", load.hot_fraction,
                  "share of keys in the hot set (default: the preferred region's share)");
  run->add_option("--hot-read-percent", load.hot_read_percent, "reads that go to the hot set")
      ->capture_default_str();
  run->add_option("--seed", load.seed, "seed of the read load")->capture_default_str();
  run->add_flag("--metrics", load.metrics, "print the Prometheus text at the end");
  CLI11_PARSE(app, argc, argv);
  if (topology->parsed()) return RunTopology(topology_flags);
  if (plan->parsed()) return RunPlan(plan_flags);
  return RunLoad(run_flags, load);
}
