#include "core/master/internal/segment_table.h"

#include <algorithm>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "core/base/check.h"

namespace heatsink::master_internal {

SegmentLoadView SegmentHandle::Load() const {
  SegmentLoadView v;
  v.copy_tasks_as_source = copy_tasks_as_source.load(std::memory_order_relaxed);
  v.copies_in_flight_as_source = copies_in_flight_as_source.load(std::memory_order_relaxed);
  v.copies_in_flight_as_target = copies_in_flight_as_target.load(std::memory_order_relaxed);
  v.replica_lists_served_total = replica_lists_served_total.load(std::memory_order_relaxed);
  return v;
}

SegmentTable::SegmentTable(const MasterKnobs& knobs, Rng allocation_rng)
    : knobs_(knobs), rng_(std::move(allocation_rng)) {}

absl::StatusOr<bool> SegmentTable::Mount(ClientId owner, const MountSegmentRequest& req) {
  MutexLock lock(&mu_);
  const Domain domain = NormalizeDomain(req.domain);
  auto it = segments_.find(req.segment_id);
  if (it != segments_.end()) {
    const SegmentRecord& r = it->second;
    if (r.unmounting) {
      return absl::UnavailableError(
          absl::StrCat("segment ", req.segment_id.value, " is being unmounted; mount it again later"));
    }
    const SegmentLocation& loc = r.handle->location;
    const bool same = loc.owner == owner && loc.name == req.name && loc.host == req.host &&
                      loc.domain == domain && loc.transport_endpoint == req.transport_endpoint &&
                      loc.data_service_endpoint == req.data_service_endpoint &&
                      r.allocator.capacity_bytes() == req.capacity_bytes &&
                      r.allocatable == req.allocatable;
    if (!same) {
      return absl::AlreadyExistsError(absl::StrCat(
          "segment ", req.segment_id.value, " is already mounted with different parameters"));
    }
    return false;
  }
  if (static_cast<int64_t>(segments_.size()) >= knobs_.segments_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("segments_max (", knobs_.segments_max, ") segments are mounted"));
  }
  int64_t owned = 0;
  for (const auto& [id, r] : segments_) owned += r.handle->location.owner == owner ? 1 : 0;
  if (owned >= knobs_.segments_per_client_max) {
    return absl::ResourceExhaustedError(absl::StrCat("client ", owner.value, " already mounts ",
                                                     "segments_per_client_max (",
                                                     knobs_.segments_per_client_max, ") segments"));
  }
  SegmentLocation loc;
  loc.id = req.segment_id;
  loc.name = req.name;
  loc.owner = owner;
  loc.host = req.host;
  loc.domain = domain;
  loc.transport_endpoint = req.transport_endpoint;
  loc.data_service_endpoint = req.data_service_endpoint;
  SegmentRecord r{std::make_shared<SegmentHandle>(std::move(loc)),
                  RangeAllocator(req.capacity_bytes)};
  r.allocatable = req.allocatable;
  r.manifest_pending = req.manifest_pending;
  totals_.capacity_bytes += req.capacity_bytes;
  segments_.emplace(req.segment_id, std::move(r));
  RebuildOrder();
  return true;
}

