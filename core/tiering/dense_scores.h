// File: core/tiering/dense_scores.h
//
// The dense score array of one head-pool region (ADR-0019): one
// std::atomic<double> per fixed-head slot, indexed directly by
// block * heads_per_block + head offset. No hash table. The storage is
// page-aligned and a whole number of pages (storage(), storage_bytes()), so
// the runtime can move exactly the array's pages onto the region's node
// (runtime/numa/promotion_service.h) and the per-node scan and decay touch
// only local pages.
//
// A slot either owns the score of the head resident there or holds the
// no-score tag (empty). Publish into an occupied slot and Extract from an
// empty one are rejected: a score has exactly one numeric owner.
//
// Thread safety: Add, Scale*, Load and Sum are relaxed atomic operations and
// may run concurrently with each other. Publish, Extract and SwapSlices change
// ownership; TierManager calls them only under its exclusive tier lock.
// Scans use scalar atomic loads; the array is never aliased as raw doubles.
#ifndef HEATSINK_CORE_TIERING_DENSE_SCORES_H_
#define HEATSINK_CORE_TIERING_DENSE_SCORES_H_

#include <atomic>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace heatsink {

inline constexpr uint64_t kDenseScorePageBytes = 4096;

class DenseScoreArray {
 public:
  // `slots` empty slots.
  explicit DenseScoreArray(uint64_t slots);
  DenseScoreArray(const DenseScoreArray&) = delete;
  DenseScoreArray& operator=(const DenseScoreArray&) = delete;

  uint64_t size() const { return size_; }
  // The slots' memory: kDenseScorePageBytes-aligned, a whole number of pages,
  // holding nothing else.
  const void* storage() const { return slots_.get(); }
  uint64_t storage_bytes() const { return storage_bytes_; }

  // Makes `slot` the owner of `score`. FAILED_PRECONDITION if the slot already
  // owns a score; OUT_OF_RANGE for a slot past the end; INVALID_ARGUMENT for a
  // non-finite score.
  [[nodiscard]] absl::Status Publish(uint64_t slot, double score);
  // Takes the score out of `slot`, leaving it empty. FAILED_PRECONDITION if
  // the slot is empty.
  [[nodiscard]] absl::StatusOr<double> Extract(uint64_t slot);

  bool occupied(uint64_t slot) const;
  // The slot's value (the tag when empty).
  double Load(uint64_t slot) const { return slots_[slot].load(std::memory_order_relaxed); }
  // Adds to an occupied slot; returns false if the slot is empty.
  bool Add(uint64_t slot, double increment);
  // Raises the slot's score to at least `floor`; false if it holds the tag.
  bool Raise(uint64_t slot, double floor);
  // score *= factor for every occupied slot in [begin, end).
  void Scale(uint64_t begin, uint64_t end, double factor);
  // Sum of [begin, end) in slot order. REQUIRES: every slot occupied.
  double Sum(uint64_t begin, uint64_t end) const;

  // Exchanges `count` slots of `a` starting at `a_begin` with those of `b`
  // starting at `b_begin` (ownership included). REQUIRES: exclusive tier lock.
  static void SwapSlices(DenseScoreArray& a, uint64_t a_begin, DenseScoreArray& b,
                         uint64_t b_begin, uint64_t count);

 private:
  struct PageDeleter {
    void operator()(std::atomic<double>* p) const;
  };
  uint64_t size_;
  uint64_t storage_bytes_;
  std::unique_ptr<std::atomic<double>[], PageDeleter> slots_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_TIERING_DENSE_SCORES_H_
