// TierManager: creation, stores, deletes, evictions, reads and invariants.
// Decay and promotion live in tier_manager_promotion.cc.
#include "core/tiering/tier_manager.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/tiering/score.h"
#include "core/tiering/tier_manager_metrics.h"

namespace heatsink {

// ---- Tokens.

ReadToken& ReadToken::operator=(ReadToken&& other) noexcept {
  if (this == &other) return *this;
  if (active()) manager_->FinishRead(*this, /*success=*/false);
  manager_ = std::exchange(other.manager_, nullptr);
  key_ = std::move(other.key_);
  entry_ = other.entry_;
  incarnation_ = other.incarnation_;
  residence_ = other.residence_;
  placement_ = other.placement_;
  region_ = other.region_;
  offset_ = other.offset_;
  size_bytes_ = other.size_bytes_;
  return *this;
}

ReadToken::~ReadToken() {
  if (active()) manager_->FinishRead(*this, /*success=*/false);
}

StoreTicket& StoreTicket::operator=(StoreTicket&& other) noexcept {
  if (this == &other) return *this;
  if (active()) manager_->AbortStore(std::move(*this));
  manager_ = std::exchange(other.manager_, nullptr);
  key_ = std::move(other.key_);
  residence_ = other.residence_;
  region_ = other.region_;
  offset_ = other.offset_;
  size_bytes_ = other.size_bytes_;
  return *this;
}

StoreTicket::~StoreTicket() {
  if (active()) manager_->AbortStore(std::move(*this));
}

// ---- Creation.

absl::StatusOr<std::unique_ptr<TierManager>> TierManager::Create(Env* env,
                                                                 const TieringKnobs& knobs,
                                                                 HeadMemory* memory,
                                                                 MetricsRegistry* metrics) {
  HS_CHECK(env != nullptr && env->clock != nullptr && memory != nullptr);
  if (absl::Status s = knobs.Validate(); !s.ok()) return s;
  const std::vector<RegionSpec> plan = PlanRegions(knobs);
  if (memory->region_count() != static_cast<int>(plan.size())) {
    return absl::InvalidArgumentError(absl::StrCat("head memory has ", memory->region_count(),
                                                   " regions but the knobs plan ", plan.size()));
  }
  for (const RegionSpec& r : plan) {
    if (memory->region_bytes(r.region) != r.bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("head memory region ", r.region, " has ", memory->region_bytes(r.region),
                       " bytes but the knobs plan ", r.bytes));
    }
  }
  return std::unique_ptr<TierManager>(new TierManager(env, knobs, memory, metrics));
}

TierManager::TierManager(Env* env, const TieringKnobs& knobs, HeadMemory* memory,
                         MetricsRegistry* metrics)
    : env_(env),
      knobs_(knobs),
      memory_(memory),
      pool_(knobs),
      index_(static_cast<int>(knobs.index_shards), knobs.index_keys_max),
      metrics_(std::make_unique<Metrics>(metrics)) {}

TierManager::~TierManager() = default;

TieringStats TierManager::stats() const { return metrics_->Snapshot(); }

// ---- Ownership moves (exclusive lock).

double TierManager::TakeScoreAndRelease(IndexEntry& entry) {
  double score = 0;
  switch (entry.residence) {
    case Residence::kFixedHead: {
      const HeadLoc loc{entry.region, entry.offset};
      absl::StatusOr<double> taken =
          pool_.scores(loc.region).Extract(geometry().SlotOfOffset(loc.offset));
      HS_CHECK_OK(taken.status());
      score = *taken;
      pool_.ReleaseHead(loc);
      break;
    }
    case Residence::kArena:
      score = entry.score.load(std::memory_order_relaxed);
      pool_.ReleaseArena(ArenaLoc{entry.region, entry.offset, entry.size_bytes});
      break;
    case Residence::kEvicted:
      score = entry.score.load(std::memory_order_relaxed);
      break;
  }
  HS_CHECK(std::isfinite(score));
  entry.residence = Residence::kEvicted;
  entry.region = -1;
  entry.offset = 0;
  return score;
}

// ---- Stores.

