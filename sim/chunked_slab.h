// File: sim/chunked_slab.h
//
// ChunkedSlab<T, kChunkBits>: an indexed slab of T kept in chunks of
// 2^kChunkBits elements that never move. A burst that grows a slab to a
// million records (events waiting, flows in flight, puts in flight) touches
// each chunk's memory once, instead of copying the whole slab into a buffer
// twice its size at every doubling and faulting in the new buffer's pages
// while the old one is still held; a reference to an element stays valid
// until the slab is cut below it or released.
//
// Elements are default-constructed a chunk at a time; the slab does not
// track which of them are in use (its owner keeps a free list).
//
// Example:
//   ChunkedSlab<Flow, 12> flows;
//   const uint32_t slot = static_cast<uint32_t>(flows.size());
//   flows.Grow();              // flows[slot] is a default Flow
//   flows[slot].bytes = 1024;
//   flows.CutTo(0);            // every chunk given back
#ifndef HEATSINK_SIM_CHUNKED_SLAB_H_
#define HEATSINK_SIM_CHUNKED_SLAB_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "core/base/check.h"

namespace heatsink::sim {

template <typename T, int kChunkBits>
class ChunkedSlab {
 public:
  static constexpr size_t kChunk = size_t{1} << kChunkBits;

  T& operator[](size_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const T& operator[](size_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }

  // Elements [0, size()) exist.
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Appends one element (default-constructed when its chunk was allocated,
  // or as CutTo left it) and returns it.
  T& Grow() {
    if (size_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<T[]>(kChunk));
    return (*this)[size_++];
  }

  // Keeps elements [0, n): the chunks wholly above n are freed; the
  // elements of the last chunk above n stay as they are, and Grow hands
  // them out again. REQUIRES: n <= size().
  void CutTo(size_t n) {
    HS_CHECK(n <= size_);
    size_ = n;
    chunks_.resize((n + kChunk - 1) / kChunk);
    chunks_.shrink_to_fit();
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_CHUNKED_SLAB_H_
