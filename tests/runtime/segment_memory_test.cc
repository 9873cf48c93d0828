// Covers SegmentMemory: creating segments (zero-filled, page-aligned), the
// limits (segments_max, sizes, duplicate and invalid ids), bounds-checked
// reads and writes (OUT_OF_RANGE, including offsets that would overflow),
// NOT_FOUND for unknown segments, that a removed segment's memory stays
// valid for a holder until the holder lets go, and when a segment's pages are
// backed by RAM (at create or on write, read off mincore).
#include "runtime/memory/segment_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace heatsink::runtime {
namespace {

TEST(SegmentMemory, CreateReadWrite) {
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(SegmentId(1), 1 << 16).ok());
  absl::StatusOr<std::shared_ptr<SegmentBuffer>> buffer = memory.Find(SegmentId(1));
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ((*buffer)->size_bytes(), 1u << 16);
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % 4096, 0u);
  absl::StatusOr<std::string> fresh = memory.Read(SegmentId(1), 0, 1 << 16);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(*fresh, std::string(1 << 16, '\0'));

  ASSERT_TRUE(memory.Write(SegmentId(1), 100, "hello").ok());
  EXPECT_EQ(*memory.Read(SegmentId(1), 100, 5), "hello");
  EXPECT_EQ(*memory.Read(SegmentId(1), 99, 7), std::string("\0hello\0", 7));
  ASSERT_TRUE(memory.Write(SegmentId(1), (1 << 16) - 3, "end").ok());
  uint8_t out[3];
  ASSERT_TRUE(memory.ReadInto(SegmentId(1), (1 << 16) - 3, absl::MakeSpan(out)).ok());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 3), "end");
}

TEST(SegmentMemory, BoundsAreChecked) {
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(SegmentId(1), 4096).ok());
  EXPECT_EQ(memory.Write(SegmentId(1), 4095, "ab").code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.Read(SegmentId(1), 4097, 0).status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.Read(SegmentId(1), 1, std::numeric_limits<uint64_t>::max()).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_EQ(memory.Region(SegmentId(1), std::numeric_limits<uint64_t>::max(), 2).status().code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(memory.Read(SegmentId(1), 4096, 0).ok());  // empty range at the end
  EXPECT_EQ(memory.Read(SegmentId(2), 0, 1).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(CheckSegmentRange(10, 5, 6).code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(CheckSegmentRange(10, 5, 5).ok());
}

TEST(SegmentMemory, LimitsAndIds) {
  AlignedSegmentAllocator allocator;
  SegmentMemoryKnobs knobs;
  knobs.segments_max = 2;
  knobs.segment_bytes_max = 1 << 20;
  SegmentMemory memory(&allocator, knobs);
  EXPECT_EQ(memory.Create(SegmentId(0), 4096).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(memory.Create(SegmentId(1), 0).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(memory.Create(SegmentId(1), (1 << 20) + 1).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(memory.Create(SegmentId(3), 4096).ok());
  EXPECT_EQ(memory.Create(SegmentId(3), 4096).code(), absl::StatusCode::kAlreadyExists);
  ASSERT_TRUE(memory.Create(SegmentId(1), 4096).ok());
  EXPECT_EQ(memory.Create(SegmentId(2), 4096).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(memory.ids(), (std::vector<SegmentId>{SegmentId(1), SegmentId(3)}));
  EXPECT_EQ(memory.Remove(SegmentId(2)).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(memory.Remove(SegmentId(1)).ok());
  EXPECT_TRUE(memory.Create(SegmentId(2), 4096).ok());
  EXPECT_EQ(memory.size(), 2u);
}

TEST(SegmentMemory, RemovedSegmentStaysValidForHolders) {
  AlignedSegmentAllocator allocator;
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  ASSERT_TRUE(memory.Create(SegmentId(5), 8192).ok());
  ASSERT_TRUE(memory.Write(SegmentId(5), 10, "kept").ok());
  absl::StatusOr<SegmentRegion> region = memory.Region(SegmentId(5), 10, 4);
  ASSERT_TRUE(region.ok());
  ASSERT_TRUE(memory.Remove(SegmentId(5)).ok());
  EXPECT_EQ(memory.Find(SegmentId(5)).status().code(), absl::StatusCode::kNotFound);
  // Still readable through the holder's reference (ASan would flag a free).
  EXPECT_EQ(std::string(reinterpret_cast<char*>(region->data), 4), "kept");
  EXPECT_EQ(region->buffer.use_count(), 1);
}

// Pages of [data, data + bytes) that are resident, by mincore.
int64_t ResidentPages(const uint8_t* data, uint64_t bytes) {
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((bytes + page - 1) / page);
  EXPECT_EQ(mincore(const_cast<uint8_t*>(data), bytes, in_core.data()), 0);
  int64_t n = 0;
  for (unsigned char c : in_core) n += c & 1;
  return n;
}

TEST(SegmentMemory, SegmentsCommittedAtCreateAreResidentFromTheStart) {
  AlignedSegmentAllocator allocator;
  constexpr uint64_t kBytes = uint64_t{8} << 20;
  absl::StatusOr<std::unique_ptr<SegmentBuffer>> buffer = allocator.Allocate(kBytes);
  ASSERT_TRUE(buffer.ok()) << buffer.status();
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(ResidentPages((*buffer)->data(), kBytes), static_cast<int64_t>(kBytes / page));
}

TEST(SegmentMemory, SegmentsCommittedOnWriteTakeRamOnlyWhereWritten) {
  AlignedSegmentAllocator allocator(4096, SegmentCommit::kOnWrite);
  SegmentMemory memory(&allocator, SegmentMemoryKnobs{});
  // Far more than this machine's memory: only address space until written.
  constexpr uint64_t kBytes = uint64_t{256} << 30;
  ASSERT_TRUE(memory.Create(SegmentId(1), kBytes).ok());
  absl::StatusOr<std::shared_ptr<SegmentBuffer>> buffer = memory.Find(SegmentId(1));
  ASSERT_TRUE(buffer.ok());
  const uint8_t* data = (*buffer)->data();
  constexpr uint64_t kWindow = uint64_t{4} << 20;  // the pages looked at, at the start
  EXPECT_EQ(ResidentPages(data, kWindow), 0);
  ASSERT_TRUE(memory.Write(SegmentId(1), 8192 + 5, "written").ok());
  EXPECT_EQ(ResidentPages(data, kWindow), 1);
  EXPECT_EQ(*memory.Read(SegmentId(1), 8192, 12), std::string("\0\0\0\0\0written", 12));
  // The last page reads as zero and is writable.
  ASSERT_TRUE(memory.Write(SegmentId(1), kBytes - 3, "end").ok());
  EXPECT_EQ(*memory.Read(SegmentId(1), kBytes - 4, 4), std::string("\0end", 4));
}

TEST(SegmentMemory, AlignmentsAbovePageSizeAreHonoured) {
  constexpr size_t kAlign = size_t{2} << 20;
  for (SegmentCommit commit : {SegmentCommit::kAtCreate, SegmentCommit::kOnWrite}) {
    AlignedSegmentAllocator allocator(kAlign, commit);
    absl::StatusOr<std::unique_ptr<SegmentBuffer>> buffer = allocator.Allocate(3 << 20);
    ASSERT_TRUE(buffer.ok());
    EXPECT_EQ(reinterpret_cast<uintptr_t>((*buffer)->data()) % kAlign, 0u);
    (*buffer)->data()[(3 << 20) - 1] = 7;  // the whole segment lies inside the mapping
  }
}

}  // namespace
}  // namespace heatsink::runtime
