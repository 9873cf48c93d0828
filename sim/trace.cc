#include "sim/trace.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "sim/json.h"
#include "sim/json_fields.h"

namespace heatsink::sim {
namespace {

bool IsBlank(absl::string_view line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

// Feeds lines one at a time and keeps the cross-line rules (order, counts).
class TraceCollector {
 public:
  TraceCollector(absl::string_view source, const TraceLimits& limits)
      : source_(source), limits_(limits) {}

  // True once request_limit requests are in (the caller stops reading).
  bool done() const {
    return limits_.request_limit.has_value() && requests_.size() >= *limits_.request_limit;
  }

  absl::Status AddLine(absl::string_view line, int64_t line_number) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (IsBlank(line)) return absl::OkStatus();
    if (requests_.size() >= limits_.requests_max) {
      return absl::ResourceExhaustedError(absl::StrCat(source_, ":", line_number,
                                                       ": more than ", limits_.requests_max,
                                                       " requests in the trace"));
    }
    HS_ASSIGN_OR_RETURN(TraceRequest request,
                        ParseTraceLine(line, source_, line_number, limits_));
    if (!requests_.empty() && request.timestamp_ms < requests_.back().timestamp_ms) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_, ":", line_number, ": timestamp ", request.timestamp_ms,
          " is earlier than the previous request's ", requests_.back().timestamp_ms, " (line ",
          requests_.back().line, "); a trace must be sorted by timestamp"));
    }
    requests_.push_back(std::move(request));
    return absl::OkStatus();
  }

  std::vector<TraceRequest> Take() { return std::move(requests_); }

 private:
  absl::string_view source_;
  const TraceLimits& limits_;
  std::vector<TraceRequest> requests_;
};

absl::Status LineTooLong(absl::string_view source, int64_t line_number, size_t max) {
  return absl::ResourceExhaustedError(
      absl::StrCat(source, ":", line_number, ": line longer than ", max, " bytes"));
}

}  // namespace

namespace trace_internal {
namespace {

// A cursor over one line for the plain-shape reader: every helper returns
// false on anything outside that shape, never an error.
class PlainCursor {
 public:
  explicit PlainCursor(absl::string_view text) : text_(text) {}

  // JSON whitespace only (RFC 8259: space, tab, line feed, carriage return).
  void SkipSpace() {
    while (i_ < text_.size() &&
           (text_[i_] == ' ' || text_[i_] == '\t' || text_[i_] == '\n' || text_[i_] == '\r')) {
      ++i_;
    }
  }
  bool Eat(char c) {
    SkipSpace();
    if (i_ >= text_.size() || text_[i_] != c) return false;
    ++i_;
    return true;
  }
  bool AtEnd() {
    SkipSpace();
    return i_ == text_.size();
  }
  // A key without escapes: the bytes between the quotes.
  bool Key(absl::string_view* key) {
    if (!Eat('"')) return false;
    const size_t start = i_;
    while (i_ < text_.size() && text_[i_] != '"') {
      const unsigned char c = static_cast<unsigned char>(text_[i_]);
      if (c == '\\' || c < 0x20) return false;
      ++i_;
    }
    if (i_ == text_.size()) return false;
    *key = text_.substr(start, i_ - start);
    ++i_;
    return true;
  }
  // A non-negative integer literal of at most 18 digits (so it cannot
  // overflow), without a leading zero, fraction or exponent.
  bool Integer(int64_t* out) {
    SkipSpace();
    const size_t start = i_;
    int64_t v = 0;
    while (i_ < text_.size() && text_[i_] >= '0' && text_[i_] <= '9') {
      if (i_ - start == 18) return false;
      v = v * 10 + (text_[i_] - '0');
      ++i_;
    }
    const size_t digits = i_ - start;
    if (digits == 0 || (digits > 1 && text_[start] == '0')) return false;
    // A fraction, an exponent or anything glued on is not plain.
    if (i_ < text_.size() && (text_[i_] == '.' || text_[i_] == 'e' || text_[i_] == 'E')) {
      return false;
    }
    *out = v;
    return true;
  }

