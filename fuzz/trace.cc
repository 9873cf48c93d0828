// Fuzz target: Mooncake trace parsing (sim/trace.h).
//
// The input is a JSONL trace. ParseTrace either fails with INVALID_ARGUMENT
// or RESOURCE_EXHAUSTED naming the source and a line, or returns requests
// that obey every rule trace.h states: non-negative counts, timestamps that
// never decrease, ascending line numbers, hash ids within the limit, and at
// most request_limit requests. Each returned request parses the same again
// from its own line (ParseTraceLine), so the whole-text and per-line paths
// agree, and wherever the plain-shape line reader answers, the JSON reader
// gives the same request.
#include "sim/trace.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/base/check.h"

namespace heatsink::sim {
namespace {

constexpr absl::string_view kSource = "fuzz.jsonl";

// The lines of `text` as ParseTrace numbers them (1-based, split on '\n').
std::vector<absl::string_view> Lines(absl::string_view text) {
  return absl::StrSplit(text, '\n');
}

// Where the plain-shape reader answers a line, the JSON reader accepts it
// and gives the same request; a line the JSON reader refuses is never
// answered by the plain one.
void CheckReadersAgree(absl::string_view text, const TraceLimits& limits) {
  int64_t number = 0;
  for (absl::string_view line : Lines(text)) {
    ++number;
    const std::optional<TraceRequest> plain =
        trace_internal::ParsePlainTraceLine(line, number, limits);
    if (!plain.has_value()) continue;
    const absl::StatusOr<TraceRequest> json =
        trace_internal::ParseTraceLineJson(line, kSource, number, limits);
    HS_CHECK_MSG(json.ok(), json.status().ToString());
    HS_CHECK(plain->timestamp_ms == json->timestamp_ms &&
             plain->input_length == json->input_length &&
             plain->output_length == json->output_length && plain->hash_ids == json->hash_ids &&
             plain->line == json->line);
  }
}

void CheckTrace(absl::string_view text, const TraceLimits& limits) {
  CheckReadersAgree(text, limits);
  const absl::StatusOr<std::vector<TraceRequest>> parsed = ParseTrace(text, kSource, limits);
  if (!parsed.ok()) {
    const absl::StatusCode code = parsed.status().code();
    HS_CHECK_MSG(code == absl::StatusCode::kInvalidArgument ||
                     code == absl::StatusCode::kResourceExhausted,
                 parsed.status().ToString());
    HS_CHECK_MSG(absl::StartsWith(parsed.status().message(), absl::StrCat(kSource, ":")),
                 parsed.status().ToString());
    return;
  }
  const std::vector<TraceRequest>& requests = *parsed;
  HS_CHECK(requests.size() <= limits.requests_max);
  if (limits.request_limit.has_value()) HS_CHECK(requests.size() <= *limits.request_limit);
  const std::vector<absl::string_view> lines = Lines(text);
  for (size_t i = 0; i < requests.size(); ++i) {
    const TraceRequest& r = requests[i];
    HS_CHECK(r.timestamp_ms >= 0 && r.input_length >= 0 && r.output_length >= 0);
    HS_CHECK(r.hash_ids.size() <= limits.hash_ids_per_request_max);
    for (int64_t id : r.hash_ids) HS_CHECK(id >= 0);
    HS_CHECK(r.line >= 1 && static_cast<size_t>(r.line) <= lines.size());
    if (i > 0) {
      HS_CHECK(r.line > requests[i - 1].line);
      HS_CHECK_MSG(r.timestamp_ms >= requests[i - 1].timestamp_ms, "timestamps decrease");
    }
    absl::string_view line = lines[static_cast<size_t>(r.line - 1)];
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const absl::StatusOr<TraceRequest> again = ParseTraceLine(line, kSource, r.line, limits);
    HS_CHECK_MSG(again.ok(), again.status().ToString());
    HS_CHECK(again->timestamp_ms == r.timestamp_ms && again->input_length == r.input_length &&
             again->output_length == r.output_length && again->hash_ids == r.hash_ids &&
             again->line == r.line);
  }
}

}  // namespace
}  // namespace heatsink::sim

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  // Default limits, then tight ones so every limit is reachable by small inputs.
  heatsink::sim::CheckTrace(text, heatsink::sim::TraceLimits());
  heatsink::sim::TraceLimits tight;
  tight.line_bytes_max = 96;
  tight.requests_max = 6;
  tight.hash_ids_per_request_max = 4;
  heatsink::sim::CheckTrace(text, tight);
  tight.request_limit = 2;
  heatsink::sim::CheckTrace(text, tight);
  return 0;
}
