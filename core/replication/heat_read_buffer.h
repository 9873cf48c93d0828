// File: core/replication/heat_read_buffer.h
//
// The read path's half of the heat window: reads are appended here on the
// reading thread and applied to the HeatWindow later, in a batch, by one
// drainer on the Executor (DynamicReplication::DrainReads). The anchor is
// Caffeine's striped read buffer: the read touches no per-key state and no
// line another reader writes, takes no lock and allocates nothing.
//
// Layout. kStripes stripes, each a ring of 16-byte units (records_per_stripe
// x 4 units: 64 bytes per record of the sizing below). A thread takes a
// stripe on its first append (round robin over all buffers of the process,
// kept in a thread_local), so up to kStripes reading threads each own one.
// Each stripe keeps its producer index (tail, in units) and its consumer
// index (head) on separate cache lines. A record is packed: a 16-byte header
// (publication flag, kind, the unit count, the three field lengths and the
// read time) followed at once by the tenant, key and requester domain bytes,
// rounded up to whole units: 16 bytes plus the key bytes, so a read of a
// 30-byte key takes 48 bytes and four short reads share a cache line. A
// stripe therefore holds records_per_stripe reads of keys up to 48 bytes,
// more of shorter ones, fewer of longer ones (kKeyBytesMax = 240 bytes
// together, 256 bytes a record). A record never wraps: one that does not
// fit before the ring's end is preceded by a padding record up to it.
// Memory: records_per_stripe x 64 bytes per stripe in use (1 MiB with the
// default 16,384 records per stripe; at most kStripes of them, 16 MiB). A
// stripe's ring is allocated, zeroed, by the first append to it: the one
// allocation of the read path, once per stripe for the buffer's lifetime. A
// single-threaded driver (the simulator) therefore holds one ring.
//
// Append (foreground): claim the record's units (and any padding) at the
// thread's stripe's tail with one compare-exchange (uncontended while no
// other thread shares the stripe), write the header and the key bytes, and
// publish the record with one release store of its flag. A stripe without
// room for the record is full: the read is dropped and counted (dropped()),
// never waited for. A key longer than kKeyBytesMax is not appended
// (kTooLong): the caller applies it directly.
//
// Drain (background, one caller at a time): visits the stripes in index
// order and, in each, the published records in append order, stopping at
// the first record a producer has claimed but not yet published (the next
// drain takes it). The drain zeroes what it consumed, so a flag is set only
// by a record of the current lap. Used from one thread (the simulator),
// records therefore come out in exactly the order they went in.
//
// Thread safety: Append from any number of threads, concurrently with one
// Drain. Drain calls must not overlap (the caller serialises them).
#ifndef HEATSINK_CORE_REPLICATION_HEAT_READ_BUFFER_H_
#define HEATSINK_CORE_REPLICATION_HEAT_READ_BUFFER_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "absl/functional/function_ref.h"
#include "core/env/time.h"
#include "core/replication/heat_key.h"

namespace heatsink {

// What a buffered read is for. kCounted: the read counts in the heat window.
// kAtCap: the read's object already holds its replica cap (DESIGN 2: no
// heat); it only tells the cold release that the key's replicas are still
// read (DynamicReplication, dynamic_replication_release_enabled).
enum class HeatReadKind : uint8_t { kCounted = 0, kAtCap = 1 };

class HeatReadBuffer {
 public:
  static constexpr int32_t kStripes = 16;
  // The ring's unit: a record is 16 bytes of header plus its key bytes,
  // rounded up to whole units.
  static constexpr size_t kUnitBytes = 16;
  // Stripe bytes per record of records_per_stripe (a read of a key of up to
  // 48 bytes).
  static constexpr size_t kRecordBytes = 64;
  // Tenant + key + requester domain bytes a record holds.
  static constexpr size_t kKeyBytesMax = 240;
  static constexpr int64_t kRecordsPerStripeMin = 16;
  static constexpr int64_t kRecordsPerStripeMax = 65'536;
  static constexpr int64_t kHighWaterUnitsMax = 8'192;

  enum class AppendResult : uint8_t {
    kAppended,
    // Appended, and the stripe now holds at least high_water_units() units:
    // the caller should ask for a drain soon.
    kAppendedHighWater,
    kFull,     // dropped and counted
    kTooLong,  // not appended: the key does not fit a record
  };

  // REQUIRES: records_per_stripe a power of two in
  // [kRecordsPerStripeMin, kRecordsPerStripeMax] (HS_CHECK).
  explicit HeatReadBuffer(int64_t records_per_stripe);
  ~HeatReadBuffer();
  HeatReadBuffer(const HeatReadBuffer&) = delete;
  HeatReadBuffer& operator=(const HeatReadBuffer&) = delete;

  static bool Fits(HeatKeyView key) {
    return key.tenant.size() + key.key.size() + key.domain.size() <= kKeyBytesMax;
  }

  // Appends one read of `key` at `t_ns` to the calling thread's stripe.
  // (The key by reference: 48 bytes passed by value go through the stack in
  // pieces the callee reloads whole, which stalls store forwarding.)
  AppendResult Append(TimeNs t_ns, const HeatKeyView& key,
                      HeatReadKind kind = HeatReadKind::kCounted);

  // Calls `apply(t_ns, key, kind)` for every published record, stripe by stripe
  // in index order, each stripe in append order, and frees them. The views
  // are valid only during the call. Returns the records applied.
  // REQUIRES: no other Drain runs concurrently.
  int64_t Drain(absl::FunctionRef<void(TimeNs, HeatKeyView, HeatReadKind)> apply);

  // True when some stripe holds a record not yet drained (published or
  // still being written).
  bool HasUndrained() const;

  // Reads dropped because their stripe was full, since construction.
  int64_t dropped() const;
  int64_t records_per_stripe() const { return capacity_; }
  // Units a read of `key` takes in its stripe. REQUIRES: Fits(key).
  static int64_t UnitsFor(HeatKeyView key) {
    return static_cast<int64_t>(
        (kUnitBytes + key.tenant.size() + key.key.size() + key.domain.size() + kUnitBytes - 1) /
        kUnitBytes);
  }
  // A stripe's size in units.
  int64_t stripe_units() const { return units_; }
  // Half a stripe or kHighWaterUnitsMax units (128 KiB of reads), whichever
  // is less: an append that leaves at least this many units undrained
  // reports kAppendedHighWater. The drain is asked for at the same point
  // with any stripe of 4,096 records or more; a larger stripe only adds room
  // before reads are dropped.
  int64_t high_water_units() const { return std::min(units_ / 2, kHighWaterUnitsMax); }
  // Bytes of the stripes' rings allocated so far (one ring per stripe that
  // was appended to).
  int64_t MemoryBytes() const;
  // Bytes of one stripe's ring.
  int64_t StripeBytes() const { return units_ * static_cast<int64_t>(kUnitBytes); }

 private:
  struct Header;
  struct Stripe;
  static int32_t ThisThreadStripeIndex();

  struct alignas(kUnitBytes) Unit {
    unsigned char bytes[kUnitBytes];
  };

  const int64_t capacity_;
  // Units per stripe (capacity_ x kRecordBytes / kUnitBytes) and its mask.
  const int64_t units_;
  const uint64_t mask_;
  std::unique_ptr<Stripe[]> stripes_;

  // The stripe's ring (units_ units, calloc'ed: zero publication flags),
  // allocated by the first append to the stripe.
  Unit* RingOf(Stripe& s);
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_REPLICATION_HEAT_READ_BUFFER_H_
