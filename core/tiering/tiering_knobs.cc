#include "core/tiering/tiering_knobs.h"

#include <cmath>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace heatsink {
namespace {

// Region counts are small (one per NUMA node per pool); a bound keeps a typo
// from creating thousands of dense arrays.
constexpr size_t kRegionsPerPoolMax = 64;
// Bounds the exchange-rate window, which holds one timestamp per exchange.
constexpr int64_t kExchangesPerSecondCap = 1'000'000;
constexpr int64_t kIndexShardsMax = 4096;
// Fixed heads must at least hold the arena's alignment unit.
constexpr uint64_t kRamHeadBytesMin = 64;
constexpr uint64_t kBlockBytesMax = kGiB;

bool IsPowerOfTwo(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

absl::Status Invalid(absl::string_view knob, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("knob ", knob, ": ", what));
}

std::string FormatDouble(double v) { return absl::StrFormat("%.17g", v); }

absl::Status CheckRegionSize(absl::string_view knob, uint64_t bytes, uint64_t block_bytes) {
  if (bytes == 0 || bytes % block_bytes != 0) {
    return Invalid(knob, absl::StrCat("must be a positive multiple of block (", block_bytes,
                                      " bytes), got ", bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckRegionList(absl::string_view knob, const std::vector<uint64_t>& list,
                             uint64_t block_bytes) {
  if (list.size() + 1 > kRegionsPerPoolMax) {
    return Invalid(knob, absl::StrCat("at most ", kRegionsPerPoolMax - 1,
                                      " foreign regions, got ", list.size()));
  }
  for (size_t i = 0; i < list.size(); ++i) {
    if (absl::Status s = CheckRegionSize(absl::StrCat(knob, "[", i, "]"), list[i], block_bytes);
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

// Registry entry for a byte size that also accepts suffixes; printed as plain
// bytes so a dump reloads exactly.
template <typename Access>
void AddSize(KnobRegistry<TieringKnobs>& r, std::string name, std::string help, Access access) {
  r.Custom(
      name, std::move(help), KnobType::kInt,
      [access, name](TieringKnobs& k, absl::string_view v) -> absl::Status {
        absl::StatusOr<uint64_t> bytes = ParseByteSize(v);
        if (!bytes.ok()) return Invalid(name, bytes.status().message());
        access(k) = *bytes;
        return absl::OkStatus();
      },
      [access](const TieringKnobs& k) {
        return absl::StrCat(access(const_cast<TieringKnobs&>(k)));
      });
}

template <typename Access>
void AddSizeList(KnobRegistry<TieringKnobs>& r, std::string name, std::string help,
                 Access access) {
  r.Custom(
      name, std::move(help), KnobType::kString,
      [access, name](TieringKnobs& k, absl::string_view v) -> absl::Status {
        absl::StatusOr<std::vector<uint64_t>> list = ParseByteSizeList(v);
        if (!list.ok()) return Invalid(name, list.status().message());
        access(k) = *std::move(list);
        return absl::OkStatus();
      },
      [access](const TieringKnobs& k) {
        return absl::StrJoin(access(const_cast<TieringKnobs&>(k)), ",");
      });
}

KnobRegistry<TieringKnobs> BuildRegistry() {
  KnobRegistry<TieringKnobs> r;
  AddSize(r, "block", "bytes of one promotion/buddy block (power of two)",
          [](TieringKnobs& k) -> uint64_t& { return k.block_bytes; });
  AddSize(r, "ram_head", "bytes of one fixed head (power of two, <= block)",
          [](TieringKnobs& k) -> uint64_t& { return k.ram_head_bytes; });
  r.Field("increment", "score added once per logical read (finite, > 0)",
          [](TieringKnobs& k) -> double& { return k.increment; });
  r.Field("decay", "factor applied to every score once per decay interval (0 < decay < 1)",
          [](TieringKnobs& k) -> double& { return k.decay; });
  AddSize(r, "memory", "bytes of the preferred head region",
          [](TieringKnobs& k) -> uint64_t& { return k.memory_bytes; });
  AddSizeList(r, "sub_memory", "bytes of each foreign head region, comma-separated",
              [](TieringKnobs& k) -> std::vector<uint64_t>& { return k.sub_memory_bytes; });
  AddSize(r, "small_memory", "bytes of the local small-object pool region (0: none)",
          [](TieringKnobs& k) -> uint64_t& { return k.small_memory_bytes; });
  AddSizeList(
      r, "small_sub_memory", "bytes of each foreign small-object pool region, comma-separated",
      [](TieringKnobs& k) -> std::vector<uint64_t>& { return k.small_sub_memory_bytes; });
  r.Field("no_numa_promotion", "keep and decay scores but never exchange blocks",
          [](TieringKnobs& k) -> bool& { return k.no_numa_promotion; });
  r.Field("decay_interval_ms", "time between decay passes (ADR: one minute)",
          [](TieringKnobs& k) -> int64_t& { return k.decay_interval_ms; });
  r.Field("no_inversion_wait_ms", "wait after a scan that finds no inversion (ADR: 1 s)",
          [](TieringKnobs& k) -> int64_t& { return k.no_inversion_wait_ms; });
  r.Field("promotion_hysteresis_factor",
          "foreign block must exceed the local one by this factor (1.0: off, strict)",
          [](TieringKnobs& k) -> double& { return k.promotion_hysteresis_factor; });
  r.Field("exchanges_per_second_max", "cap on block exchanges per second (0: unlimited)",
          [](TieringKnobs& k) -> int64_t& { return k.exchanges_per_second_max; });
  r.Field("copy_score_inheritance",
          "fraction of the source's decayed score a copied replica starts with (0: off)",
          [](TieringKnobs& k) -> double& { return k.copy_score_inheritance; });
  r.Field("place_hot_copies_local",
          "a copied head hotter than the coldest local head trades places with it",
          [](TieringKnobs& k) -> bool& { return k.place_hot_copies_local; });
  r.Field("index_keys_max", "keys the tiering index holds",
          [](TieringKnobs& k) -> int64_t& { return k.index_keys_max; });
  r.Field("index_shards", "shards of the tiering key index",
          [](TieringKnobs& k) -> int64_t& { return k.index_shards; });
  r.Field("stores_in_flight_max", "uncommitted stores at once",
          [](TieringKnobs& k) -> int64_t& { return k.stores_in_flight_max; });
  return r;
}

}  // namespace

absl::Status TieringKnobs::Validate() const {
  if (!IsPowerOfTwo(block_bytes) || block_bytes > kBlockBytesMax) {
    return Invalid("block", absl::StrCat("must be a power of two of at most ", kBlockBytesMax,
                                         " bytes, got ", block_bytes));
  }
  if (!IsPowerOfTwo(ram_head_bytes) || ram_head_bytes < kRamHeadBytesMin ||
      ram_head_bytes > block_bytes) {
    return Invalid("ram_head", absl::StrCat("must be a power of two between ", kRamHeadBytesMin,
                                            " and block (", block_bytes, ") bytes, got ",
                                            ram_head_bytes));
  }
  if (!std::isfinite(increment) || !(increment > 0)) {
    return Invalid("increment",
                   absl::StrCat("must be finite and > 0, got ", FormatDouble(increment)));
  }
  if (!std::isfinite(decay) || !(decay > 0 && decay < 1)) {
    return Invalid("decay", absl::StrCat("must be finite and strictly inside (0, 1), got ",
                                         FormatDouble(decay)));
  }
  if (absl::Status s = CheckRegionSize("memory", memory_bytes, block_bytes); !s.ok()) return s;
  if (absl::Status s = CheckRegionList("sub_memory", sub_memory_bytes, block_bytes); !s.ok()) {
    return s;
  }
  if (small_memory_bytes != 0) {
    if (absl::Status s = CheckRegionSize("small_memory", small_memory_bytes, block_bytes);
        !s.ok()) {
      return s;
    }
  } else if (!small_sub_memory_bytes.empty()) {
    return Invalid("small_sub_memory", "needs small_memory (the pool's local region)");
  }
  if (absl::Status s = CheckRegionList("small_sub_memory", small_sub_memory_bytes, block_bytes);
      !s.ok()) {
    return s;
  }
  if (decay_interval_ms <= 0) {
    return Invalid("decay_interval_ms", absl::StrCat("must be > 0, got ", decay_interval_ms));
  }
  if (no_inversion_wait_ms <= 0) {
    return Invalid("no_inversion_wait_ms",
                   absl::StrCat("must be > 0, got ", no_inversion_wait_ms));
  }
  if (!std::isfinite(promotion_hysteresis_factor) || !(promotion_hysteresis_factor >= 1.0)) {
    return Invalid("promotion_hysteresis_factor",
                   absl::StrCat("must be finite and >= 1.0, got ",
                                FormatDouble(promotion_hysteresis_factor)));
  }
  if (!std::isfinite(copy_score_inheritance) || copy_score_inheritance < 0 ||
      copy_score_inheritance > 1) {
    return Invalid("copy_score_inheritance",
                   absl::StrCat("must be finite and in [0, 1], got ",
                                FormatDouble(copy_score_inheritance)));
  }
  if (exchanges_per_second_max < 0 || exchanges_per_second_max > kExchangesPerSecondCap) {
    return Invalid("exchanges_per_second_max",
                   absl::StrCat("must be between 0 (unlimited) and ", kExchangesPerSecondCap,
                                ", got ", exchanges_per_second_max));
  }
  if (index_keys_max <= 0) {
    return Invalid("index_keys_max", absl::StrCat("must be > 0, got ", index_keys_max));
  }
  if (index_shards < 1 || index_shards > kIndexShardsMax) {
    return Invalid("index_shards", absl::StrCat("must be between 1 and ", kIndexShardsMax,
                                                ", got ", index_shards));
  }
  if (stores_in_flight_max <= 0) {
    return Invalid("stores_in_flight_max",
                   absl::StrCat("must be > 0, got ", stores_in_flight_max));
  }
  return absl::OkStatus();
}

const KnobRegistry<TieringKnobs>& TieringKnobs::Registry() {
  static const KnobRegistry<TieringKnobs>* const registry =
      new KnobRegistry<TieringKnobs>(BuildRegistry());
  return *registry;
}

TieringKnobs TieringKnobs::TestMin() {
  TieringKnobs k;
  k.block_bytes = 64 * kKiB;
  k.ram_head_bytes = 8 * kKiB;
  k.memory_bytes = 512 * kKiB;
  k.sub_memory_bytes = {512 * kKiB, 512 * kKiB};
  k.index_keys_max = 1024;
  k.index_shards = 4;
  k.stores_in_flight_max = 16;
  return k;
}

std::vector<RegionSpec> PlanRegions(const TieringKnobs& knobs) {
  std::vector<RegionSpec> plan;
  int next = 0;
  plan.push_back({next++, knobs.memory_bytes, true, PoolKind::kHead});
  for (uint64_t bytes : knobs.sub_memory_bytes) {
    plan.push_back({next++, bytes, false, PoolKind::kHead});
  }
  if (knobs.small_memory_bytes != 0) {
    plan.push_back({next++, knobs.small_memory_bytes, true, PoolKind::kSmall});
    for (uint64_t bytes : knobs.small_sub_memory_bytes) {
      plan.push_back({next++, bytes, false, PoolKind::kSmall});
    }
  }
  return plan;
}

std::vector<uint64_t> RegionSizes(const std::vector<RegionSpec>& plan) {
  std::vector<uint64_t> sizes;
  sizes.reserve(plan.size());
  for (const RegionSpec& r : plan) sizes.push_back(r.bytes);
  return sizes;
}

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view text) {
  absl::string_view t = absl::StripAsciiWhitespace(text);
  size_t digits = 0;
  while (digits < t.size() && absl::ascii_isdigit(static_cast<unsigned char>(t[digits]))) {
    ++digits;
  }
  uint64_t value = 0;
  if (digits == 0 || !absl::SimpleAtoi(t.substr(0, digits), &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected a byte size such as 2097152, 256K or 2M, got '", text, "'"));
  }
  std::string suffix = absl::AsciiStrToUpper(t.substr(digits));
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'T': shift = 40; break;
      default: shift = -1; break;
    }
    const absl::string_view rest = absl::string_view(suffix).substr(1);
    if (shift < 0 || !(rest.empty() || rest == "B" || rest == "IB")) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown size suffix in '", text, "' (use K, M, G or T)"));
    }
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) {
    return absl::InvalidArgumentError(absl::StrCat("byte size '", text, "' overflows"));
  }
  return value << shift;
}

absl::StatusOr<std::vector<uint64_t>> ParseByteSizeList(absl::string_view text) {
  std::vector<uint64_t> out;
  if (absl::StripAsciiWhitespace(text).empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    absl::StatusOr<uint64_t> bytes = ParseByteSize(part);
    if (!bytes.ok()) return bytes.status();
    out.push_back(*bytes);
  }
  return out;
}

}  // namespace heatsink
