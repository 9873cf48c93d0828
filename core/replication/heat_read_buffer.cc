#include "core/replication/heat_read_buffer.h"

#include <atomic>
#include <cstring>
#include <new>

#include "core/base/check.h"

namespace heatsink {

// Plain data so that calloc'ed memory is a valid array of them (C++20
// implicit object creation); `published` is accessed through atomic_ref.
struct HeatReadBuffer::Record {
  // (index + 1) truncated to 32 bits once the record at `index` is written;
  // the previous lap left (index + 1 - capacity), which differs.
  uint32_t published;
  uint8_t tenant_size;
  uint8_t key_size;
  uint8_t domain_size;
  HeatReadKind kind;
  TimeNs t_ns;
  char bytes[kKeyBytesMax];
};

struct HeatReadBuffer::Stripe {
  // Written by the stripe's producers.
  alignas(64) std::atomic<uint64_t> tail{0};
  // The head as a producer last read it (at most the real head): refreshed
  // only when the stripe looks full or past its high-water mark, so a
  // producer does not read the drainer's line on every append.
  std::atomic<uint64_t> head_seen{0};
  std::atomic<int64_t> dropped{0};
  // Written by the drainer.
  alignas(64) std::atomic<uint64_t> head{0};
};

namespace {

// Stripes are handed to threads round robin, process-wide: a thread keeps
// its number for every buffer. Constant-initialised, so reading it costs no
// guard check.
std::atomic<uint32_t> next_thread_stripe{0};
thread_local int32_t this_thread_stripe = -1;

}  // namespace

HeatReadBuffer::HeatReadBuffer(int64_t records_per_stripe)
    : capacity_(records_per_stripe),
      mask_(static_cast<uint64_t>(records_per_stripe) - 1),
      stripes_(new Stripe[kStripes]) {
  static_assert(sizeof(Record) == kRecordBytes);
  static_assert(kKeyBytesMax <= 255, "field lengths are 8-bit");
  HS_CHECK(records_per_stripe >= kRecordsPerStripeMin &&
           records_per_stripe <= kRecordsPerStripeMax &&
           (records_per_stripe & (records_per_stripe - 1)) == 0);
  void* memory = std::calloc(static_cast<size_t>(kStripes) * static_cast<size_t>(capacity_),
                             sizeof(Record));
  HS_CHECK_MSG(memory != nullptr, "heat read buffer allocation failed");
  records_.reset(static_cast<Record*>(memory));
}

HeatReadBuffer::~HeatReadBuffer() = default;

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
  const int32_t stripe_index = ThisThreadStripeIndex();
  Stripe& s = stripes_[stripe_index];
  const uint64_t capacity = static_cast<uint64_t>(capacity_);
  const uint64_t high_water = capacity / 2;
  uint64_t t = s.tail.load(std::memory_order_relaxed);
  uint64_t h = 0;
  for (;;) {
    h = s.head_seen.load(std::memory_order_acquire);
    if (t - h >= high_water) {
      // Maybe full, maybe a stale view of the head (or of the tail, when
      // another thread shares the stripe): look again.
      h = s.head.load(std::memory_order_acquire);
      s.head_seen.store(h, std::memory_order_release);
      if (static_cast<int64_t>(t - h) < 0) {
        t = s.tail.load(std::memory_order_relaxed);
        continue;
      }
      if (t - h >= capacity) {
        s.dropped.fetch_add(1, std::memory_order_relaxed);
        return AppendResult::kFull;
      }
    }
    // Sequentially consistent: DynamicReplication's drain re-arm check
    // (its timer flag, read right after this) relies on it.
    if (s.tail.compare_exchange_weak(t, t + 1, std::memory_order_seq_cst,
                                     std::memory_order_relaxed)) {
      break;
    }
  }
  Record* const ring = records_.get() + static_cast<size_t>(stripe_index) * capacity;
  Record& r = ring[t & mask_];
  // The drain read the records a lap ago on its own core: ask for the line
  // of a record a few appends ahead now, so that writing it then does not
  // wait for the line to come back.
  __builtin_prefetch(&ring[(t + 8) & mask_], 1);
  r.tenant_size = static_cast<uint8_t>(key.tenant.size());
  r.key_size = static_cast<uint8_t>(key.key.size());
  r.domain_size = static_cast<uint8_t>(key.domain.size());
  r.kind = kind;
  r.t_ns = t_ns;
  char* out = r.bytes;
  // memcpy with a null source is undefined even for size 0.
  if (!key.tenant.empty()) std::memcpy(out, key.tenant.data(), key.tenant.size());
  out += key.tenant.size();
  if (!key.key.empty()) std::memcpy(out, key.key.data(), key.key.size());
  out += key.key.size();
  if (!key.domain.empty()) std::memcpy(out, key.domain.data(), key.domain.size());
  std::atomic_ref<uint32_t>(r.published)
      .store(static_cast<uint32_t>(t + 1), std::memory_order_release);
  return t + 1 - h >= high_water ? AppendResult::kAppendedHighWater : AppendResult::kAppended;
}

int64_t HeatReadBuffer::Drain(absl::FunctionRef<void(TimeNs, HeatKeyView, HeatReadKind)> apply) {
  int64_t applied = 0;
  for (int32_t i = 0; i < kStripes; ++i) {
    Stripe& s = stripes_[i];
    Record* const ring = records_.get() + static_cast<size_t>(i) * static_cast<size_t>(capacity_);
    const uint64_t head = s.head.load(std::memory_order_relaxed);
    const uint64_t tail = s.tail.load(std::memory_order_seq_cst);
    uint64_t next = head;
    for (; next != tail; ++next) {
      // The records were written on the readers' cores: start moving the
      // next ones while this one is applied.
      __builtin_prefetch(&ring[(next + 4) & mask_]);
      Record& r = ring[next & mask_];
      if (std::atomic_ref<uint32_t>(r.published).load(std::memory_order_acquire) !=
          static_cast<uint32_t>(next + 1)) {
        break;  // claimed, not yet written: the next drain takes it
      }
      const char* in = r.bytes;
      const HeatKeyView key{absl::string_view(in, r.tenant_size),
                            absl::string_view(in + r.tenant_size, r.key_size),
                            absl::string_view(in + r.tenant_size + r.key_size, r.domain_size)};
      apply(r.t_ns, key, r.kind);
      ++applied;
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