absl::StatusOr<StoreTicket> TierManager::BeginStore(const TierKey& key, uint64_t size_bytes) {
  if (size_bytes == 0 || size_bytes > geometry().head_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("store of ", FormatTierKey(key), ": ", size_bytes,
                     " bytes; a tiering value has 1 to ram_head (", geometry().head_bytes,
                     ") bytes"));
  }
  MutexLock lock(&mu_);
  pool_.Reclaim();
  if (stores_in_flight_ >= knobs_.stores_in_flight_max) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "uncommitted stores at stores_in_flight_max=", knobs_.stores_in_flight_max));
  }
  StoreTicket ticket;
  ticket.size_bytes_ = size_bytes;
  if (size_bytes == geometry().head_bytes) {
    absl::StatusOr<HeadLoc> loc = pool_.ReserveHead();
    if (!loc.ok()) return loc.status();
    ticket.residence_ = Residence::kFixedHead;
    ticket.region_ = loc->region;
    ticket.offset_ = loc->offset;
  } else {
    absl::StatusOr<ArenaLoc> loc = pool_.AllocateArena(size_bytes);
    if (!loc.ok()) return loc.status();
    ticket.residence_ = Residence::kArena;
    ticket.region_ = loc->region;
    ticket.offset_ = loc->offset;
  }
  ticket.key_ = key;  // copied only once the space is reserved
  ++stores_in_flight_;
  ticket.manager_ = this;
  return ticket;
}

absl::Status TierManager::WriteStore(const StoreTicket& ticket, uint64_t offset,
                                     absl::Span<const uint8_t> bytes) {
  if (ticket.manager_ != this) {
    return absl::FailedPreconditionError("store ticket is not active on this manager");
  }
  if (offset > ticket.size_bytes_ || bytes.size() > ticket.size_bytes_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("write [", offset, ", +", bytes.size(),
                                              ") past the ", ticket.size_bytes_,
                                              "-byte value of ", FormatTierKey(ticket.key_)));
  }
  // No tier lock: the reserved range belongs to this ticket and its block is
  // not eligible for exchange while the store is uncommitted.
  return memory_->Write(ticket.region_, ticket.offset_ + offset, bytes);
}

void TierManager::AbortStoreLocked(StoreTicket& ticket) {
  if (ticket.residence_ == Residence::kFixedHead) {
    pool_.CancelHead(HeadLoc{ticket.region_, ticket.offset_});
  } else {
    pool_.ReleaseArena(ArenaLoc{ticket.region_, ticket.offset_, ticket.size_bytes_});
  }
  --stores_in_flight_;
  ticket.manager_ = nullptr;
}

void TierManager::AbortStore(StoreTicket&& ticket) {
  HS_CHECK_MSG(ticket.manager_ == this, "abort of a store ticket that is not active here");
  MutexLock lock(&mu_);
  AbortStoreLocked(ticket);
}

absl::Status TierManager::CommitStore(StoreTicket&& ticket) {
  if (ticket.manager_ != this) {
    return absl::FailedPreconditionError("store ticket is not active on this manager");
  }
  MutexLock lock(&mu_);
  pool_.Reclaim();
  IndexEntry* entry = index_.Find(ticket.key_);
  double score = 0;  // a new key starts at zero
  if (entry == nullptr) {
    absl::StatusOr<IndexEntry*> inserted = index_.Insert(ticket.key_, next_incarnation_);
    if (!inserted.ok()) {
      AbortStoreLocked(ticket);
      return inserted.status();
    }
    ++next_incarnation_;
    entry = *inserted;
  } else {
    // A replacement (or the readmission of an evicted head) keeps the score:
    // it moves from the old owner to the new one.
    score = TakeScoreAndRelease(*entry);
  }
  entry->residence = ticket.residence_;
  entry->region = ticket.region_;
  entry->offset = ticket.offset_;
  entry->size_bytes = ticket.size_bytes_;
  if (ticket.residence_ == Residence::kFixedHead) {
    const HeadLoc loc{ticket.region_, ticket.offset_};
    HS_CHECK_OK(pool_.scores(loc.region).Publish(geometry().SlotOfOffset(loc.offset), score));
    pool_.PublishHead(loc, entry);
    entry->score.store(NoScoreTag(), std::memory_order_relaxed);
  } else {
    entry->score.store(score, std::memory_order_relaxed);
  }
  --stores_in_flight_;
  ticket.manager_ = nullptr;
  return absl::OkStatus();
}

absl::Status TierManager::Put(const TierKey& key, absl::Span<const uint8_t> bytes) {
  absl::StatusOr<StoreTicket> ticket = BeginStore(key, bytes.size());
  if (!ticket.ok()) return ticket.status();
  if (absl::Status s = WriteStore(*ticket, 0, bytes); !s.ok()) return s;  // ticket aborts
  return CommitStore(*std::move(ticket));
}