absl::StatusOr<std::shared_ptr<SegmentHandle>> SegmentTable::BeginUnmount(ClientId caller,
                                                                          SegmentId id) {
  MutexLock lock(&mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return std::shared_ptr<SegmentHandle>();
  if (caller.valid() && it->second.handle->location.owner != caller) {
    return absl::PermissionDeniedError(absl::StrCat("client ", caller.value, " does not own segment ",
                                                    id.value, " (owner ",
                                                    it->second.handle->location.owner.value, ")"));
  }
  it->second.unmounting = true;
  return it->second.handle;
}

absl::Status SegmentTable::SetAllocatable(ClientId caller, SegmentId id, bool allocatable) {
  MutexLock lock(&mu_);
  auto it = segments_.find(id);
  if (it == segments_.end() || it->second.unmounting) {
    return absl::NotFoundError(absl::StrCat("segment ", id.value, " is not mounted"));
  }
  if (caller.valid() && it->second.handle->location.owner != caller) {
    return absl::PermissionDeniedError(absl::StrCat("client ", caller.value, " does not own segment ",
                                                    id.value, " (owner ",
                                                    it->second.handle->location.owner.value, ")"));
  }
  it->second.allocatable = allocatable;
  return absl::OkStatus();
}

void SegmentTable::FinishUnmount(const std::shared_ptr<SegmentHandle>& handle) {
  MutexLock lock(&mu_);
  const SegmentId id = handle->location.id;
  auto it = segments_.find(id);
  // Two unmounts of one instance may race; the later one finds it gone (or a
  // new instance mounted since, which it must not touch).
  if (it == segments_.end() || it->second.handle != handle) return;
  HS_CHECK_MSG(it->second.replica_count == 0, "unmounted segment still holds replicas");
  HS_CHECK(it->second.reserved_bytes == 0);
  // Discarded puts lose their ranges on this segment; the bytes vanish with it.
  for (auto d = discarded_.begin(); d != discarded_.end();) {
    auto& ranges = d->second.ranges;
    ranges.erase(std::remove_if(ranges.begin(), ranges.end(),
                                [id](const auto& r) { return r.first == id; }),
                 ranges.end());
    d = ranges.empty() ? discarded_.erase(d) : std::next(d);
  }
  HS_CHECK(it->second.used_bytes == it->second.discarded_bytes);
  totals_.capacity_bytes -= it->second.allocator.capacity_bytes();
  totals_.used_bytes -= it->second.used_bytes;
  totals_.discarded_bytes -= it->second.discarded_bytes;
  segments_.erase(it);
  RebuildOrder();
}

void SegmentTable::RebuildOrder() {
  ordered_.clear();
  ordered_.reserve(segments_.size());
  for (auto& [id, r] : segments_) ordered_.emplace_back(id, &r);
}

bool SegmentTable::Usable(const SegmentRecord& r, uint64_t size) const {
  return !r.unmounting && r.allocatable && !r.manifest_pending && r.allocator.free_bytes() >= size;
}

absl::StatusOr<Allocation> SegmentTable::ClaimRange(ClientId owner, SegmentId segment,
                                                    uint64_t offset, uint64_t size) {
  MutexLock lock(&mu_);
  auto it = segments_.find(segment);
  if (it == segments_.end() || it->second.unmounting) {
    return absl::NotFoundError(absl::StrCat("segment ", segment.value, " is not mounted"));
  }
  SegmentRecord& r = it->second;
  if (r.handle->location.owner != owner) {
    return absl::PermissionDeniedError(absl::StrCat("segment ", segment.value, " belongs to client ",
                                                    r.handle->location.owner.value));
  }
  const uint64_t capacity = r.allocator.capacity_bytes();
  if (size == 0 || offset > capacity || size > capacity - offset) {
    return absl::OutOfRangeError(absl::StrCat("range [", offset, ", +", size,
                                              ") exceeds segment ", segment.value, " of ",
                                              capacity, " bytes"));
  }
  if (!r.allocator.AllocateAt(offset, size)) {
    return absl::AlreadyExistsError(absl::StrCat("range [", offset, ", +", size, ") of segment ",
                                                 segment.value,
                                                 " overlaps another object's range"));
  }
  r.used_bytes += size;
  r.replica_count += 1;
  totals_.used_bytes += size;
  return Allocation{r.handle, offset, size};
}

void SegmentTable::EndManifest(ClientId owner) {
  MutexLock lock(&mu_);
  for (auto& [id, r] : segments_) {
    if (r.handle->location.owner == owner) r.manifest_pending = false;
  }
}

absl::StatusOr<std::vector<Allocation>> SegmentTable::AllocateForPut(
    uint64_t size, uint32_t replica_num, absl::Span<const SegmentId> preferred,
    bool* eviction_may_help) {
  HS_CHECK(size > 0 && replica_num > 0);
  MutexLock lock(&mu_);
  std::vector<Allocation> out;
  out.reserve(replica_num);
  absl::InlinedVector<SegmentId, 4> chosen;
  auto is_chosen = [&chosen](SegmentId id) {
    return std::find(chosen.begin(), chosen.end(), id) != chosen.end();
  };
  auto try_allocate = [&](SegmentId id, SegmentRecord& r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (!Usable(r, size) || is_chosen(id)) return false;
    std::optional<uint64_t> offset = r.allocator.Allocate(size);
    if (!offset.has_value()) return false;
    r.used_bytes += size;
    r.replica_count += 1;
    totals_.used_bytes += size;
    chosen.push_back(id);
    out.push_back(Allocation{r.handle, *offset, size});
    return true;
  };

  for (SegmentId id : preferred) {
    if (out.size() == replica_num) break;
    auto it = segments_.find(id);
    if (it != segments_.end()) try_allocate(id, it->second);
  }
  if (out.size() < replica_num) {
    // Candidates in segment id order, so the strategy sees the same list in
    // every process.
    const auto is_candidate = [&](SegmentId id, const SegmentRecord& r) {
      return Usable(r, size) && !is_chosen(id);
    };
    std::vector<std::pair<SegmentId, SegmentRecord*>>& candidates = candidates_;
    candidates.clear();
    if (knobs_.allocation_strategy == AllocationStrategy::kFreeRatioFirst) {
      for (const auto& [id, r] : ordered_) {
        if (is_candidate(id, *r)) candidates.emplace_back(id, r);
      }
      // free_a / cap_a > free_b / cap_b, compared exactly in integers.
      std::stable_sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
        const unsigned __int128 lhs = static_cast<unsigned __int128>(a.second->allocator.free_bytes()) *
                                      b.second->allocator.capacity_bytes();
        const unsigned __int128 rhs = static_cast<unsigned __int128>(b.second->allocator.free_bytes()) *
                                      a.second->allocator.capacity_bytes();
        if (lhs != rhs) return lhs > rhs;
        return a.first < b.first;
      });
      for (auto& [id, r] : candidates) {
        if (out.size() == replica_num) break;
        try_allocate(id, *r);
      }
    } else {
      // Uniform draws without replacement from the candidate list. The first
      // draw finds its candidate by counting, without building the list: a
      // put whose replicas all fit at the first draw (the common case) never
      // builds it. Later draws use the list as it stood before the first
      // draw, minus the first pick, so the draws and the result are the same.
      size_t count = 0;
      for (const auto& [id, r] : ordered_) count += is_candidate(id, *r) ? 1 : 0;
      if (count > 0) {
        const size_t first_pick = static_cast<size_t>(rng_.Uniform(count));
        size_t at = 0;
        for (size_t seen = 0;; ++at) {
          if (!is_candidate(ordered_[at].first, *ordered_[at].second)) continue;
          if (seen++ == first_pick) break;
        }
        const SegmentId first_id = ordered_[at].first;
        try_allocate(first_id, *ordered_[at].second);
        if (out.size() < replica_num) {
          // The first pick's own state is unchanged when it failed and only
          // just chosen when it succeeded; every other record is as it was.
          for (const auto& [id, r] : ordered_) {
            if (id == first_id || is_candidate(id, *r)) candidates.emplace_back(id, r);
          }
          HS_CHECK(candidates.size() == count && candidates[first_pick].first == first_id);
          candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(first_pick));
        }
      }
      while (out.size() < replica_num && !candidates.empty()) {
        const size_t pick = static_cast<size_t>(rng_.Uniform(candidates.size()));
        try_allocate(candidates[pick].first, *candidates[pick].second);
        candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(pick));
      }
    }
  }
  if (out.size() == replica_num) return out;
  return RollBackPut(out, size, replica_num, eviction_may_help);
}

