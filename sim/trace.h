// File: sim/trace.h
//
// Reader (and writer) for Mooncake FAST'25 request traces (JSONL, one request per line):
//
//   {"timestamp": 27, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2]}
//
// `timestamp` is the arrival time in milliseconds from the start of the
// trace, `input_length`/`output_length` are token counts, and `hash_ids`
// name the request's prefix blocks (512 tokens each in the public traces):
// two requests with the same id at the same position share that prefix.
//
// Rules (each violation is an error naming the file, the line number and,
// for JSON problems, the column and JSON path):
// - each non-blank line is one JSON object (strict JSON, sim/json.h);
//   lines of only whitespace are skipped; a trailing '\r' is ignored;
// - the four fields above are required: integers >= 0, hash_ids an array
//   of integers >= 0; other fields are ignored, so traces that carry more
//   (for example session ids) still load;
// - timestamps never decrease: the public traces are sorted, and replay
//   generates work lazily in time order, which needs sorted input;
// - bounded: a line longer than line_bytes_max, more hash ids than
//   hash_ids_per_request_max, or more requests than requests_max is
//   RESOURCE_EXHAUSTED. `request_limit` instead stops reading early (not an
//   error) for replays of a trace prefix.
//
// Example:
//   TraceLimits limits;
//   limits.request_limit = 1000;
//   HS_ASSIGN_OR_RETURN(std::vector<TraceRequest> reqs, ReadTraceFile(path, limits));
#ifndef HEATSINK_SIM_TRACE_H_
#define HEATSINK_SIM_TRACE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace heatsink::sim {

struct TraceRequest {
  int64_t timestamp_ms = 0;
  int64_t input_length = 0;   // tokens
  int64_t output_length = 0;  // tokens
  std::vector<int64_t> hash_ids;
  int64_t line = 0;           // 1-based line in the trace file
};

struct TraceLimits {
  size_t line_bytes_max = size_t{1} << 20;
  size_t requests_max = 20'000'000;
  size_t hash_ids_per_request_max = size_t{1} << 16;
  std::optional<size_t> request_limit;  // read only the first N requests
};

// Parses one line (without its newline). `line_number` is used in messages.
// Lines of the public traces' plain shape take a direct reader; anything
// else goes through the strict JSON reader (see trace_internal below).
[[nodiscard]] absl::StatusOr<TraceRequest> ParseTraceLine(absl::string_view line,
                                                          absl::string_view source,
                                                          int64_t line_number,
                                                          const TraceLimits& limits = TraceLimits());

namespace trace_internal {
// The two readers ParseTraceLine combines (exposed for tests and the fuzzer).
// ParsePlainTraceLine reads only the shape the public traces have: one
// object whose keys are exactly the four fields (any order, no escapes),
// whose values are non-negative integer literals of at most 18 digits (an
// array of them for hash_ids), within the limits; it returns nullopt for
// anything else, never an error. ParseTraceLineJson is the full strict JSON
// reader with positioned messages. Where the plain reader answers, both
// give the same request.
std::optional<TraceRequest> ParsePlainTraceLine(absl::string_view line, int64_t line_number,
                                                const TraceLimits& limits);
[[nodiscard]] absl::StatusOr<TraceRequest> ParseTraceLineJson(absl::string_view line,
                                                              absl::string_view source,
                                                              int64_t line_number,
                                                              const TraceLimits& limits);
}  // namespace trace_internal

// Parses a whole JSONL text.
[[nodiscard]] absl::StatusOr<std::vector<TraceRequest>> ParseTrace(
    absl::string_view text, absl::string_view source, const TraceLimits& limits = TraceLimits());

// Writes one request as a trace line in the public traces' exact shape (no
// newline): keys in the order timestamp, input_length, output_length,
// hash_ids; integers only; one space after each ':' and ','. `line` is not
// written. ParseTraceLine reads the line back to the same request.
std::string FormatTraceLine(const TraceRequest& request);

// Appends every request as one line ending in '\n' (a JSONL text that
// ParseTrace reads back). It does not check the order of timestamps.
void AppendTraceJsonl(const std::vector<TraceRequest>& requests, std::string* out);

// Reads a JSONL file in bounded chunks (a huge line fails when it passes
// line_bytes_max, without being held whole). NOT_FOUND if it cannot be opened.
[[nodiscard]] absl::StatusOr<std::vector<TraceRequest>> ReadTraceFile(
    const std::string& path, const TraceLimits& limits = TraceLimits());

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_TRACE_H_
