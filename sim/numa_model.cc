#include "sim/numa_model.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/status_macros.h"

namespace heatsink::sim {
namespace {

constexpr int64_t kNsPerSecond = 1'000'000'000;

// bytes / bytes_per_s in ns, rounded up, saturating.
DurationNs TransferNs(uint64_t bytes, int64_t bytes_per_s) {
  const unsigned __int128 ns = (static_cast<unsigned __int128>(bytes) * kNsPerSecond +
                                static_cast<uint64_t>(bytes_per_s) - 1) /
                               static_cast<uint64_t>(bytes_per_s);
  return ns > static_cast<unsigned __int128>(INT64_MAX / 4) ? INT64_MAX / 4
                                                            : static_cast<DurationNs>(ns);
}

const ScenarioNumaNode* FindNumaNode(const ScenarioHost& host, int id) {
  for (const ScenarioNumaNode& n : host.numa_nodes) {
    if (n.id == id) return &n;
  }
  HS_CHECK_MSG(false, absl::StrCat("NUMA node ", id, " is not on host ", host.name));
  return nullptr;
}

}  // namespace

absl::StatusOr<NumaPlacement> PlanHostNumaPlacement(const ScenarioHost& host,
                                                    const TieringKnobs& knobs) {
  NumaPlacementNames names;
  names.serving_node = "nic_numa_node";
  names.sub_memory_nodes = "sub_memory_nodes";  // the simulator has no such list
  names.memory = "$.knobs.memory";
  names.sub_memory = "$.knobs.sub_memory";
  names.small_sub_memory = "$.knobs.small_sub_memory";
  names.topology = absl::StrCat("host ", host.name);
  absl::StatusOr<NumaPlacement> placement =
      PlanNumaPlacement(HostTopology(host), knobs, NumaPlacementOptions(), names);
  if (!placement.ok()) {
    return absl::Status(placement.status().code(),
                        absl::StrCat(host.numa_where.empty() ? host.name : host.numa_where, ": ",
                                     placement.status().message()));
  }
  return placement;
}

uint64_t ModelledHeadMemory::region_bytes(int region) const {
  HS_CHECK(region >= 0 && region < region_count());
  return region_bytes_[static_cast<size_t>(region)];
}

absl::Status ModelledHeadMemory::Read(int region, uint64_t offset, absl::Span<uint8_t> out) const {
  HS_RETURN_IF_ERROR(CheckMemoryRange(
      region, region_count(),
      region >= 0 && region < region_count() ? region_bytes_[static_cast<size_t>(region)] : 0,
      offset, out.size()));
  std::fill(out.begin(), out.end(), uint8_t{0});
  return absl::OkStatus();
}

absl::Status ModelledHeadMemory::Write(int region, uint64_t offset, absl::Span<const uint8_t> in) {
  return CheckMemoryRange(
      region, region_count(),
      region >= 0 && region < region_count() ? region_bytes_[static_cast<size_t>(region)] : 0,
      offset, in.size());
}

absl::Status ModelledHeadMemory::Swap(const MemoryRange& a, const MemoryRange& b) {
  for (const MemoryRange* r : {&a, &b}) {
    HS_RETURN_IF_ERROR(CheckMemoryRange(r->region, region_count(),
                                        r->region >= 0 && r->region < region_count()
                                            ? region_bytes_[static_cast<size_t>(r->region)]
                                            : 0,
                                        r->offset, r->size_bytes));
  }
  if (a.size_bytes != b.size_bytes) {
    return absl::InvalidArgumentError("swap of ranges of different sizes");
  }
  if (a.region == b.region && a.offset < b.offset + b.size_bytes &&
      b.offset < a.offset + a.size_bytes) {
    return absl::InvalidArgumentError("swap of overlapping ranges");
  }
  return absl::OkStatus();
}

class NumaHostModel::Costs final : public TieringCostModel {
 public:
  Costs(const NumaCosts& costs, uint64_t heads_per_block, int64_t local_bytes_per_s)
      : costs_(costs), heads_per_block_(heads_per_block), local_bytes_per_s_(local_bytes_per_s) {}
  // Every head of every scanned block is read once.
  DurationNs ScanNs(const RegionSummary& summary) const override {
    return static_cast<DurationNs>(summary.blocks_scanned * heads_per_block_) *
           costs_.scan_ns_per_head;
  }
  DurationNs ExchangeNs(uint64_t bytes) const override {
    return TransferNs(bytes, local_bytes_per_s_);
  }
  DurationNs DecayNs(int64_t keys) const override { return keys * costs_.decay_ns_per_key; }