 private:
  absl::string_view text_;
  size_t i_ = 0;
};

}  // namespace

std::optional<TraceRequest> ParsePlainTraceLine(absl::string_view line, int64_t line_number,
                                                const TraceLimits& limits) {
  if (line.size() > limits.line_bytes_max) return std::nullopt;
  PlainCursor cur(line);
  if (!cur.Eat('{')) return std::nullopt;
  TraceRequest request;
  request.line = line_number;
  bool seen[4] = {false, false, false, false};  // timestamp, input, output, hash_ids
  do {
    absl::string_view key;
    if (!cur.Key(&key) || !cur.Eat(':')) return std::nullopt;
    int field = -1;
    int64_t* scalar = nullptr;
    if (key == "timestamp") {
      field = 0;
      scalar = &request.timestamp_ms;
    } else if (key == "input_length") {
      field = 1;
      scalar = &request.input_length;
    } else if (key == "output_length") {
      field = 2;
      scalar = &request.output_length;
    } else if (key == "hash_ids") {
      field = 3;
    } else {
      return std::nullopt;  // other fields: the JSON reader skips them
    }
    if (seen[field]) return std::nullopt;  // a duplicate key is an error there
    seen[field] = true;
    if (scalar != nullptr) {
      if (!cur.Integer(scalar)) return std::nullopt;
      continue;
    }
    if (!cur.Eat('[')) return std::nullopt;
    if (cur.Eat(']')) continue;
    do {
      int64_t id = 0;
      if (request.hash_ids.size() == limits.hash_ids_per_request_max || !cur.Integer(&id)) {
        return std::nullopt;
      }
      request.hash_ids.push_back(id);
    } while (cur.Eat(','));
    if (!cur.Eat(']')) return std::nullopt;
  } while (cur.Eat(','));
  if (!cur.Eat('}') || !cur.AtEnd()) return std::nullopt;
  if (!(seen[0] && seen[1] && seen[2] && seen[3])) return std::nullopt;
  if (request.timestamp_ms > kInt64Max / kNsPerMs) return std::nullopt;
  return request;
}

absl::StatusOr<TraceRequest> ParseTraceLineJson(absl::string_view line, absl::string_view source,
                                                int64_t line_number, const TraceLimits& limits) {
  if (line.size() > limits.line_bytes_max) {
    return LineTooLong(source, line_number, limits.line_bytes_max);
  }
  JsonLimits json_limits;
  json_limits.input_bytes_max = limits.line_bytes_max;
  json_limits.depth_max = 4;  // an object holding an array is all a request needs
  const int first_line = static_cast<int>(std::min<int64_t>(line_number, INT_MAX));
  HS_ASSIGN_OR_RETURN(JsonDocument doc, ParseJson(line, source, json_limits, first_line));
  const JsonValue& root = doc.root();
  if (!root.is_object()) {
    return JsonSchemaError(source, root.pos(), "$",
                           absl::StrCat("expected a request object, got ",
                                        JsonKindName(root.kind())));
  }
  TraceRequest request;
  request.line = line_number;
  const auto required = [&](absl::string_view key) -> absl::StatusOr<JsonField> {
    const JsonValue* v = root.Find(key);
    if (v == nullptr) {
      return JsonSchemaError(source, root.pos(), "$",
                             absl::StrCat("missing required field \"", key, "\""));
    }
    return JsonField{source, v, JsonChildPath("$", key)};
  };
  HS_ASSIGN_OR_RETURN(JsonField ts, required("timestamp"));
  HS_ASSIGN_OR_RETURN(request.timestamp_ms, ReadInt(ts, 0, kInt64Max / kNsPerMs));
  HS_ASSIGN_OR_RETURN(JsonField in, required("input_length"));
  HS_ASSIGN_OR_RETURN(request.input_length, ReadInt(in, 0, kInt64Max));
  HS_ASSIGN_OR_RETURN(JsonField out, required("output_length"));
  HS_ASSIGN_OR_RETURN(request.output_length, ReadInt(out, 0, kInt64Max));
  HS_ASSIGN_OR_RETURN(JsonField ids, required("hash_ids"));
  if (ids.value->is_array() &&
      ids.value->elements().size() <= limits.hash_ids_per_request_max) {
    // The common case without a path string per id; any bad id falls
    // through to the positioned readers below for its message.
    const std::vector<JsonValue>& elements = ids.value->elements();
    request.hash_ids.reserve(elements.size());
    for (const JsonValue& e : elements) {
      const std::optional<int64_t> id = e.is_number() ? e.int_value() : std::nullopt;
      if (!id.has_value() || *id < 0 || !e.is_integer_literal()) break;
      request.hash_ids.push_back(*id);
    }
    if (request.hash_ids.size() == elements.size()) return request;
    request.hash_ids.clear();
  }
  HS_ASSIGN_OR_RETURN(std::vector<JsonField> elements,
                      ReadArray(ids, limits.hash_ids_per_request_max));
  for (const JsonField& e : elements) {
    HS_ASSIGN_OR_RETURN(int64_t id, ReadInt(e, 0, kInt64Max));
    request.hash_ids.push_back(id);
  }
  return request;
}

}  // namespace trace_internal