absl::Status SegmentTable::RollBackPut(const std::vector<Allocation>& taken, uint64_t size,
                                       uint32_t replica_num, bool* eviction_may_help) {
  for (const Allocation& a : taken) {
    SegmentRecord& r = MustFind(a.segment->location.id);
    r.allocator.Free(a.offset, a.size);
    r.used_bytes -= a.size;
    r.replica_count -= 1;
    totals_.used_bytes -= a.size;
  }
  int64_t allocatable = 0;
  for (const auto& [id, r] : segments_) {
    // A segment waiting for its store's manifest takes nothing yet: evicting
    // elsewhere would not make room there.
    allocatable += (!r.unmounting && r.allocatable && !r.manifest_pending &&
                    r.allocator.capacity_bytes() >= size)
                       ? 1
                       : 0;
  }
  if (eviction_may_help != nullptr) *eviction_may_help = allocatable >= replica_num;
  return absl::ResourceExhaustedError(absl::StrCat(
      "cannot place ", replica_num, " replica(s) of ", size, " bytes: ", allocatable,
      " allocatable segment(s) large enough, not enough of them have a free range that fits"));
}

absl::StatusOr<std::shared_ptr<SegmentHandle>> SegmentTable::CheckCopyTarget(SegmentId target,
                                                                           uint64_t size) const {
  MutexLock lock(&mu_);
  auto it = segments_.find(target);
  if (it == segments_.end() || it->second.unmounting) {
    return absl::NotFoundError(absl::StrCat("target segment ", target.value, " is not mounted"));
  }
  if (!it->second.allocatable || it->second.manifest_pending) {
    return absl::FailedPreconditionError(
        absl::StrCat("target segment ", target.value, " is not allocatable"));
  }
  if (it->second.allocator.free_bytes() < size) {
    return absl::ResourceExhaustedError(absl::StrCat("target segment ", target.value, " has ",
                                                     it->second.allocator.free_bytes(),
                                                     " free bytes, the copy needs ", size));
  }
  return it->second.handle;
}

