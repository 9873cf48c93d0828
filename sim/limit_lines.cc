// Limit lines (see sim/limit_lines.h for the rules).
#include "sim/limit_lines.h"

#include <algorithm>
#include <utility>

#include "core/base/check.h"

namespace heatsink::sim {
namespace {

// A replica one of the lines holds: `size_bytes` over [from_ns, to_ns].
struct Hold {
  TimeNs from_ns = 0;
  TimeNs to_ns = 0;
  uint64_t size_bytes = 0;
};

void AddMemory(const std::vector<Hold>& holds, DurationNs duration_ns, LimitLine* line) {
  // Peak: closed intervals, so at one instant additions count before removals.
  std::vector<std::pair<TimeNs, int64_t>> edges;  // (time, +size / -size)
  edges.reserve(holds.size() * 2);
  unsigned __int128 byte_ns = 0;
  for (const Hold& h : holds) {
    edges.emplace_back(h.from_ns, static_cast<int64_t>(h.size_bytes));
    edges.emplace_back(h.to_ns, -static_cast<int64_t>(h.size_bytes));
    byte_ns += static_cast<unsigned __int128>(h.size_bytes) *
               static_cast<unsigned __int128>(h.to_ns - h.from_ns);
  }
  std::sort(edges.begin(), edges.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second > b.second;  // additions first
  });
  int64_t now = 0;
  for (const auto& [t, delta] : edges) {
    now += delta;
    line->memory_peak_bytes = std::max(line->memory_peak_bytes, static_cast<uint64_t>(now));
  }
  line->memory_mean_bytes =
      static_cast<uint64_t>(byte_ns / static_cast<unsigned __int128>(duration_ns));
}

// Max-plus segment tree over compressed instants: range add, range max.
class MemoryProfile {
 public:
  explicit MemoryProfile(std::vector<TimeNs> instants) : instants_(std::move(instants)) {
    std::sort(instants_.begin(), instants_.end());
    instants_.erase(std::unique(instants_.begin(), instants_.end()), instants_.end());
    size_ = std::max<size_t>(1, instants_.size());
    max_.assign(4 * size_, 0);
    add_.assign(4 * size_, 0);
  }
  uint64_t MaxOver(TimeNs from, TimeNs to) const { return Max(1, 0, size_ - 1, Index(from), Index(to)); }
  void Add(TimeNs from, TimeNs to, uint64_t bytes) { Add(1, 0, size_ - 1, Index(from), Index(to), bytes); }

 private:
  size_t Index(TimeNs t) const {
    const auto it = std::lower_bound(instants_.begin(), instants_.end(), t);
    HS_CHECK(it != instants_.end() && *it == t);
    return static_cast<size_t>(it - instants_.begin());
  }
  uint64_t Max(size_t node, size_t lo, size_t hi, size_t a, size_t b) const {
    if (b < lo || hi < a) return 0;
    if (a <= lo && hi <= b) return max_[node];
    const size_t mid = (lo + hi) / 2;
    return add_[node] + std::max(Max(2 * node, lo, mid, a, b), Max(2 * node + 1, mid + 1, hi, a, b));
  }
  void Add(size_t node, size_t lo, size_t hi, size_t a, size_t b, uint64_t bytes) {
    if (b < lo || hi < a) return;
    if (a <= lo && hi <= b) {
      max_[node] += bytes;
      add_[node] += bytes;
      return;
    }
    const size_t mid = (lo + hi) / 2;
    Add(2 * node, lo, mid, a, b, bytes);
    Add(2 * node + 1, mid + 1, hi, a, b, bytes);
    max_[node] = add_[node] + std::max(max_[2 * node], max_[2 * node + 1]);
  }

  std::vector<TimeNs> instants_;
  size_t size_ = 1;
  std::vector<uint64_t> max_;  // max over the node's range, including its own add_
  std::vector<uint64_t> add_;  // added to the whole range of the node
};

// Per object: the dynamic replicas a line already holds, for the cap.
class CapTracker {
 public:
  CapTracker(size_t objects, const LimitLineOptions& options,
             const std::vector<int32_t>& originals)
      : options_(options), originals_(originals), held_(objects) {}

