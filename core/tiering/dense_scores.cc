#include "core/tiering/dense_scores.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "core/base/check.h"
#include "core/tiering/score.h"

namespace heatsink {

namespace {

uint64_t StorageBytesFor(uint64_t slots) {
  const uint64_t bytes = std::max<uint64_t>(slots, 1) * sizeof(std::atomic<double>);
  return (bytes + kDenseScorePageBytes - 1) / kDenseScorePageBytes * kDenseScorePageBytes;
}

std::atomic<double>* AllocateSlots(uint64_t storage_bytes) {
  void* raw = ::operator new (storage_bytes, std::align_val_t{kDenseScorePageBytes});
  auto* slots = static_cast<std::atomic<double>*>(raw);
  const uint64_t count = storage_bytes / sizeof(std::atomic<double>);
  for (uint64_t i = 0; i < count; ++i) new (&slots[i]) std::atomic<double>(NoScoreTag());
  return slots;
}

}  // namespace

void DenseScoreArray::PageDeleter::operator()(std::atomic<double>* p) const {
  static_assert(std::is_trivially_destructible_v<std::atomic<double>>, "no per-slot destructor");
  ::operator delete (static_cast<void*>(p), std::align_val_t{kDenseScorePageBytes});
}

DenseScoreArray::DenseScoreArray(uint64_t slots)
    : size_(slots), storage_bytes_(StorageBytesFor(slots)), slots_(AllocateSlots(storage_bytes_)) {}

absl::Status DenseScoreArray::Publish(uint64_t slot, double score) {
  if (slot >= size_) {
    return absl::OutOfRangeError(absl::StrCat("dense score slot ", slot, " past ", size_));
  }
  if (!std::isfinite(score)) {
    return absl::InvalidArgumentError(absl::StrCat("score for slot ", slot, " is not finite"));
  }
  double expected = NoScoreTag();
  if (!slots_[slot].compare_exchange_strong(expected, score, std::memory_order_relaxed)) {
    return absl::FailedPreconditionError(
        absl::StrCat("dense score slot ", slot, " already owns a score"));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> DenseScoreArray::Extract(uint64_t slot) {
  if (slot >= size_) {
    return absl::OutOfRangeError(absl::StrCat("dense score slot ", slot, " past ", size_));
  }
  const double old = slots_[slot].exchange(NoScoreTag(), std::memory_order_relaxed);
  if (IsNoScoreTag(old)) {
    return absl::FailedPreconditionError(
        absl::StrCat("dense score slot ", slot, " owns no score"));
  }
  return old;
}

bool DenseScoreArray::occupied(uint64_t slot) const {
  HS_CHECK(slot < size_);
  return !IsNoScoreTag(slots_[slot].load(std::memory_order_relaxed));
}

bool DenseScoreArray::Add(uint64_t slot, double increment) {
  HS_CHECK(slot < size_);
  return AtomicAddScore(slots_[slot], increment);
}

bool DenseScoreArray::Raise(uint64_t slot, double floor) {
  HS_CHECK(slot < size_);
  return AtomicRaiseScore(slots_[slot], floor);
}

void DenseScoreArray::Scale(uint64_t begin, uint64_t end, double factor) {
  HS_CHECK(begin <= end && end <= size_);
  for (uint64_t i = begin; i < end; ++i) AtomicScaleScore(slots_[i], factor);
}

double DenseScoreArray::Sum(uint64_t begin, uint64_t end) const {
  HS_CHECK(begin <= end && end <= size_);
  double sum = 0;
  for (uint64_t i = begin; i < end; ++i) sum += slots_[i].load(std::memory_order_relaxed);
  return sum;
}

void DenseScoreArray::SwapSlices(DenseScoreArray& a, uint64_t a_begin, DenseScoreArray& b,
                                 uint64_t b_begin, uint64_t count) {
  HS_CHECK(a_begin + count <= a.size_ && b_begin + count <= b.size_);
  HS_CHECK(&a != &b || a_begin + count <= b_begin || b_begin + count <= a_begin);
  for (uint64_t i = 0; i < count; ++i) {
    const double x = a.slots_[a_begin + i].load(std::memory_order_relaxed);
    const double y = b.slots_[b_begin + i].load(std::memory_order_relaxed);
    a.slots_[a_begin + i].store(y, std::memory_order_relaxed);
    b.slots_[b_begin + i].store(x, std::memory_order_relaxed);
  }
}

}  // namespace heatsink