 private:
  const NumaCosts costs_;
  const uint64_t heads_per_block_;
  const int64_t local_bytes_per_s_;
};

absl::StatusOr<std::unique_ptr<NumaHostModel>> NumaHostModel::Create(Env* env,
                                                                     const TieringKnobs& knobs,
                                                                     const ScenarioHost& host,
                                                                     const NumaCosts& costs) {
  HS_RETURN_IF_ERROR(knobs.Validate());
  HS_CHECK(!host.numa_nodes.empty());
  std::unique_ptr<NumaHostModel> model(new NumaHostModel());
  model->ram_head_bytes_ = knobs.ram_head_bytes;

  HS_ASSIGN_OR_RETURN(model->placement_, PlanHostNumaPlacement(host, knobs));
  const ScenarioNumaNode* nic_node = FindNumaNode(host, model->placement_.serving_node);
  for (const RegionPlacement& r : model->placement_.regions) {
    const ScenarioNumaNode* node = FindNumaNode(host, r.node);
    RegionCost c;
    if (r.preferred) {
      c.latency_ns = node->local_read_latency_ns;
      c.bytes_per_s = std::max<int64_t>(node->local_read_bytes_per_s, 1);
    } else {
      c.latency_ns = node->remote_read_latency_ns;
      c.bytes_per_s = std::max<int64_t>(node->remote_read_bytes_per_s, 1);
    }
    model->region_costs_.push_back(c);
  }

  const std::vector<RegionSpec> plan = PlanRegions(knobs);
  model->memory_ = std::make_unique<ModelledHeadMemory>(RegionSizes(plan));
  HS_ASSIGN_OR_RETURN(model->manager_, TierManager::Create(env, knobs, model->memory_.get()));
  model->costs_ = std::make_unique<Costs>(costs, knobs.heads_per_block(),
                                          std::max<int64_t>(nic_node->local_read_bytes_per_s, 1));
  model->driver_ = std::make_unique<TieringDriver>(env, model->manager_.get(), model->costs_.get());
  return model;
}

NumaHostModel::~NumaHostModel() {
  if (driver_ != nullptr) driver_->Stop();
}

void NumaHostModel::Start() {
  if (!driver_->running()) driver_->Start();
}

absl::Status NumaHostModel::CheckInvariants() const { return manager_->CheckInvariants(); }

void NumaHostModel::Store(const ObjectName& name, uint64_t size_bytes) {
  TierKey key{name, 0};  // one copy of the name for every chunk
  for (uint64_t offset = 0; offset < size_bytes; offset += ram_head_bytes_, ++key.chunk) {
    const uint64_t bytes = std::min(ram_head_bytes_, size_bytes - offset);
    absl::StatusOr<StoreTicket> ticket = manager_->BeginStore(key, bytes);
    if (!ticket.ok() || !manager_->CommitStore(std::move(*ticket)).ok()) {
      // A key indexed before stays indexed.
      ++stores_failed_;
    }
  }
}

void NumaHostModel::Remove(const ObjectName& name, uint64_t size_bytes) {
  TierKey key{name, 0};
  for (uint64_t offset = 0; offset < size_bytes; offset += ram_head_bytes_, ++key.chunk) {
    // NOT_FOUND for a chunk the pool never took is expected.
    (void)manager_->Delete(key);
  }
}

DurationNs NumaHostModel::ChunkCost(int region, uint64_t bytes) const {
  const RegionCost& c = region_costs_[static_cast<size_t>(region)];
  return c.latency_ns + TransferNs(bytes, c.bytes_per_s);
}

NumaReadCost NumaHostModel::Read(const ObjectName& name, uint64_t size_bytes, size_t interval) {
  HS_CHECK_MSG(interval >= open_interval_, "NUMA reads must come in interval order");
  // Close the open interval, and any quiet ones between it and this read's.
  while (interval > open_interval_) {
    CloseOpenInterval();
    ++open_interval_;
  }
  NumaReadCost cost;
  TierKey key{name, 0};
  for (uint64_t offset = 0; offset < size_bytes; offset += ram_head_bytes_, ++key.chunk) {
    std::optional<ReadToken> token = manager_->OpenReadIfIndexed(key);
    if (!token.has_value()) continue;  // never indexed: backing memory
    const uint64_t bytes = std::min(ram_head_bytes_, size_bytes - offset);
    if (token->placement() != ReadPlacement::kEvicted) {
      // The region the chunk's head is pinned in while the token is open.
      const int region = token->region() >= 0 ? token->region() : 0;
      cost.memory_ns += ChunkCost(region, bytes);
      ++cost.head_reads;
      const bool local = token->placement() == ReadPlacement::kLocal;
      if (local) ++cost.local_reads;
      ChunkReads& counted = interval_reads_[key];
      ++counted.reads;
      if (local) ++counted.local;
    }
    manager_->CompleteRead(std::move(*token));
  }
  open_stats_.head_reads += cost.head_reads;
  open_stats_.local_reads += cost.local_reads;
  return cost;
}

void NumaHostModel::InheritScores(const ObjectName& name, uint64_t size_bytes,
                                  const NumaHostModel& source) {
  const double fraction = manager_->knobs().copy_score_inheritance;
  if (fraction <= 0) return;
  TierKey key{name, 0};
  for (uint64_t offset = 0; offset < size_bytes; offset += ram_head_bytes_, ++key.chunk) {
    const std::optional<KeyInfo> from = source.manager_->Lookup(key);
    if (!from.has_value() || from->score <= 0) continue;
    // A chunk this host could not index (its pool was full) inherits nothing.
    const absl::Status raised = manager_->RaiseScore(key, from->score * fraction);
    HS_CHECK_MSG(raised.ok() || absl::IsNotFound(raised), raised.ToString());
    if (raised.ok() && manager_->knobs().place_hot_copies_local) {
      // The modelled memory's swap cannot fail.
      HS_CHECK_OK(manager_->PlaceHotNewcomer(key).status());
    }
  }
}

void NumaHostModel::CloseOpenInterval() {
  NumaIntervalStats stats = open_stats_;
  const uint64_t block_bytes = manager_->geometry().block_bytes;
  const uint64_t heads_per_block = manager_->geometry().heads_per_block;
  const uint64_t preferred_blocks = manager_->regions().front().bytes / block_bytes;
  // Sums only, so the hash map's order never reaches a figure.
  absl::flat_hash_map<std::pair<int, uint64_t>, int64_t> block_reads;
  std::vector<int64_t> head_reads;
  head_reads.reserve(interval_reads_.size());
  int64_t served_as_is = 0;  // arena or removed chunks: as they were served
  for (const auto& [key, counted] : interval_reads_) {
    const std::optional<KeyInfo> info = manager_->Lookup(key);
    if (!info.has_value() || info->residence != Residence::kFixedHead) {
      served_as_is += counted.local;
      continue;
    }
    block_reads[{info->region, info->offset / block_bytes}] += counted.reads;
    head_reads.push_back(counted.reads);
  }
  std::vector<int64_t> blocks;
  blocks.reserve(block_reads.size());
  for (const auto& [block, reads] : block_reads) blocks.push_back(reads);
  const auto top_sum = [](std::vector<int64_t>& v, uint64_t k) {
    const size_t n = std::min<size_t>(v.size(), static_cast<size_t>(k));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(n), v.end(),
                     std::greater<int64_t>());
    int64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += v[i];
    return sum;
  };
  stats.oracle_local_reads = served_as_is + top_sum(blocks, preferred_blocks);
  stats.head_oracle_local_reads =
      served_as_is + top_sum(head_reads, preferred_blocks * heads_per_block);