  // Whether one more replica of `object` over [from, to] stays within the cap.
  bool Fits(uint32_t object, TimeNs from, TimeNs to) const {
    // Domain-aware: the cap counts replicas in the target domain, which
    // holds no ordinary replica (a base pair) and gets at most this one.
    if (options_.domain_aware) return options_.max_memory_replicas >= 1;
    const int64_t allowed = options_.max_memory_replicas - originals_[object];
    if (allowed <= 0) return false;
    // Most accepted replicas alive at one instant of [from, to]: the maximum
    // is reached at the start of one of them or at `from`.
    const std::vector<std::pair<TimeNs, TimeNs>>& held = held_[object];
    auto alive_at = [&held](TimeNs t) {
      int64_t n = 0;
      for (const auto& [a, b] : held) n += (a <= t && t <= b) ? 1 : 0;
      return n;
    };
    int64_t most = alive_at(from);
    for (const auto& [a, b] : held) {
      if (a >= from && a <= to) most = std::max(most, alive_at(a));
    }
    return most < allowed;
  }
  void Take(uint32_t object, TimeNs from, TimeNs to) { held_[object].emplace_back(from, to); }

 private:
  const LimitLineOptions& options_;
  const std::vector<int32_t>& originals_;
  std::vector<std::vector<std::pair<TimeNs, TimeNs>>> held_;
};

}  // namespace

uint32_t LimitLineRecorder::PairFor(const ObjectName& name, Version version,
                                    const LimitReadTarget& target) {
  HS_CHECK(target.domain >= 0);
  if (!target.cross_domain && !target.base_cross_domain) return kNoPair;
  auto [object_it, new_object] =
      object_ids_.try_emplace(ObjectKey{name, version}, static_cast<uint32_t>(object_ids_.size()));
  const uint32_t object = object_it->second;
  if (new_object) object_originals_.push_back(0);
  object_originals_[object] = std::max(object_originals_[object], target.ordinary_replicas);
  const uint64_t pair_key =
      (static_cast<uint64_t>(object) << 32) | static_cast<uint32_t>(target.domain);
  auto [pair_it, new_pair] =
      pair_index_.try_emplace(pair_key, static_cast<uint32_t>(pairs_.size()));
  if (new_pair) {
    pairs_.push_back(Pair{.object = object, .domain = target.domain});
    if (keep_avoidable_reads_) avoidable_reads_.emplace_back();
  }
  return pair_it->second;
}

void LimitLineRecorder::OnRead(uint32_t pair, TimeNs t_ns, uint64_t bytes, bool cross_domain,
                               bool base_cross_domain) {
  HS_CHECK(pair < pairs_.size());
  HS_CHECK(t_ns >= 0);
  Pair& p = pairs_[pair];
  if (cross_domain) {
    (p.cross_reads == 0 ? first_touch_bytes_ : repeat_bytes_) += bytes;
    ++p.cross_reads;
  }
  if (base_cross_domain) {
    ++p.base_reads;
    if (p.base_reads == 1) {
      p.size_bytes = bytes;
      unavoidable_bytes_ += bytes;
    } else {
      p.avoidable_bytes += bytes;
      if (keep_avoidable_reads_) avoidable_reads_[pair].emplace_back(t_ns, bytes);
      if (p.base_reads == 2) p.second_read_ns = t_ns;
      if (p.base_reads >= 3) p.online_bytes += bytes;
    }
    // Reads complete out of the order they were served in: the hold ends at
    // the latest served time.
    p.last_read_ns = std::max(p.last_read_ns, t_ns);
  }
}

uint64_t LimitLineRecorder::AvoidableBytesAfter(const ObjectName& name, Version version,
                                                int32_t domain, TimeNs t_ns) const {
  HS_CHECK(keep_avoidable_reads_);
  const auto object = object_ids_.find(ObjectKey{name, version});
  if (object == object_ids_.end() || domain < 0) return 0;
  const auto pair = pair_index_.find((static_cast<uint64_t>(object->second) << 32) |
                                     static_cast<uint32_t>(domain));
  if (pair == pair_index_.end()) return 0;
  uint64_t bytes = 0;
  for (const auto& [t, b] : avoidable_reads_[pair->second]) {
    if (t > t_ns) bytes += b;
  }
  return bytes;
}

