#include "core/replication/heat_read_buffer.h"

#include <atomic>
#include <cstring>
#include <new>

#include "core/base/check.h"

namespace heatsink {

// A record's first unit. Plain data, so that calloc'ed memory is a valid
// array of units holding them (C++20 implicit object creation); `published`
// is accessed through atomic_ref.
struct HeatReadBuffer::Header {
  // kPublished once the record is written; 0 while claimed and being written,
  // and after the drain consumed it (the drain zeroes what it consumed).
  uint8_t published;
  // A HeatReadKind, or kPadding for the units before the ring's end that a
  // record did not fit in.
  uint8_t kind;
  // Units the record takes, this header included (1..16).
  uint8_t units;
  uint8_t tenant_size;
  uint8_t key_size;
  uint8_t domain_size;
  uint8_t reserved[2];
  TimeNs t_ns;
};

struct HeatReadBuffer::Stripe {
  // Written by the stripe's producers (in units).
  alignas(64) std::atomic<uint64_t> tail{0};
  // The ring, set once by the first append (null until then); freed with
  // the buffer.
  std::atomic<Unit*> ring{nullptr};
  // The head as a producer last read it (at most the real head): refreshed
  // only when the stripe looks full or past its high-water mark, so a
  // producer does not read the drainer's line on every append.
  std::atomic<uint64_t> head_seen{0};
  std::atomic<int64_t> dropped{0};
  // Written by the drainer (in units).
  alignas(64) std::atomic<uint64_t> head{0};
};

namespace {

constexpr uint8_t kPublished = 1;
constexpr uint8_t kPadding = 0xff;
constexpr uint64_t kUnitsMax =
    (HeatReadBuffer::kUnitBytes + HeatReadBuffer::kKeyBytesMax) / HeatReadBuffer::kUnitBytes;

// Stripes are handed to threads round robin, process-wide: a thread keeps
// its number for every buffer. Constant-initialised, so reading it costs no
// guard check.
std::atomic<uint32_t> next_thread_stripe{0};
thread_local int32_t this_thread_stripe = -1;

// Sets a record's publication flag (Header::published).
void Publish(uint8_t& published) {
  std::atomic_ref<uint8_t>(published).store(kPublished, std::memory_order_release);
}

}  // namespace

HeatReadBuffer::HeatReadBuffer(int64_t records_per_stripe)
    : capacity_(records_per_stripe),
      units_(records_per_stripe * static_cast<int64_t>(kRecordBytes / kUnitBytes)),
      mask_(static_cast<uint64_t>(units_) - 1),
      stripes_(new Stripe[kStripes]) {
  static_assert(sizeof(Header) == kUnitBytes);
  static_assert(sizeof(Unit) == kUnitBytes);
  static_assert(kKeyBytesMax <= 255 && (kUnitBytes + kKeyBytesMax) % kUnitBytes == 0,
                "field lengths are 8-bit; the longest record is whole units");
  HS_CHECK(records_per_stripe >= kRecordsPerStripeMin &&
           records_per_stripe <= kRecordsPerStripeMax &&
           (records_per_stripe & (records_per_stripe - 1)) == 0);
  // The longest record fits below the high-water mark.
  HS_CHECK(static_cast<uint64_t>(units_) / 2 >= kUnitsMax);
}

HeatReadBuffer::~HeatReadBuffer() {
  for (int32_t i = 0; i < kStripes; ++i) std::free(stripes_[i].ring.load());
}

HeatReadBuffer::Unit* HeatReadBuffer::RingOf(Stripe& s) {
  if (Unit* ring = s.ring.load(std::memory_order_acquire); ring != nullptr) return ring;
  void* memory = std::calloc(static_cast<size_t>(units_), sizeof(Unit));
  HS_CHECK_MSG(memory != nullptr, "heat read buffer allocation failed");
  Unit* expected = nullptr;
  // Two threads sharing the stripe may both get here: one ring wins.
  if (s.ring.compare_exchange_strong(expected, static_cast<Unit*>(memory),
                                     std::memory_order_acq_rel, std::memory_order_acquire)) {
    return static_cast<Unit*>(memory);
  }
  std::free(memory);
  return expected;
}

int64_t HeatReadBuffer::MemoryBytes() const {
  int64_t rings = 0;
  for (int32_t i = 0; i < kStripes; ++i) {
    if (stripes_[i].ring.load(std::memory_order_acquire) != nullptr) ++rings;
  }
  return rings * StripeBytes();
}

int32_t HeatReadBuffer::ThisThreadStripeIndex() {
  if (this_thread_stripe < 0) {
    this_thread_stripe = static_cast<int32_t>(
        next_thread_stripe.fetch_add(1, std::memory_order_relaxed) % kStripes);
  }
  return this_thread_stripe;
}

HeatReadBuffer::AppendResult HeatReadBuffer::Append(TimeNs t_ns, const HeatKeyView& key,
                                                   HeatReadKind kind) {
  if (!Fits(key)) return AppendResult::kTooLong;
  const uint64_t units = static_cast<uint64_t>(UnitsFor(key));
  const int32_t stripe_index = ThisThreadStripeIndex();
  Stripe& s = stripes_[stripe_index];
  // Before the claim: once the tail moves, the drain reads the ring.
  Unit* const ring = RingOf(s);
  const uint64_t capacity = static_cast<uint64_t>(units_);
  const uint64_t high_water = static_cast<uint64_t>(high_water_units());
  uint64_t t = s.tail.load(std::memory_order_relaxed);
  uint64_t h = 0;
  uint64_t padding = 0;
  for (;;) {
    // A record that would cross the ring's end starts at the next lap.
    const uint64_t room_to_end = capacity - (t & mask_);
    padding = room_to_end < units ? room_to_end : 0;
    const uint64_t claim = padding + units;
    h = s.head_seen.load(std::memory_order_acquire);
    if (t + claim - h > high_water) {
      // Maybe full, maybe a stale view of the head (or of the tail, when
      // another thread shares the stripe): look again.
      h = s.head.load(std::memory_order_acquire);
      s.head_seen.store(h, std::memory_order_release);
      if (static_cast<int64_t>(t - h) < 0) {
        t = s.tail.load(std::memory_order_relaxed);
        continue;
      }
      if (t + claim - h > capacity) {
        s.dropped.fetch_add(1, std::memory_order_relaxed);
        return AppendResult::kFull;
      }
    }
    // Sequentially consistent: DynamicReplication's drain re-arm check
    // (its timer flag, read right after this) relies on it.
    if (s.tail.compare_exchange_weak(t, t + claim, std::memory_order_seq_cst,
                                     std::memory_order_relaxed)) {
      break;
    }
  }
  if (padding > 0) {
    Header& pad = *reinterpret_cast<Header*>(&ring[t & mask_]);
    pad.kind = kPadding;
    pad.units = static_cast<uint8_t>(padding);
    Publish(pad.published);
    t += padding;
  }
  const uint64_t at = t & mask_;
  // The drain read (and zeroed) these units a lap ago on its own core: ask
  // for the line a few records ahead now, so that writing it then does not
  // wait for the line to come back.
  __builtin_prefetch(&ring[(at + 16) & mask_], 1);
  Header& r = *reinterpret_cast<Header*>(&ring[at]);
  r.kind = static_cast<uint8_t>(kind);
  r.units = static_cast<uint8_t>(units);
  r.tenant_size = static_cast<uint8_t>(key.tenant.size());
  r.key_size = static_cast<uint8_t>(key.key.size());
  r.domain_size = static_cast<uint8_t>(key.domain.size());
  r.t_ns = t_ns;
  char* out = reinterpret_cast<char*>(&ring[at + 1]);
  // memcpy with a null source is undefined even for size 0.
  if (!key.tenant.empty()) std::memcpy(out, key.tenant.data(), key.tenant.size());
  out += key.tenant.size();
  if (!key.key.empty()) std::memcpy(out, key.key.data(), key.key.size());
  out += key.key.size();
  if (!key.domain.empty()) std::memcpy(out, key.domain.data(), key.domain.size());
  Publish(r.published);
  return t + units - h >= high_water ? AppendResult::kAppendedHighWater : AppendResult::kAppended;
}

int64_t HeatReadBuffer::Drain(absl::FunctionRef<void(TimeNs, HeatKeyView, HeatReadKind)> apply) {
  int64_t applied = 0;
  for (int32_t i = 0; i < kStripes; ++i) {
    Stripe& s = stripes_[i];
    const uint64_t head = s.head.load(std::memory_order_relaxed);
    const uint64_t tail = s.tail.load(std::memory_order_seq_cst);
    if (tail == head) continue;
    // Set before the tail first moved (Append), so seen with it.
    Unit* const ring = s.ring.load(std::memory_order_acquire);
    uint64_t next = head;
    while (next != tail) {
      const uint64_t at = next & mask_;
      // The records were written on the readers' cores: start moving the
      // next ones while this one is applied.
      __builtin_prefetch(&ring[(at + 8) & mask_]);
      Header& r = *reinterpret_cast<Header*>(&ring[at]);
      if (std::atomic_ref<uint8_t>(r.published).load(std::memory_order_acquire) != kPublished) {
        break;  // claimed, not yet written: the next drain takes it
      }
      const uint64_t units = r.units;
      HS_CHECK(units >= 1 && units <= kUnitsMax && at + units <= static_cast<uint64_t>(units_));
      if (r.kind != kPadding) {
        const char* in = reinterpret_cast<const char*>(&ring[at + 1]);
        const HeatKeyView key{absl::string_view(in, r.tenant_size),
                              absl::string_view(in + r.tenant_size, r.key_size),
                              absl::string_view(in + r.tenant_size + r.key_size, r.domain_size)};
        apply(r.t_ns, key, static_cast<HeatReadKind>(r.kind));
        ++applied;
      }
      // Zeroed, the record's units hold no flag a later record could be
      // mistaken for (its header may land on any of them).
      std::memset(static_cast<void*>(&ring[at]), 0, units * kUnitBytes);
      next += units;
    }
    if (next != head) s.head.store(next, std::memory_order_release);
  }
  return applied;
}

bool HeatReadBuffer::HasUndrained() const {
  for (int32_t i = 0; i < kStripes; ++i) {
    const Stripe& s = stripes_[i];
    if (s.tail.load(std::memory_order_seq_cst) != s.head.load(std::memory_order_relaxed)) {
      return true;
    }
  }
  return false;
}

int64_t HeatReadBuffer::dropped() const {
  int64_t n = 0;
  for (int32_t i = 0; i < kStripes; ++i) n += stripes_[i].dropped.load(std::memory_order_relaxed);
  return n;
}

}  // namespace heatsink
