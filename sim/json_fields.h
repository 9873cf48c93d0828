// File: sim/json_fields.h
//
// Typed, positioned reads over a parsed JSON tree (sim/json.h), for schema
// loaders such as the scenario loader. Every error is INVALID_ARGUMENT with
// the value's position and JSON path:
//
//   scenario.json:12:7: $.topology.domains[1].hosts[0].nic_send_gbps: expected a number, got string
//
// Unit conventions (documented for users in docs/scenario-format.md):
// - Sizes: a non-negative integer of bytes, or a string "<decimal><unit>"
//   with unit B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB
//   (powers of 1024); one space before the unit is allowed. The result must
//   be a whole number of bytes ("1.5KiB" = 1536 is fine, "0.3B" is not).
// - Durations: a number in the unit that ends the field name (_ns, _us, _ms,
//   _s). Decimals are converted exactly from their literal text, and the
//   result must be a whole number of nanoseconds.
// - Bandwidths: a number of gigabits per second in a field ending in _gbps
//   (1 Gbps = 125,000,000 bytes/s), rounded to the nearest byte per second.
//
// Example:
//   HS_ASSIGN_OR_RETURN(ObjectReader host, ObjectReader::Make(source, value, path));
//   HS_RETURN_IF_ERROR(host.String("name", &spec.name, Need::kRequired));
//   HS_RETURN_IF_ERROR(host.Bandwidth("nic_send_gbps", &spec.nic_send_bytes_per_s));
//   HS_RETURN_IF_ERROR(host.Finish());  // rejects fields nobody asked for
#ifndef HEATSINK_SIM_JSON_FIELDS_H_
#define HEATSINK_SIM_JSON_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/env/time.h"
#include "sim/json.h"

namespace heatsink::sim {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// "$.a.b", "$.a[3]", `$["odd key"]`.
std::string JsonChildPath(absl::string_view parent, absl::string_view key);
std::string JsonIndexPath(absl::string_view parent, size_t index);

// "<source>:<line>:<column>: <path>: <message>" as INVALID_ARGUMENT.
absl::Status JsonSchemaError(absl::string_view source, JsonPos pos, absl::string_view path,
                             absl::string_view message);

// A value with the context needed to report errors about it.
struct JsonField {
  absl::string_view source;
  const JsonValue* value = nullptr;
  std::string path;

  absl::Status Error(absl::string_view message) const {
    return JsonSchemaError(source, value->pos(), path, message);
  }
};

enum class DecimalRounding { kExact, kNearest };

// literal x scale as an int64, computed exactly from the decimal text of a
// JSON number (or of the numeric part of a unit string). nullopt when the
// result does not fit in int64, when the literal has more than 24
// significant digits, when scale is outside [1, 2^47], or, with kExact, when
// the result is not a whole number; `*inexact` (optional) flags the last.
std::optional<int64_t> ScaleDecimal(absl::string_view literal, int64_t scale,
                                    DecimalRounding rounding, bool* inexact = nullptr);

// Value-level readers (for array elements and other values without a key).
[[nodiscard]] absl::StatusOr<std::string> ReadString(const JsonField& f);
[[nodiscard]] absl::StatusOr<bool> ReadBool(const JsonField& f);
[[nodiscard]] absl::StatusOr<int64_t> ReadInt(const JsonField& f, int64_t min, int64_t max);
[[nodiscard]] absl::StatusOr<double> ReadNumber(const JsonField& f, double min, double max);
[[nodiscard]] absl::StatusOr<int64_t> ReadBytes(const JsonField& f, int64_t min, int64_t max);
// A number in units of `unit_ns` nanoseconds, converted exactly.
[[nodiscard]] absl::StatusOr<DurationNs> ReadDuration(const JsonField& f, int64_t unit_ns,
                                                      DurationNs min, DurationNs max);
// Gigabits per second -> bytes per second (at least 1).
[[nodiscard]] absl::StatusOr<int64_t> ReadBandwidth(const JsonField& f);
// A string that must be one of `allowed`.
[[nodiscard]] absl::StatusOr<std::string> ReadEnum(const JsonField& f,
                                                   std::initializer_list<absl::string_view> allowed);
// A name: 1..128 characters of [A-Za-z0-9_.-] (names become keys, file and
// label parts, so they stay plain).
[[nodiscard]] absl::StatusOr<std::string> ReadName(const JsonField& f);

enum class Need { kOptional, kRequired };

// Reads the members of one JSON object by name, remembering which names were
// asked for, so that Finish() can reject every other member as unknown.
// Optional fields that are absent leave the output untouched (the caller's
// default stays). Not copyable; movable.
class ObjectReader {
 public:
  // INVALID_ARGUMENT when `value` is not an object.
  [[nodiscard]] static absl::StatusOr<ObjectReader> Make(absl::string_view source,
                                                         const JsonValue& value,
                                                         std::string path);