absl::StatusOr<TraceRequest> ParseTraceLine(absl::string_view line, absl::string_view source,
                                            int64_t line_number, const TraceLimits& limits) {
  std::optional<TraceRequest> plain =
      trace_internal::ParsePlainTraceLine(line, line_number, limits);
  if (plain.has_value()) return *std::move(plain);
  return trace_internal::ParseTraceLineJson(line, source, line_number, limits);
}

absl::StatusOr<std::vector<TraceRequest>> ParseTrace(absl::string_view text,
                                                     absl::string_view source,
                                                     const TraceLimits& limits) {
  TraceCollector collector(source, limits);
  int64_t line_number = 0;
  while (!text.empty() && !collector.done()) {
    ++line_number;
    const size_t nl = text.find('\n');
    const absl::string_view line = text.substr(0, nl);
    HS_RETURN_IF_ERROR(collector.AddLine(line, line_number));
    if (nl == absl::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return collector.Take();
}

absl::StatusOr<std::vector<TraceRequest>> ReadTraceFile(const std::string& path,
                                                        const TraceLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open trace file"));
  TraceCollector collector(path, limits);
  std::string pending;  // the current, unfinished line
  std::string chunk(64 * 1024, '\0');
  int64_t line_number = 1;
  while (!collector.done()) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    const std::streamsize got = in.gcount();
    if (got <= 0) break;
    absl::string_view data(chunk.data(), static_cast<size_t>(got));
    while (!data.empty() && !collector.done()) {
      const size_t nl = data.find('\n');
      const absl::string_view piece = data.substr(0, nl);
      if (pending.size() + piece.size() > limits.line_bytes_max + 1) {  // +1: a '\r'
        return LineTooLong(path, line_number, limits.line_bytes_max);
      }
      if (nl == absl::string_view::npos) {
        pending.append(piece.data(), piece.size());
        break;
      }
      if (pending.empty()) {
        HS_RETURN_IF_ERROR(collector.AddLine(piece, line_number));
      } else {
        pending.append(piece.data(), piece.size());
        HS_RETURN_IF_ERROR(collector.AddLine(pending, line_number));
        pending.clear();
      }
      ++line_number;
      data.remove_prefix(nl + 1);
    }
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  if (!pending.empty() && !collector.done()) {
    HS_RETURN_IF_ERROR(collector.AddLine(pending, line_number));
  }
  return collector.Take();
}

std::string FormatTraceLine(const TraceRequest& request) {
  std::string line;
  line.reserve(72 + 8 * request.hash_ids.size());
  absl::StrAppend(&line, "{\"timestamp\": ", request.timestamp_ms,
                  ", \"input_length\": ", request.input_length,
                  ", \"output_length\": ", request.output_length, ", \"hash_ids\": [");
  for (size_t i = 0; i < request.hash_ids.size(); ++i) {
    absl::StrAppend(&line, i == 0 ? "" : ", ", request.hash_ids[i]);
  }
  line += "]}";
  return line;
}

void AppendTraceJsonl(const std::vector<TraceRequest>& requests, std::string* out) {
  for (const TraceRequest& r : requests) {
    out->append(FormatTraceLine(r));
    out->push_back('\n');
  }
}

}  // namespace heatsink::sim