absl::Status TierManager::Delete(const TierKey& key) {
  MutexLock lock(&mu_);
  pool_.Reclaim();
  IndexEntry* entry = index_.Find(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("key ", FormatTierKey(key), " not indexed"));
  }
  // Deletion discards the sole active owner; a recreated key starts at zero.
  TakeScoreAndRelease(*entry);
  HS_CHECK(index_.Erase(key));
  return absl::OkStatus();
}

absl::Status TierManager::EvictHead(const TierKey& key) {
  MutexLock lock(&mu_);
  pool_.Reclaim();
  IndexEntry* entry = index_.Find(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("key ", FormatTierKey(key), " not indexed"));
  }
  if (entry->residence != Residence::kFixedHead) {
    return absl::FailedPreconditionError(
        absl::StrCat("key ", FormatTierKey(key), " has no resident fixed head to evict"));
  }
  const double score = TakeScoreAndRelease(*entry);
  entry->score.store(score, std::memory_order_relaxed);
  metrics_->CountEviction();
  return absl::OkStatus();
}

// ---- Reads.

absl::StatusOr<ReadToken> TierManager::OpenRead(const TierKey& key) {
  std::optional<ReadToken> token = OpenReadIfIndexed(key);
  if (!token.has_value()) {
    return absl::NotFoundError(absl::StrCat("key ", FormatTierKey(key), " not indexed"));
  }
  return *std::move(token);
}

std::optional<ReadToken> TierManager::OpenReadIfIndexed(const TierKey& key) {
  ReaderMutexLock lock(&mu_);
  IndexEntry* entry = index_.Find(key);
  if (entry == nullptr) return std::nullopt;
  ReadToken token;
  token.key_ = key;
  token.entry_ = entry;
  token.incarnation_ = entry->incarnation;
  token.residence_ = entry->residence;
  token.region_ = entry->region;
  token.offset_ = entry->offset;
  token.size_bytes_ = entry->size_bytes;
  switch (entry->residence) {
    case Residence::kFixedHead:
      pool_.PinHead(HeadLoc{entry->region, entry->offset});
      break;
    case Residence::kArena:
      pool_.PinArena(entry->region, entry->offset);
      break;
    case Residence::kEvicted:
      break;
  }
  if (entry->residence == Residence::kEvicted) {
    token.placement_ = ReadPlacement::kEvicted;
  } else {
    token.placement_ =
        pool_.spec(entry->region).preferred ? ReadPlacement::kLocal : ReadPlacement::kForeign;
  }
  token.manager_ = this;
  return token;
}

absl::Status TierManager::ReadBytes(const ReadToken& token, uint64_t offset,
                                    absl::Span<uint8_t> out) const {
  if (token.manager_ != this) {
    return absl::FailedPreconditionError("read token is not active on this manager");
  }
  if (token.residence_ == Residence::kEvicted) {
    return absl::FailedPreconditionError(absl::StrCat(
        "head of ", FormatTierKey(token.key_), " was evicted; read the backing store"));
  }
  if (offset > token.size_bytes_ || out.size() > token.size_bytes_ - offset) {
    return absl::OutOfRangeError(absl::StrCat("read [", offset, ", +", out.size(),
                                              ") past the ", token.size_bytes_,
                                              "-byte value of ", FormatTierKey(token.key_)));
  }
  // No tier lock: the token's pin keeps these bytes in place.
  return memory_->Read(token.region_, token.offset_ + offset, out);
}

void TierManager::FinishRead(ReadToken& token, bool success) {
  HS_CHECK_MSG(token.manager_ == this, "read token already consumed or of another manager");
  {
    ReaderMutexLock lock(&mu_);
    if (token.residence_ == Residence::kFixedHead) {
      pool_.UnpinHead(HeadLoc{token.region_, token.offset_});
    } else if (token.residence_ == Residence::kArena) {
      pool_.UnpinArena(token.region_, token.offset_);
    }
    if (success) {
      // Entries are never freed and incarnations never repeat, so this finds
      // the key without a second lookup -- unless it was deleted (or deleted
      // and recreated) since OpenRead: then it is not the key this read was
      // of, and its score is gone. The shared tier lock keeps `live` stable.
      IndexEntry* entry = token.entry_;
      if (entry->live && entry->incarnation == token.incarnation_) {
        if (entry->residence == Residence::kFixedHead) {
          HS_CHECK(pool_.scores(entry->region)
                       .Add(geometry().SlotOfOffset(entry->offset), knobs_.increment));
        } else {
          HS_CHECK(AtomicAddScore(entry->score, knobs_.increment));
        }
      }
    }
  }
  if (success) metrics_->CountRead(token.placement_);
  token.manager_ = nullptr;
}

