#include "runtime/numa/segment_head_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/base/mutex.h"
#include "core/base/status_macros.h"
#include "runtime/numa/mempolicy.h"

namespace heatsink::runtime {

// Every segment's bytes, one mapping: bound block by block (with a binder)
// or plain anonymous memory (logical nodes).
struct SegmentHeadPool::Mapping {
  BoundMapping bound;        // with a binder
  uint8_t* plain = nullptr;  // without one
  uint64_t bytes = 0;

  uint8_t* data() const { return plain != nullptr ? plain : bound.data; }
  ~Mapping() {
    if (plain != nullptr) munmap(plain, bytes);
    UnmapBoundMemory(bound);
  }
};

namespace {

class PoolSegmentBuffer final : public SegmentBuffer {
 public:
  PoolSegmentBuffer(std::shared_ptr<SegmentHeadPool::Mapping> mapping, uint8_t* data,
                    uint64_t size_bytes)
      : mapping_(std::move(mapping)), data_(data), size_bytes_(size_bytes) {}
  uint8_t* data() override { return data_; }
  uint64_t size_bytes() const override { return size_bytes_; }

 private:
  std::shared_ptr<SegmentHeadPool::Mapping> mapping_;  // keeps the bytes alive
  uint8_t* const data_;
  const uint64_t size_bytes_;
};

constexpr absl::string_view kChunkTenant = "heatsink.segment";

// OK when [offset, offset + size) lies inside a segment of `segment_bytes`.
absl::Status CheckRange(uint64_t segment_bytes, uint64_t offset, uint64_t size) {
  if (offset > segment_bytes || size > segment_bytes - offset) {
    return absl::OutOfRangeError(absl::StrCat("range [", offset, ", +", size,
                                              ") leaves a segment of ", segment_bytes, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace

// HeadMemory over the segments' address space: region r's block k is the
// global block table(r, k) of the mapping. Swap migrates pages between the
// regions' nodes and swaps table entries; bytes never change address.
class SegmentHeadPool::BlockTableMemory final : public HeadMemory {
 public:
  // What exchanges mark: how many, and the pool's served bytes at the first
  // and at the last.
  struct ExchangeMarks {
    int64_t exchanges = 0;
    ServedHeadBytes at_first;
    ServedHeadBytes at_last;
  };

  // `served` reads the pool's served-byte counters (at each exchange).
  BlockTableMemory(uint8_t* base, uint64_t block_bytes, const std::vector<RegionPlacement>& regions,
                   ThreadBinder* binder, std::function<ServedHeadBytes()> served)
      : base_(base), block_bytes_(block_bytes), binder_(binder), served_(std::move(served)) {
    uint64_t next = 0;
    for (const RegionPlacement& r : regions) {
      const uint64_t blocks = r.bytes / block_bytes;
      auto table = std::make_unique<std::atomic<uint64_t>[]>(blocks);
      for (uint64_t k = 0; k < blocks; ++k) table[k].store(next++, std::memory_order_relaxed);
      tables_.push_back(std::move(table));
      blocks_.push_back(blocks);
      nodes_.push_back(r.node);
    }
  }

  int region_count() const override { return static_cast<int>(tables_.size()); }
  uint64_t region_bytes(int region) const override {
    HS_CHECK(region >= 0 && region < region_count());
    return blocks_[region] * block_bytes_;
  }
  int region_node(int region) const { return nodes_[region]; }
  uint64_t blocks(int region) const { return blocks_[region]; }
  // The global block behind (region, block).
  uint64_t global_block(int region, uint64_t block) const {
    return tables_[region][block].load(std::memory_order_acquire);
  }
  uint8_t* block_address(int region, uint64_t block) const {
    return base_ + global_block(region, block) * block_bytes_;
  }

  absl::Status Read(int region, uint64_t offset, absl::Span<uint8_t> out) const override {
    HS_RETURN_IF_ERROR(Check(region, offset, out.size()));
    uint64_t done = 0;
    while (done < out.size()) {
      const uint64_t at = offset + done;
      const uint64_t n = std::min<uint64_t>(out.size() - done, block_bytes_ - at % block_bytes_);
      std::memcpy(out.data() + done, block_address(region, at / block_bytes_) + at % block_bytes_,
                  n);
      done += n;
    }
    return absl::OkStatus();
  }

  absl::Status Write(int region, uint64_t offset, absl::Span<const uint8_t> in) override {
    HS_RETURN_IF_ERROR(Check(region, offset, in.size()));
    uint64_t done = 0;
    while (done < in.size()) {
      const uint64_t at = offset + done;
      const uint64_t n = std::min<uint64_t>(in.size() - done, block_bytes_ - at % block_bytes_);
      std::memcpy(block_address(region, at / block_bytes_) + at % block_bytes_, in.data() + done,
                  n);
      done += n;
    }
    return absl::OkStatus();
  }

  // Only whole blocks are exchanged (the core's promotion unit): any other
  // range would have to move bytes to other addresses.
  absl::Status Swap(const MemoryRange& a, const MemoryRange& b) override {
    HS_RETURN_IF_ERROR(Check(a.region, a.offset, a.size_bytes));
    HS_RETURN_IF_ERROR(Check(b.region, b.offset, b.size_bytes));
    if (a.size_bytes != block_bytes_ || b.size_bytes != block_bytes_ ||
        a.offset % block_bytes_ != 0 || b.offset % block_bytes_ != 0) {
      return absl::InvalidArgumentError(absl::StrCat("segment head pool: only whole ", block_bytes_,
                                                     "-byte blocks are exchanged (got ",
                                                     a.size_bytes, " bytes at ", a.offset, " and ",
                                                     b.size_bytes, " bytes at ", b.offset, ")"));
    }
    if (a.region == b.region && a.offset == b.offset) {
      return absl::InvalidArgumentError("segment head pool: a block cannot swap with itself");
    }
    const uint64_t block_a = a.offset / block_bytes_;
    const uint64_t block_b = b.offset / block_bytes_;
    // Pages and table change together, never while CheckBlock looks.
    MutexLock lock(&exchange_mu_);
    uint8_t* addr_a = block_address(a.region, block_a);
    uint8_t* addr_b = block_address(b.region, block_b);
    const int node_a = nodes_[a.region];
    const int node_b = nodes_[b.region];
    if (binder_ != nullptr && node_a != node_b) {
      // a's bytes take b's place (node), b's take a's.
      if (absl::Status s = binder_->BindMemory(addr_a, block_bytes_, node_b); !s.ok()) {
        (void)binder_->BindMemory(addr_a, block_bytes_, node_a);  // pages already moved go back
        return absl::Status(
            s.code(), absl::StrCat("exchange: moving a block to node ", node_b, ": ", s.message()));
      }
      if (absl::Status s = binder_->BindMemory(addr_b, block_bytes_, node_a); !s.ok()) {
        (void)binder_->BindMemory(addr_b, block_bytes_, node_b);
        (void)binder_->BindMemory(addr_a, block_bytes_, node_a);
        return absl::Status(
            s.code(), absl::StrCat("exchange: moving a block to node ", node_a, ": ", s.message()));
      }
    }
    const uint64_t global_a = global_block(a.region, block_a);
    tables_[a.region][block_a].store(global_block(b.region, block_b), std::memory_order_release);
    tables_[b.region][block_b].store(global_a, std::memory_order_release);
    const ServedHeadBytes served = served_();
    if (marks_.exchanges == 0) marks_.at_first = served;
    marks_.at_last = served;
    ++marks_.exchanges;
    return absl::OkStatus();
  }

  ExchangeMarks marks() const {
    MutexLock lock(&exchange_mu_);
    return marks_;
  }

  // OK when every page of block k of `region` sits on the region's node;
  // no exchange runs meanwhile.
  absl::Status CheckBlock(int region, uint64_t k) const {
    MutexLock lock(&exchange_mu_);
    HS_ASSIGN_OR_RETURN(std::vector<int> nodes,
                        runtime::PageNodes(block_address(region, k), block_bytes_));
    for (size_t p = 0; p < nodes.size(); ++p) {
      if (nodes[p] != nodes_[region]) {
        return absl::FailedPreconditionError(
            absl::StrCat("store head pool: block ", k, " of region ", region, " (segment address ",
                         global_block(region, k) * block_bytes_, ") has page ", p, " on node ",
                         nodes[p], ", expected node ", nodes_[region]));
      }
    }
    return absl::OkStatus();
  }

 private:
  absl::Status Check(int region, uint64_t offset, uint64_t size) const {
    if (region < 0 || region >= region_count()) {
      return absl::OutOfRangeError(absl::StrCat("no head region ", region));
    }
    return CheckMemoryRange(region, region_count(), region_bytes(region), offset, size);
  }

  uint8_t* const base_;
  const uint64_t block_bytes_;
  ThreadBinder* const binder_;
  const std::function<ServedHeadBytes()> served_;
  mutable Mutex exchange_mu_;  // held while pages and table change
  ExchangeMarks marks_ ABSL_GUARDED_BY(exchange_mu_);
  std::vector<std::unique_ptr<std::atomic<uint64_t>[]>> tables_;
  std::vector<uint64_t> blocks_;
  std::vector<int> nodes_;
};

uint64_t SegmentHeadPoolOptions::total_bytes() const {
  uint64_t total = knobs.memory_bytes;
  for (uint64_t bytes : knobs.sub_memory_bytes) total += bytes;
  return total;
}

uint64_t SegmentHeadPoolOptions::segment_bytes() const {
  HS_CHECK(!segment_ids.empty());
  return total_bytes() / segment_ids.size();
}

absl::Status SegmentHeadPoolOptions::Validate() const {
  HS_RETURN_IF_ERROR(knobs.Validate());
  if (knobs.small_memory_bytes != 0 || !knobs.small_sub_memory_bytes.empty()) {
    return absl::InvalidArgumentError(
        "the store's head pool has no small-object pool (--small-memory, --small-sub-memory)");
  }
  // The knobs already hold every region to a whole number of blocks.
  const uint64_t block = knobs.block_bytes;
  if (memory.huge_pages && block % kHugePageBytes != 0) {
    return absl::InvalidArgumentError("huge pages need --block to be a multiple of 2M");
  }
  if (segment_ids.empty()) return absl::InvalidArgumentError("the head pool needs a segment");
  const uint64_t total = total_bytes();
  if (total / block > kSegmentHeadPoolBlocksMax) {
    return absl::InvalidArgumentError(absl::StrCat("the head pool has ", total / block,
                                                   " blocks of ", block, " bytes; at most ",
                                                   kSegmentHeadPoolBlocksMax, " (raise --block)"));
  }
  if (total % (segment_ids.size() * block) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the head pool's ", total,
                                                   " bytes (--memory + --sub-memory) do not split "
                                                   "into ",
                                                   segment_ids.size(), " segments of whole ", block,
                                                   "-byte blocks"));
  }
  const std::vector<RegionSpec> plan = PlanRegions(knobs);
  bool matches = plan.size() == placement.regions.size();
  for (size_t i = 0; matches && i < plan.size(); ++i) {
    matches = placement.regions[i].region == plan[i].region &&
              placement.regions[i].bytes == plan[i].bytes;
  }
  if (!matches) {
    return absl::InvalidArgumentError("the NUMA placement does not match --memory/--sub-memory");
  }
  return absl::OkStatus();
}

SegmentHeadPool::SegmentHeadPool(Env* env, SegmentHeadPoolOptions options)
    : env_(env), options_(std::move(options)) {
  constexpr absl::string_view kHelp =
      "head bytes the store served, by whether their block sat on the serving node (local) or "
      "another node (remote)";
  served_local_bytes_ =
      &metrics_.GetCounter("store_head_served_bytes_total", kHelp, {{"memory", "local"}});
  served_remote_bytes_ =
      &metrics_.GetCounter("store_head_served_bytes_total", kHelp, {{"memory", "remote"}});
}

SegmentHeadPool::~SegmentHeadPool() { Stop(); }

absl::StatusOr<std::unique_ptr<SegmentHeadPool>> SegmentHeadPool::Create(
    Env* env, SegmentHeadPoolOptions options) {
  HS_RETURN_IF_ERROR(options.Validate());
  std::unique_ptr<SegmentHeadPool> pool(new SegmentHeadPool(env, std::move(options)));
  const SegmentHeadPoolOptions& o = pool->options_;
  const uint64_t block = o.knobs.block_bytes;
  auto mapping = std::make_shared<Mapping>();
  mapping->bytes = o.total_bytes();
  if (o.binder != nullptr) {
    std::vector<int> block_nodes;
    for (const RegionPlacement& r : o.placement.regions) {
      block_nodes.insert(block_nodes.end(), r.bytes / block, r.node);
    }
    absl::StatusOr<BoundMapping> bound = MapBoundBlocks(block, block_nodes, o.memory);
    if (!bound.ok()) {
      return absl::Status(bound.status().code(),
                          absl::StrCat("store head pool: ", bound.status().message()));
    }
    mapping->bound = *bound;
  } else {
    void* p =
        mmap(nullptr, mapping->bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "store head pool: mmap of ", mapping->bytes >> 20, " MiB: ", std::strerror(errno)));
    }
    mapping->plain = static_cast<uint8_t*>(p);
  }
  pool->mapping_ = std::move(mapping);
  SegmentHeadPool* raw = pool.get();
  pool->memory_ =
      std::make_unique<BlockTableMemory>(pool->mapping_->data(), block, o.placement.regions,
                                         o.binder, [raw] { return raw->ServedBytes(); });
  HS_ASSIGN_OR_RETURN(pool->manager_,
                      TierManager::Create(env, o.knobs, pool->memory_.get(), &pool->metrics_));
  HS_RETURN_IF_ERROR(pool->CommitChunks());
  // Prove the placement rather than trust it: every page on its node.
  if (o.binder != nullptr) HS_RETURN_IF_ERROR(pool->VerifyPlacement());
  return pool;
}

absl::Status SegmentHeadPool::CommitChunks() {
  const uint64_t head = options_.knobs.ram_head_bytes;
  const uint64_t block = options_.knobs.block_bytes;
  const uint64_t chunks_per_segment = segment_bytes() / head;
  uint64_t global_chunk = 0;
  for (SegmentId id : options_.segment_ids) {
    for (uint64_t chunk = 0; chunk < chunks_per_segment; ++chunk, ++global_chunk) {
      const TierKey key = ChunkKey(id, chunk);
      HS_ASSIGN_OR_RETURN(StoreTicket ticket, manager_->BeginStore(key, head));
      HS_RETURN_IF_ERROR(manager_->CommitStore(std::move(ticket)));
      // The buddy allocator fills regions in order, lowest offset first, so
      // chunk i lands in global block i / heads_per_block at its slot; the
      // block table starts out as exactly that layout.
      const std::optional<KeyInfo> info = manager_->Lookup(key);
      const uint64_t expected = global_chunk * head;
      const bool placed =
          info.has_value() && info->residence == Residence::kFixedHead &&
          memory_->global_block(info->region, info->offset / block) == expected / block &&
          info->offset % block == expected % block;
      if (!placed) {
        return absl::InternalError(absl::StrCat("store head pool: chunk ", FormatTierKey(key),
                                                " was not placed at its segment address"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SegmentHeadPool::Start() {
  HS_CHECK(service_ == nullptr);
  PromotionServiceOptions service;
  for (const RegionPlacement& r : options_.placement.regions)
    service.region_nodes.push_back(r.node);
  service.serving_node = options_.placement.serving_node;
  service.binder = options_.binder;
  service_ = std::make_unique<NumaPromotionService>(env_, manager_.get(), service);
  return service_->Start();
}

void SegmentHeadPool::Stop() {
  if (service_ != nullptr) service_->Stop();
}

absl::StatusOr<std::unique_ptr<SegmentBuffer>> SegmentHeadPool::Allocate(uint64_t size_bytes) {
  if (size_bytes != segment_bytes()) {
    return absl::InvalidArgumentError(
        absl::StrCat("store head pool segments are ", segment_bytes(), " bytes, not ", size_bytes));
  }
  const int index = next_segment_.fetch_add(1);
  if (index >= static_cast<int>(options_.segment_ids.size())) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "store head pool: all ", options_.segment_ids.size(), " segments are handed out"));
  }
  return std::make_unique<PoolSegmentBuffer>(
      mapping_, mapping_->data() + static_cast<uint64_t>(index) * size_bytes, size_bytes);
}

TierKey SegmentHeadPool::ChunkKey(SegmentId id, uint64_t chunk) {
  return TierKey{ObjectName{std::string(kChunkTenant), absl::StrCat(id.value)},
                 static_cast<uint32_t>(chunk)};
}

int SegmentHeadPool::SegmentIndex(SegmentId id) const {
  const auto& ids = options_.segment_ids;
  const auto it = std::find(ids.begin(), ids.end(), id);
  return it == ids.end() ? -1 : static_cast<int>(it - ids.begin());
}

void SegmentHeadPool::OnSegmentRead(SegmentId id, uint64_t offset, uint64_t size_bytes) {
  if (size_bytes == 0 || SegmentIndex(id) < 0 ||
      !CheckRange(segment_bytes(), offset, size_bytes).ok()) {
    reads_ignored_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  reads_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t head = options_.knobs.ram_head_bytes;
  const uint64_t end = offset + size_bytes;
  int64_t local_bytes = 0;
  int64_t remote_bytes = 0;
  TierKey key = ChunkKey(id, 0);
  for (uint64_t chunk = offset / head; chunk * head < end; ++chunk) {
    key.chunk = static_cast<uint32_t>(chunk);
    absl::StatusOr<ReadToken> token = manager_->OpenRead(key);
    if (!token.ok()) continue;  // every chunk is committed at start; nothing to count
    const int64_t bytes =
        static_cast<int64_t>(std::min((chunk + 1) * head, end) - std::max(chunk * head, offset));
    if (token->region() >= 0 &&
        memory_->region_node(token->region()) == options_.placement.serving_node) {
      local_bytes += bytes;
    } else {
      remote_bytes += bytes;
    }
    manager_->CompleteRead(*std::move(token));
    chunk_reads_.fetch_add(1, std::memory_order_relaxed);
  }
  if (local_bytes > 0) served_local_bytes_->Add(local_bytes);
  if (remote_bytes > 0) served_remote_bytes_->Add(remote_bytes);
}

ServedHeadBytes SegmentHeadPool::ServedBytes() const {
  return ServedHeadBytes{served_local_bytes_->value(), served_remote_bytes_->value()};
}

double ServedHeadBytes::remote_share() const {
  const int64_t total = total_bytes();
  return total > 0 ? static_cast<double>(remote_bytes) / static_cast<double>(total) : 0.0;
}

std::vector<ScorePiece> SegmentHeadPool::CopyScores(SegmentId id, uint64_t offset,
                                                    uint64_t size_bytes) const {
  if (size_bytes == 0 || SegmentIndex(id) < 0 ||
      !CheckRange(segment_bytes(), offset, size_bytes).ok()) {
    return {};
  }
  const uint64_t head = options_.knobs.ram_head_bytes;
  const uint64_t end = offset + size_bytes;
  std::vector<ScorePiece> pieces;
  bool any_score = false;
  TierKey key = ChunkKey(id, 0);
  for (uint64_t chunk = offset / head; chunk * head < end; ++chunk) {
    const uint64_t from = std::max(chunk * head, offset);
    const uint64_t to = std::min((chunk + 1) * head, end);
    key.chunk = static_cast<uint32_t>(chunk);
    const absl::StatusOr<double> score = manager_->Score(key);
    const double value = score.ok() ? *score : 0.0;  // every chunk is committed at start
    any_score = any_score || value > 0;
    if (!pieces.empty() && pieces.back().score == value) {
      pieces.back().size_bytes += to - from;
    } else {
      pieces.push_back(ScorePiece{to - from, value});
    }
  }
  if (!any_score) return {};
  if (pieces.size() > kCopyScorePiecesMax) {
    // Coarser, never colder: each group of neighbours carries its largest.
    const size_t group = (pieces.size() + kCopyScorePiecesMax - 1) / kCopyScorePiecesMax;
    std::vector<ScorePiece> coarse;
    for (size_t i = 0; i < pieces.size(); i += group) {
      ScorePiece merged;
      for (size_t j = i; j < std::min(i + group, pieces.size()); ++j) {
        merged.size_bytes += pieces[j].size_bytes;
        merged.score = std::max(merged.score, pieces[j].score);
      }
      coarse.push_back(merged);
    }
    pieces = std::move(coarse);
  }
  copies_scored_out_.fetch_add(1, std::memory_order_relaxed);
  return pieces;
}

void SegmentHeadPool::InheritScores(SegmentId id, uint64_t offset, uint64_t size_bytes,
                                    absl::Span<const ScorePiece> pieces) {
  uint64_t covered = 0;
  bool valid = options_.inherit_copy_score && size_bytes > 0 && !pieces.empty() &&
               SegmentIndex(id) >= 0 && CheckRange(segment_bytes(), offset, size_bytes).ok();
  for (size_t i = 0; valid && i < pieces.size(); ++i) {
    const ScorePiece& piece = pieces[i];
    valid = piece.size_bytes > 0 && piece.size_bytes <= size_bytes - covered &&
            std::isfinite(piece.score) && piece.score >= 0;
    covered += valid ? piece.size_bytes : 0;
  }
  if (!valid || covered != size_bytes) {
    copies_scores_ignored_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const uint64_t head = options_.knobs.ram_head_bytes;
  const uint64_t end = offset + size_bytes;
  size_t first = 0;          // the first piece ending after the chunk's start
  uint64_t first_start = 0;  // its start, relative to the range
  TierKey key = ChunkKey(id, 0);
  for (uint64_t chunk = offset / head; chunk * head < end; ++chunk) {
    // The chunk's part of the range, relative to the range.
    const uint64_t from = std::max(chunk * head, offset) - offset;
    const uint64_t to = std::min((chunk + 1) * head, end) - offset;
    while (first_start + pieces[first].size_bytes <= from) {
      first_start += pieces[first].size_bytes;
      ++first;
    }
    double inherited = 0;
    uint64_t start = first_start;
    for (size_t i = first; i < pieces.size() && start < to; start += pieces[i].size_bytes, ++i) {
      inherited = std::max(inherited, pieces[i].score);
    }
    // The tiering knob scales what a copy carries (1.0: all of it).
    inherited *= options_.knobs.copy_score_inheritance;
    if (inherited <= 0) continue;
    key.chunk = static_cast<uint32_t>(chunk);
    // Every chunk is committed at start, and the score was checked above.
    if (manager_->RaiseScore(key, inherited).ok()) {
      chunk_scores_raised_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  copies_scored_in_.fetch_add(1, std::memory_order_relaxed);
}

absl::StatusOr<int> SegmentHeadPool::ChunkNode(SegmentId id, uint64_t offset) const {
  if (SegmentIndex(id) < 0) return absl::NotFoundError(absl::StrCat("no segment ", id.value));
  HS_RETURN_IF_ERROR(CheckRange(segment_bytes(), offset, 1));
  const std::optional<KeyInfo> info =
      manager_->Lookup(ChunkKey(id, offset / options_.knobs.ram_head_bytes));
  if (!info.has_value() || info->region < 0) {
    return absl::InternalError(
        absl::StrCat("segment ", id.value, " offset ", offset, " has no head"));
  }
  return memory_->region_node(info->region);
}

absl::StatusOr<std::vector<int>> SegmentHeadPool::PageNodes(SegmentId id, uint64_t offset,
                                                            uint64_t size_bytes) const {
  const int index = SegmentIndex(id);
  if (index < 0) return absl::NotFoundError(absl::StrCat("no segment ", id.value));
  HS_RETURN_IF_ERROR(CheckRange(segment_bytes(), offset, size_bytes));
  return runtime::PageNodes(
      mapping_->data() + static_cast<uint64_t>(index) * segment_bytes() + offset, size_bytes);
}

absl::Status SegmentHeadPool::VerifyPlacement() const {
  if (options_.binder == nullptr) {
    return absl::FailedPreconditionError("store head pool: logical nodes, nothing is bound");
  }
  for (int r = 0; r < memory_->region_count(); ++r) {
    for (uint64_t k = 0; k < memory_->blocks(r); ++k) {
      HS_RETURN_IF_ERROR(memory_->CheckBlock(r, k));
    }
  }
  return absl::OkStatus();
}

PromotionServiceStats SegmentHeadPool::service_stats() const {
  return service_ == nullptr ? PromotionServiceStats{} : service_->stats();
}

SegmentHeadPoolStats SegmentHeadPool::stats() const {
  SegmentHeadPoolStats stats;
  // The marks first: bytes served after them only make the windows longer.
  const BlockTableMemory::ExchangeMarks marks = memory_->marks();
  stats.served = ServedBytes();
  stats.exchanges = marks.exchanges;
  stats.served_before_exchange = marks.exchanges > 0 ? marks.at_first : stats.served;
  stats.served_since_exchange = marks.exchanges > 0 ? stats.served - marks.at_last : stats.served;
  stats.reads = reads_.load();
  stats.chunk_reads = chunk_reads_.load();
  stats.reads_ignored = reads_ignored_.load();
  stats.copies_scored_out = copies_scored_out_.load();
  stats.copies_scored_in = copies_scored_in_.load();
  stats.chunk_scores_raised = chunk_scores_raised_.load();
  stats.copies_scores_ignored = copies_scores_ignored_.load();
  return stats;
}

}  // namespace heatsink::runtime
