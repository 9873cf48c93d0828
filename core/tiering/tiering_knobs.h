// File: core/tiering/tiering_knobs.h
//
// Knobs of the NUMA tiering core (ADR-0019): the head pool's geometry and
// regions, the score increment and decay, and the promotion loop's pacing.
// Registry names are the ADR's flag names with '-' written as '_' (`block`,
// `ram_head`, `increment`, `decay`, `memory`, `sub_memory`, `small_memory`,
// `small_sub_memory`, `no_numa_promotion`); knobs beyond the ADR carry their
// unit last. Everything beyond the ADR that would change its semantics
// (hysteresis, exchange cap) is off by default.
//
// Example:
//   TieringKnobs k;
//   HS_RETURN_IF_ERROR(TieringKnobs::Registry().Set(k, "sub_memory", "64M,64M"));
//   HS_RETURN_IF_ERROR(k.Validate());
//   std::vector<RegionSpec> plan = PlanRegions(k);  // what the memory must provide
#ifndef HEATSINK_CORE_TIERING_TIERING_KNOBS_H_
#define HEATSINK_CORE_TIERING_TIERING_KNOBS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/base/knobs.h"

namespace heatsink {

inline constexpr uint64_t kKiB = uint64_t{1} << 10;
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kGiB = uint64_t{1} << 30;

struct TieringKnobs {
  // --block: the unit of promotion and of buddy allocation. Power of two.
  uint64_t block_bytes = 2 * kMiB;
  // --ram-head: the size of one fixed head. Power of two, at most one block;
  // objects of exactly this size use fixed buddy slots (8 per default block),
  // smaller ones go to the compact arena, which is never promoted.
  uint64_t ram_head_bytes = 256 * kKiB;
  // --increment: added to a key's score once per successful logical read.
  // Finite and > 0.
  double increment = 1.0;
  // --decay: every score is multiplied by this once per decay interval.
  // Finite and strictly inside (0, 1).
  double decay = 0.5;
  // --memory: bytes of the preferred head region (region 0, serving node).
  uint64_t memory_bytes = 1 * kGiB;
  // --sub-memory: bytes of each foreign head region, in region order
  // (regions 1, 2, ...). Empty: no foreign regions, promotion has nothing to do.
  std::vector<uint64_t> sub_memory_bytes;
  // --small-memory: bytes of the local region of a dedicated small-object
  // pool (0: none; the arena then lives in head-pool blocks). The pool's
  // regions are outside the promotion scan.
  uint64_t small_memory_bytes = 0;
  // --small-sub-memory: foreign regions of the small-object pool.
  std::vector<uint64_t> small_sub_memory_bytes;
  // --no-numa-promotion: scores are kept and decayed, blocks never move.
  bool no_numa_promotion = false;

  // The ADR decays once per minute; kept as a knob so short simulations and
  // tests can compress time. Default is the ADR's.
  int64_t decay_interval_ms = 60'000;
  // The ADR's wait after a scan that finds no inversion.
  int64_t no_inversion_wait_ms = 1'000;
  // Beyond the ADR, off by default: an exchange needs the hottest foreign
  // block to exceed the coldest preferred block by this factor (>= 1.0;
  // 1.0 is the ADR's strict comparison). Damps ping-pong under close scores.
  double promotion_hysteresis_factor = 1.0;
  // Beyond the ADR, off by default: at most this many exchanges in any one
  // second of Env time (0: unlimited).
  int64_t exchanges_per_second_max = 0;

  // Beyond the ADR: score inheritance. A replica copied into this pool
  // starts its chunks at this fraction of the source chunks' decayed scores
  // (raised to it, never lowered; the copy carries the score). In [0, 1];
  // 0 turns inheritance off (a copy starts at zero, as any new key).
  double copy_score_inheritance = 1.0;
  // Beyond the ADR: a copied head whose inherited score is above the coldest
  // head of the preferred region trades places with it at once
  // (TierManager::PlaceHotNewcomer), instead of waiting in a foreign block
  // that may never be complete enough to be promoted.
  bool place_hot_copies_local = true;

  // Limits (TigerBeetle's "a limit on everything").
  int64_t index_keys_max = int64_t{1} << 24;  // keys in the index, any residence
  int64_t index_shards = 64;                  // shards of the key index
  int64_t stores_in_flight_max = 4096;        // uncommitted store tickets

  // Checks every knob; the message names the knob and the offending value.
  [[nodiscard]] absl::Status Validate() const;

  // Derived geometry. REQUIRES: Validate() is OK.
  uint64_t heads_per_block() const { return block_bytes / ram_head_bytes; }

  // Name registry (ADR flag names); sizes accept K/M/G/T suffixes (binary).
  static const KnobRegistry<TieringKnobs>& Registry();
  // Small limits and regions so tests hit edge cases quickly: 64 KiB blocks of
  // 8 KiB heads, one 512 KiB preferred region and two 512 KiB foreign ones.
  static TieringKnobs TestMin();
};

// Which pool a region belongs to. Head-pool regions hold fixed heads (and the
// arena when there is no small pool); small-pool regions hold only the arena.
enum class PoolKind { kHead, kSmall };

struct RegionSpec {
  int region = 0;
  uint64_t bytes = 0;
  bool preferred = false;  // the region on the serving node of its pool
  PoolKind pool = PoolKind::kHead;
};

// The region layout the knobs describe, in index order: head-pool preferred
// (0), head-pool foreign (sub_memory order), then the small pool's local and
// foreign regions. A HeadMemory for TierManager must have exactly these sizes.
std::vector<RegionSpec> PlanRegions(const TieringKnobs& knobs);
std::vector<uint64_t> RegionSizes(const std::vector<RegionSpec>& plan);

// Parses "2097152", "2M", "2MiB", "256k", "1G" (binary multiples) into bytes.
[[nodiscard]] absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text);
// Parses a comma-separated list of sizes; "" is the empty list.
[[nodiscard]] absl::StatusOr<std::vector<uint64_t>> ParseByteSizeList(absl::string_view text);

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_TIERING_KNOBS_H_