LimitLines LimitLineRecorder::Compute(const LimitLineOptions& options) const {
  HS_CHECK(options.duration_ns > 0);
  LimitLines out;
  out.first_touch_bytes = first_touch_bytes_;
  out.repeat_bytes = repeat_bytes_;
  out.cross_domain_bytes = first_touch_bytes_ + repeat_bytes_;
  out.unavoidable_bytes = unavoidable_bytes_;
  out.clairvoyant_budget_bytes = options.clairvoyant_budget_bytes;
  std::vector<uint32_t> candidates;  // pairs read at least twice, first-seen order
  for (uint32_t i = 0; i < pairs_.size(); ++i) {
    const Pair& p = pairs_[i];
    if (p.base_reads > 0) ++out.pairs;
    out.avoidable_bytes += p.avoidable_bytes;
    if (p.base_reads >= 2) candidates.push_back(i);
  }
  out.avoidable_removed_bytes =
      out.avoidable_bytes > repeat_bytes_ ? out.avoidable_bytes - repeat_bytes_ : 0;

  // Takes the pairs in `order` into `line` while the replica cap (and the
  // memory budget, with a profile) allow; a taken pair removes `p.*removes`.
  auto take = [&](const std::vector<uint32_t>& order, uint64_t Pair::*removes,
                  MemoryProfile* profile, LimitLine* line) {
    CapTracker cap(object_originals_.size(), options, object_originals_);
    std::vector<Hold> holds;
    for (uint32_t i : order) {
      const Pair& p = pairs_[i];
      if (!cap.Fits(p.object, p.second_read_ns, p.last_read_ns)) {
        ++line->capped;
        continue;
      }
      if (profile != nullptr) {
        if (profile->MaxOver(p.second_read_ns, p.last_read_ns) + p.size_bytes >
            *options.clairvoyant_budget_bytes) {
          ++line->over_budget;
          continue;
        }
        profile->Add(p.second_read_ns, p.last_read_ns, p.size_bytes);
      }
      cap.Take(p.object, p.second_read_ns, p.last_read_ns);
      holds.push_back(Hold{p.second_read_ns, p.last_read_ns, p.size_bytes});
      line->removed_bytes += p.*removes;
      ++line->replicas;
    }
    AddMemory(holds, options.duration_ns, line);
  };

  // Online: pairs read at least three times, in order of the second read
  // (ties: first-seen order).
  std::vector<uint32_t> online;
  for (uint32_t i : candidates) {
    if (pairs_[i].base_reads >= 3) online.push_back(i);
  }
  std::stable_sort(online.begin(), online.end(), [this](uint32_t a, uint32_t b) {
    return pairs_[a].second_read_ns < pairs_[b].second_read_ns;
  });
  take(online, &Pair::online_bytes, nullptr, &out.online);

  // Clairvoyant: greedy by removed bytes per byte of memory.
  std::vector<uint32_t> greedy = candidates;
  std::stable_sort(greedy.begin(), greedy.end(), [this](uint32_t a, uint32_t b) {
    const Pair& pa = pairs_[a];
    const Pair& pb = pairs_[b];
    // pa.avoidable / pa.size > pb.avoidable / pb.size, exactly.
    const unsigned __int128 lhs = static_cast<unsigned __int128>(pa.avoidable_bytes) *
                                  std::max<uint64_t>(pb.size_bytes, 1);
    const unsigned __int128 rhs = static_cast<unsigned __int128>(pb.avoidable_bytes) *
                                  std::max<uint64_t>(pa.size_bytes, 1);
    if (lhs != rhs) return lhs > rhs;
    return pa.second_read_ns < pb.second_read_ns;
  });
  std::optional<MemoryProfile> profile;
  if (options.clairvoyant_budget_bytes.has_value()) {
    std::vector<TimeNs> instants;
    instants.reserve(greedy.size() * 2);
    for (uint32_t i : greedy) {
      instants.push_back(pairs_[i].second_read_ns);
      instants.push_back(pairs_[i].last_read_ns);
    }
    profile.emplace(std::move(instants));
  }
  take(greedy, &Pair::avoidable_bytes, profile.has_value() ? &*profile : nullptr,
       &out.clairvoyant);
  return out;
}

}  // namespace heatsink::sim