  const TieringStats t = manager_->stats();
  stats.exchanges = t.exchanges - exchanges_seen_;
  stats.promotion_rounds = t.promotion_rounds - rounds_seen_;
  exchanges_seen_ = t.exchanges;
  rounds_seen_ = t.promotion_rounds;
  stats.head_trades = t.head_trades - head_trades_seen_;
  head_trades_seen_ = t.head_trades;
  for (const RegionSummary& r : manager_->ScanRegions()) {
    if (r.preferred) {
      stats.eligible_local_blocks += static_cast<int64_t>(r.blocks_eligible);
      if (r.extremum.valid()) stats.coldest_local_score = r.extremum.score;
    } else {
      stats.eligible_foreign_blocks += static_cast<int64_t>(r.blocks_eligible);
      if (r.extremum.valid() && (!stats.hottest_foreign_score.has_value() ||
                                 r.extremum.score > *stats.hottest_foreign_score)) {
        stats.hottest_foreign_score = r.extremum.score;
      }
    }
  }
  closed_.emplace_back(open_interval_, stats);
  interval_reads_.clear();
  open_stats_ = NumaIntervalStats();
}

NumaIntervalStats NumaHostModel::CloseInterval(size_t interval) {
  // Reads reach only the open interval, so every earlier one left open has
  // none: it closes quiet.
  while (interval >= open_interval_) {
    CloseOpenInterval();
    ++open_interval_;
  }
  NumaIntervalStats out;
  bool found = false;
  for (const auto& [i, stats] : closed_) {
    if (i == interval) {
      out = stats;
      found = true;
    }
  }
  HS_CHECK_MSG(found, "a NUMA interval closed twice or out of order");
  std::erase_if(closed_, [interval](const auto& c) { return c.first <= interval; });
  return out;
}

}  // namespace heatsink::sim
