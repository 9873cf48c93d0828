// File: sim/json.h
//
// A small, strict JSON (RFC 8259) parser whose tree remembers where every
// value came from, so that schema errors can name `file:line:column` and the
// JSON path (nlohmann/json reports neither for values).
//
// Strictness: no comments, no trailing commas, no NaN/Infinity, no leading
// zeros, no control characters inside strings, strings must be valid UTF-8,
// and an object may not repeat a key (the second occurrence is the error).
// A UTF-8 byte order mark at the very start is skipped.
//
// Positions: `line` and `column` are 1-based; a column counts Unicode code
// points (UTF-8 continuation bytes do not advance it), so it matches what an
// editor shows for ASCII and non-ASCII text alike. A value's position is its
// first character; an object member's key has its own position.
//
// Bounds: input size, nesting depth, total number of values and string
// length are limited by JsonLimits; exceeding one returns RESOURCE_EXHAUSTED
// with the position where the limit was hit. Malformed input returns
// INVALID_ARGUMENT. Every message has the form
//   <source>:<line>:<column>: <what is wrong>
//
// Example:
//   HS_ASSIGN_OR_RETURN(JsonDocument doc, ParseJson(text, "scenario.json"));
//   const JsonValue& root = doc.root();
//   if (const JsonValue* seed = root.Find("seed")) { ... seed->pos().line ... }
//
// Thread safety: a parsed document is immutable and may be shared.
#ifndef HEATSINK_SIM_JSON_H_
#define HEATSINK_SIM_JSON_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace heatsink::sim {

struct JsonPos {
  int line = 1;    // 1-based
  int column = 1;  // 1-based, in code points
};

struct JsonLimits {
  // Whole-document size. Scenario files are hand-written; 16 MiB is generous.
  size_t input_bytes_max = size_t{16} << 20;
  // Arrays/objects nested deeper than this are rejected (also protects the
  // recursive descent from stack exhaustion on hostile input).
  int depth_max = 64;
  // Total values in the document (each array element, member value, scalar).
  size_t values_max = size_t{1} << 20;
  // Bytes of one decoded string (keys included).
  size_t string_bytes_max = size_t{1} << 20;
};

enum class JsonKind { kNull, kBool, kNumber, kString, kArray, kObject };

// "null", "boolean", "number", "string", "array", "object".
absl::string_view JsonKindName(JsonKind kind);

class JsonValue;

struct JsonMember {
  std::string key;
  JsonPos key_pos;
  std::unique_ptr<JsonValue> value;
};

// One node of the tree. Move-only (a tree owns its children).
class JsonValue {
 public:
  JsonValue() = default;
  JsonValue(const JsonValue&) = delete;
  JsonValue& operator=(const JsonValue&) = delete;
  JsonValue(JsonValue&&) = default;
  JsonValue& operator=(JsonValue&&) = default;

  JsonKind kind() const { return kind_; }
  JsonPos pos() const { return pos_; }
  bool is_null() const { return kind_ == JsonKind::kNull; }
  bool is_bool() const { return kind_ == JsonKind::kBool; }
  bool is_number() const { return kind_ == JsonKind::kNumber; }
  bool is_string() const { return kind_ == JsonKind::kString; }
  bool is_array() const { return kind_ == JsonKind::kArray; }
  bool is_object() const { return kind_ == JsonKind::kObject; }

  // REQUIRES: is_bool().
  bool bool_value() const;
  // REQUIRES: is_string(). Decoded UTF-8.
  const std::string& string_value() const;

  // Numbers keep their literal text so that callers can convert decimals
  // exactly (for example "1.5" microseconds to 1500 ns) instead of going
  // through binary floating point.
  // REQUIRES: is_number().
  const std::string& number_text() const;
  // True when the literal has no fraction and no exponent ("12", "-3").
  bool is_integer_literal() const;
  // The value as int64 when it is an integer literal that fits.
  std::optional<int64_t> int_value() const;
  // The nearest double (correctly rounded; finite, since the parser rejects
  // literals that overflow).
  double double_value() const;

  // REQUIRES: is_array().
  const std::vector<JsonValue>& elements() const;
  // REQUIRES: is_object(). Members in document order (keys are unique).
  const std::vector<JsonMember>& members() const;
  // The member named `key`, or nullptr. REQUIRES: is_object().
  const JsonValue* Find(absl::string_view key) const;

 private:
  friend class JsonParser;

  JsonKind kind_ = JsonKind::kNull;
  JsonPos pos_;
  bool bool_ = false;
  bool integer_literal_ = false;
  std::optional<int64_t> int_;
  double double_ = 0;
  std::string text_;  // string value, or number literal
  std::vector<JsonValue> elements_;  // by value: arrays of numbers are the bulk of traces
  std::vector<JsonMember> members_;
};

// A parsed document: the root value plus the name used in messages.
class JsonDocument {
 public:
  JsonDocument(std::string source, std::unique_ptr<JsonValue> root)
      : source_(std::move(source)), root_(std::move(root)) {}
  JsonDocument(JsonDocument&&) = default;
  JsonDocument& operator=(JsonDocument&&) = default;

  const std::string& source() const { return source_; }
  const JsonValue& root() const { return *root_; }

 private:
  std::string source_;
  std::unique_ptr<JsonValue> root_;
};

// Parses exactly one JSON value (surrounded by optional whitespace).
// `source` names the input in messages (usually the file path); positions
// count lines from `first_line` (for a JSON value embedded in a larger file,
// such as one line of a JSONL trace).
[[nodiscard]] absl::StatusOr<JsonDocument> ParseJson(absl::string_view text,
                                                     absl::string_view source,
                                                     const JsonLimits& limits = JsonLimits(),
                                                     int first_line = 1);

// "<source>:<line>:<column>: " — the prefix every positioned message uses.
std::string FormatJsonPos(absl::string_view source, JsonPos pos);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_JSON_H_