void TierManager::CompleteRead(ReadToken&& token) { FinishRead(token, /*success=*/true); }
void TierManager::AbandonRead(ReadToken&& token) { FinishRead(token, /*success=*/false); }

absl::Status TierManager::RaiseScore(const TierKey& key, double score) {
  if (!std::isfinite(score) || score < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("an inherited score must be finite and >= 0, got ", score));
  }
  // Under the shared lock the owner cannot move (moves need the exclusive
  // lock); the raise is a compare/exchange loop like an increment.
  ReaderMutexLock lock(&mu_);
  IndexEntry* entry = index_.Find(key);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("key ", FormatTierKey(key), " not indexed"));
  }
  if (entry->residence == Residence::kFixedHead) {
    HS_CHECK(pool_.scores(entry->region).Raise(geometry().SlotOfOffset(entry->offset), score));
  } else {
    HS_CHECK(AtomicRaiseScore(entry->score, score));
  }
  return absl::OkStatus();
}

std::optional<KeyInfo> TierManager::Lookup(const TierKey& key) const {
  ReaderMutexLock lock(&mu_);
  const IndexEntry* entry = index_.Find(key);
  if (entry == nullptr) return std::nullopt;
  KeyInfo info;
  info.residence = entry->residence;
  info.region = entry->region;
  info.offset = entry->offset;
  info.size_bytes = entry->size_bytes;
  info.incarnation = entry->incarnation;
  info.score = entry->residence == Residence::kFixedHead
                   ? pool_.scores(entry->region).Load(geometry().SlotOfOffset(entry->offset))
                   : entry->score.load(std::memory_order_relaxed);
  return info;
}

absl::StatusOr<double> TierManager::Score(const TierKey& key) const {
  std::optional<KeyInfo> info = Lookup(key);
  if (!info.has_value()) {
    return absl::NotFoundError(absl::StrCat("key ", FormatTierKey(key), " not indexed"));
  }
  return info->score;
}

// ---- Invariants.

absl::Status TierManager::CheckInvariants() const {
  MutexLock lock(&mu_);
  if (absl::Status s = pool_.CheckInvariants(); !s.ok()) return s;
  const PoolGeometry& g = geometry();
  int64_t published = 0;
  for (int r = 0; r < pool_.head_region_count(); ++r) {
    for (uint64_t slot = 0; slot < pool_.scores(r).size(); ++slot) {
      const HeadLoc loc{r, g.OffsetOfSlot(slot)};
      if (pool_.state(loc) != SlotState::kPublished) continue;
      ++published;
      const IndexEntry* owner = pool_.owner(loc);
      if (index_.Find(owner->key) != owner || owner->residence != Residence::kFixedHead ||
          owner->region != r || owner->offset != loc.offset) {
        return absl::InternalError(absl::StrCat("region ", r, " slot ", slot,
                                                ": owner's head location is not this slot"));
      }
      if (!IsNoScoreTag(owner->score.load(std::memory_order_relaxed))) {
        return absl::InternalError(absl::StrCat("key ", FormatTierKey(owner->key),
                                                ": score owned by both slot and index"));
      }
    }
  }
  // Collect every violation and report the smallest key, so the message does
  // not depend on shard assignment (a salted hash) or storage order.
  std::vector<std::pair<TierKey, std::string>> bad;
  int64_t fixed = 0;
  for (int shard = 0; shard < index_.shard_count(); ++shard) {
    index_.ForEachInShard(shard, [&](const IndexEntry& e) {
      const double score = e.score.load(std::memory_order_relaxed);
      if (e.residence == Residence::kFixedHead) {
        ++fixed;
        const HeadLoc loc{e.region, e.offset};
        if (e.region < 0 || e.region >= pool_.head_region_count() ||
            pool_.state(loc) != SlotState::kPublished || pool_.owner(loc) != &e) {
          bad.emplace_back(e.key, "fixed head slot not owned by this entry");
        }
      } else if (IsNoScoreTag(score) || !std::isfinite(score) || score < 0) {
        bad.emplace_back(e.key, "index-owned score missing or not finite");
      }
    });
  }
  if (!bad.empty()) {
    std::sort(bad.begin(), bad.end());
    return absl::InternalError(
        absl::StrCat("key ", FormatTierKey(bad.front().first), ": ", bad.front().second));
  }
  if (fixed != published) {
    return absl::InternalError(absl::StrCat(fixed, " fixed-head entries but ", published,
                                            " published slots"));
  }
  return absl::OkStatus();
}

}  // namespace heatsink