absl::StatusOr<Allocation> SegmentTable::ReserveCopyTarget(SegmentId target, uint64_t size) {
  MutexLock lock(&mu_);
  auto it = segments_.find(target);
  if (it == segments_.end() || it->second.unmounting) {
    return absl::NotFoundError(absl::StrCat("target segment ", target.value, " is not mounted"));
  }
  SegmentRecord& r = it->second;
  if (!r.allocatable || r.manifest_pending) {
    return absl::FailedPreconditionError(
        absl::StrCat("target segment ", target.value, " is not allocatable"));
  }
  std::optional<uint64_t> offset = r.allocator.Allocate(size);
  if (!offset.has_value()) {
    return absl::ResourceExhaustedError(absl::StrCat("target segment ", target.value,
                                                     " has no free range of ", size, " bytes"));
  }
  r.reserved_bytes += size;
  r.replica_count += 1;
  totals_.reserved_bytes += size;
  return Allocation{r.handle, *offset, size};
}

std::shared_ptr<SegmentHandle> SegmentTable::FindMounted(SegmentId id) const {
  MutexLock lock(&mu_);
  auto it = segments_.find(id);
  if (it == segments_.end() || it->second.unmounting) return nullptr;
  return it->second.handle;
}

SegmentTable::SegmentRecord& SegmentTable::MustFind(SegmentId id) {
  auto it = segments_.find(id);
  HS_CHECK_MSG(it != segments_.end(), absl::StrCat("segment ", id.value, " not in the table"));
  return it->second;
}

void SegmentTable::FreeUsed(SegmentId id, uint64_t offset, uint64_t size) {
  MutexLock lock(&mu_);
  SegmentRecord& r = MustFind(id);
  HS_CHECK(r.used_bytes - r.discarded_bytes >= size && r.replica_count > 0);
  r.allocator.Free(offset, size);
  r.used_bytes -= size;
  r.replica_count -= 1;
  totals_.used_bytes -= size;
}

void SegmentTable::FreeReserved(SegmentId id, uint64_t offset, uint64_t size) {
  MutexLock lock(&mu_);
  SegmentRecord& r = MustFind(id);
  HS_CHECK(r.reserved_bytes >= size && r.replica_count > 0);
  r.allocator.Free(offset, size);
  r.reserved_bytes -= size;
  r.replica_count -= 1;
  totals_.reserved_bytes -= size;
}

void SegmentTable::CommitReserved(SegmentId id, uint64_t size) {
  MutexLock lock(&mu_);
  SegmentRecord& r = MustFind(id);
  HS_CHECK(r.reserved_bytes >= size);
  r.reserved_bytes -= size;
  r.used_bytes += size;
  totals_.reserved_bytes -= size;
  totals_.used_bytes += size;
}

