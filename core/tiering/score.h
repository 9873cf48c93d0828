// File: core/tiering/score.h
//
// Atomic score arithmetic shared by every score owner (ADR-0019).
//
// A score is a double held in a std::atomic<double>. Relaxed operations are
// enough: increments, decay and ranking need defined concurrent semantics, not
// ordering; metadata and ownership changes are ordered by the tier lock.
// Increment and decay are compare/exchange loops, so no concurrent update is
// ever lost (std::atomic<double>::compare_exchange compares object
// representations, so the loops also work on the tag below).
//
// A canonical quiet NaN marks a field that owns no score: an index entry whose
// score lives in a dense slot (external ownership), or an empty dense slot. It
// is a tag compared bit for bit, never a value: scores are finite, so no
// arithmetic on a real score can produce it.
#ifndef HEATSINK_CORE_TIERING_SCORE_H_
#define HEATSINK_CORE_TIERING_SCORE_H_

#include <atomic>
#include <bit>
#include <cstdint>

namespace heatsink {

inline constexpr uint64_t kNoScoreBits = 0x7ff8000000000000ULL;

inline double NoScoreTag() { return std::bit_cast<double>(kNoScoreBits); }
inline bool IsNoScoreTag(double v) { return std::bit_cast<uint64_t>(v) == kNoScoreBits; }

// Adds `increment` to an owned score. Returns false (and changes nothing) if
// the field holds the tag, which callers treat as a broken ownership invariant.
inline bool AtomicAddScore(std::atomic<double>& score, double increment) {
  double current = score.load(std::memory_order_relaxed);
  do {
    if (IsNoScoreTag(current)) return false;
  } while (!score.compare_exchange_weak(current, current + increment, std::memory_order_relaxed,
                                        std::memory_order_relaxed));
  return true;
}

// Multiplies an owned score by `factor`; a tagged field is left alone.
inline void AtomicScaleScore(std::atomic<double>& score, double factor) {
  double current = score.load(std::memory_order_relaxed);
  do {
    if (IsNoScoreTag(current)) return;
  } while (!score.compare_exchange_weak(current, current * factor, std::memory_order_relaxed,
                                        std::memory_order_relaxed));
}

// Raises an owned score to at least `floor` (never lowers it). Returns false
// (and changes nothing) if the field holds the tag.
inline bool AtomicRaiseScore(std::atomic<double>& score, double floor) {
  double current = score.load(std::memory_order_relaxed);
  do {
    if (IsNoScoreTag(current)) return false;
    if (current >= floor) return true;
  } while (!score.compare_exchange_weak(current, floor, std::memory_order_relaxed,
                                        std::memory_order_relaxed));
  return true;
}

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_SCORE_H_