  ObjectReader(ObjectReader&&) = default;
  ObjectReader& operator=(ObjectReader&&) = default;
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;

  const std::string& path() const { return path_; }
  absl::string_view source() const { return source_; }
  const JsonValue& value() const { return *value_; }

  // Marks `key` as known; returns its value or nullptr when absent.
  const JsonValue* Get(absl::string_view key);
  // Marks `key` as known; the field (with its path) when present, nullopt
  // when absent; error when required and absent.
  [[nodiscard]] absl::StatusOr<std::optional<JsonField>> Field(absl::string_view key, Need need);
  bool Has(absl::string_view key) const { return value_->Find(key) != nullptr; }

  // An error positioned at this object (for cross-field rules).
  absl::Status Error(absl::string_view message) const;
  // An error positioned at member `key` (its value) when present, else at the object.
  absl::Status ErrorAt(absl::string_view key, absl::string_view message) const;

  [[nodiscard]] absl::Status String(absl::string_view key, std::string* out,
                                    Need need = Need::kOptional);
  [[nodiscard]] absl::Status Name(absl::string_view key, std::string* out,
                                  Need need = Need::kOptional);
  [[nodiscard]] absl::Status Bool(absl::string_view key, bool* out, Need need = Need::kOptional);
  [[nodiscard]] absl::Status Int(absl::string_view key, int64_t* out, int64_t min, int64_t max,
                                 Need need = Need::kOptional);
  [[nodiscard]] absl::Status Number(absl::string_view key, double* out, double min, double max,
                                    Need need = Need::kOptional);
  [[nodiscard]] absl::Status Bytes(absl::string_view key, int64_t* out, int64_t min = 0,
                                   int64_t max = kInt64Max, Need need = Need::kOptional);
  [[nodiscard]] absl::Status Duration(absl::string_view key, DurationNs* out, int64_t unit_ns,
                                      DurationNs min = 0, DurationNs max = kInt64Max,
                                      Need need = Need::kOptional);
  [[nodiscard]] absl::Status Bandwidth(absl::string_view key, int64_t* bytes_per_s,
                                       Need need = Need::kOptional);
  [[nodiscard]] absl::Status Probability(absl::string_view key, double* out,
                                         Need need = Need::kOptional);
  [[nodiscard]] absl::Status Enum(absl::string_view key, std::string* out,
                                  std::initializer_list<absl::string_view> allowed,
                                  Need need = Need::kOptional);

  // Rejects the first member (in document order) that no call asked for,
  // listing the fields this object accepts.
  [[nodiscard]] absl::Status Finish() const;

 private:
  ObjectReader(absl::string_view source, const JsonValue& value, std::string path)
      : source_(source), value_(&value), path_(std::move(path)) {}

  absl::string_view source_;
  const JsonValue* value_;
  std::string path_;
  std::vector<std::string> known_;
};

// The elements of an array field with their paths; error when `f` is not an
// array or has more than `elements_max` elements (RESOURCE_EXHAUSTED).
[[nodiscard]] absl::StatusOr<std::vector<JsonField>> ReadArray(const JsonField& f,
                                                               size_t elements_max);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_JSON_FIELDS_H_