absl::Status SegmentTable::DiscardPut(absl::Span<const Allocation> ranges, TimeNs release_at_ns) {
  MutexLock lock(&mu_);
  if (static_cast<int64_t>(discarded_.size()) >= knobs_.discarded_puts_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "discarded_puts_max (", knobs_.discarded_puts_max, ") discarded puts await release"));
  }
  DiscardedPut put;
  for (const Allocation& a : ranges) {
    SegmentRecord& r = MustFind(a.segment->location.id);
    HS_CHECK(r.replica_count > 0);
    r.replica_count -= 1;
    r.discarded_bytes += a.size;
    totals_.discarded_bytes += a.size;
    put.ranges.emplace_back(a.segment->location.id, std::make_pair(a.offset, a.size));
  }
  discarded_.emplace(std::make_pair(release_at_ns, next_discard_seq_++), std::move(put));
  return absl::OkStatus();
}

int64_t SegmentTable::ReleaseDiscarded(TimeNs now) {
  MutexLock lock(&mu_);
  int64_t released = 0;
  while (!discarded_.empty() && IsExpired(now, discarded_.begin()->first.first)) {
    for (const auto& [id, range] : discarded_.begin()->second.ranges) {
      SegmentRecord& r = MustFind(id);
      r.allocator.Free(range.first, range.second);
      r.used_bytes -= range.second;
      r.discarded_bytes -= range.second;
      totals_.used_bytes -= range.second;
      totals_.discarded_bytes -= range.second;
    }
    discarded_.erase(discarded_.begin());
    ++released;
  }
  return released;
}

bool SegmentTable::AboveRatio(double ratio) const {
  MutexLock lock(&mu_);
  if (totals_.capacity_bytes == 0) return false;
  // Bytes awaiting release are on their way out: counting them would evict
  // again for bytes already given up.
  const double in_use = static_cast<double>(totals_.used_bytes + totals_.reserved_bytes -
                                            totals_.discarded_bytes);
  return in_use > ratio * static_cast<double>(totals_.capacity_bytes);
}

UsageTotals SegmentTable::Totals() const {
  MutexLock lock(&mu_);
  return totals_;
}

int64_t SegmentTable::segment_count() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(segments_.size());
}

int64_t SegmentTable::discarded_put_count() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(discarded_.size());
}

std::vector<std::pair<SegmentId, ClientId>> SegmentTable::Owners() const {
  MutexLock lock(&mu_);
  std::vector<std::pair<SegmentId, ClientId>> out;
  out.reserve(segments_.size());
  for (const auto& [id, r] : segments_) out.emplace_back(id, r.handle->location.owner);
  return out;
}

SegmentView SegmentTable::ViewOf(const SegmentRecord& r) const {
  SegmentView v;
  v.location = r.handle->location;
  v.capacity_bytes = r.allocator.capacity_bytes();
  v.used_bytes = r.used_bytes;
  v.reserved_bytes = r.reserved_bytes;
  v.free_bytes = r.allocator.free_bytes();
  v.allocatable = r.allocatable;
  v.unmounting = r.unmounting;
  v.replica_count = r.replica_count;
  v.load = r.handle->Load();
  return v;
}

std::vector<SegmentView> SegmentTable::List() const {
  MutexLock lock(&mu_);
  std::vector<SegmentView> out;
  out.reserve(segments_.size());
  for (const auto& [id, r] : segments_) out.push_back(ViewOf(r));
  return out;
}

std::optional<SegmentView> SegmentTable::Get(SegmentId id) const {
  MutexLock lock(&mu_);
  auto it = segments_.find(id);
  if (it == segments_.end()) return std::nullopt;
  return ViewOf(it->second);
}

std::vector<SegmentAccounting> SegmentTable::Accounting() const {
  MutexLock lock(&mu_);
  std::vector<SegmentAccounting> out;
  out.reserve(segments_.size());
  for (const auto& [id, r] : segments_) {
    SegmentAccounting a;
    a.id = id;
    a.capacity_bytes = r.allocator.capacity_bytes();
    a.used_bytes = r.used_bytes;
    a.reserved_bytes = r.reserved_bytes;
    a.discarded_bytes = r.discarded_bytes;
    a.allocator_allocated_bytes = r.allocator.allocated_bytes();
    a.replica_count = r.replica_count;
    a.unmounting = r.unmounting;
    a.load = r.handle->Load();
    a.instance = r.handle.get();
    out.push_back(a);
  }
  return out;
}

}  // namespace heatsink::master_internal
