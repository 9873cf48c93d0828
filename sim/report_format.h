// File: sim/report_format.h
//
// Deterministic text building blocks shared by every simulator report
// (run, compare, estimate, sweep): fixed-point number formatting, CSV, plain
// text tables, HTML escaping, an ordered JSON writer, and file output.
//
// Determinism: every function here produces the same bytes for the same
// input in any process. Doubles are only ever printed with a fixed number of
// decimals (never "shortest round-trip" or locale-dependent forms), and
// integer quantities (nanoseconds, bytes, counts) are printed as integers or
// through exact integer arithmetic.
#ifndef HEATSINK_SIM_REPORT_FORMAT_H_
#define HEATSINK_SIM_REPORT_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "core/env/time.h"

namespace heatsink::sim {

// `value` with exactly `decimals` digits after the point ("%.*f" in the C
// locale). NaN prints as "nan", infinities as "inf" / "-inf"; callers that
// emit JSON or CSV map non-finite values to null / an empty cell first.
// REQUIRES: 0 <= decimals <= 12.
std::string FormatFixed(double value, int decimals);

// Nanoseconds as seconds / milliseconds with `decimals` digits, computed with
// integer arithmetic (truncated toward zero, so 1'999'999 ns is "1.999" ms
// with 3 decimals). REQUIRES: 0 <= decimals <= 9 (seconds), <= 6 (ms).
std::string FormatNsAsSeconds(TimeNs ns, int decimals);
std::string FormatNsAsMs(TimeNs ns, int decimals = 3);

// Bytes in binary units with two decimals: "512 B", "1.50 KiB", "3.25 GiB".
std::string FormatBytesIec(uint64_t bytes);

// The fields every reads.jsonl line starts with (docs/outputs.md), written
// the same way by the simulator and the replay:
// {"t_ns":T,"tenant":"..","key":"..","requester_domain":"..","client":
// (the caller appends the client's value, its own fields and the brace).
std::string ReadLineHead(int64_t t_ns, absl::string_view tenant, absl::string_view key,
                         absl::string_view requester_domain);

// Time column resolution: the fewest of 3, 6 or 9 decimals of a second that
// represent every given nanosecond timestamp exactly.
int SecondsDecimalsFor(const std::vector<TimeNs>& times_ns);

// RFC 4180 field: quoted (with inner quotes doubled) when it contains a
// comma, a double quote, CR or LF; otherwise unchanged.
std::string CsvEscape(absl::string_view field);

// Builds CSV text row by row (LF line ends, header first). Cells are escaped
// by AddRow. Every row must have as many cells as the header.
class CsvWriter {
 public:
  explicit CsvWriter(const std::vector<std::string>& header);
  CsvWriter(const CsvWriter&) = delete;
  CsvWriter& operator=(const CsvWriter&) = delete;

  // REQUIRES: cells.size() == column count.
  void AddRow(const std::vector<std::string>& cells);
  size_t rows() const { return rows_; }
  size_t columns() const { return columns_; }
  const std::string& text() const { return text_; }

 private:
  void AppendLine(const std::vector<std::string>& cells);

  size_t columns_;
  size_t rows_ = 0;
  std::string text_;
};

// A plain-text table for terminals: the first column left-aligned, the
// others right-aligned, columns separated by two spaces, a dashed rule under
// the header. Every row must have as many cells as the header.
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header);
  TextTable(const TextTable&) = delete;
  TextTable& operator=(const TextTable&) = delete;

  // REQUIRES: cells.size() == header size.
  void AddRow(std::vector<std::string> cells);
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;  // rows_[0] is the header
};

// Escapes &, <, >, " and ' for HTML text and attribute values.
std::string HtmlEscape(absl::string_view text);

// A JSON string literal (with the quotes): escapes ", \ and control
// characters; other bytes pass through (inputs are UTF-8 names from the
// scenario, which the scenario parser has already validated).
std::string JsonQuote(absl::string_view text);

// Streams pretty-printed JSON (two-space indent, one member or element per
// line) with keys in the order they are written. Integers print as integers,
// doubles with a fixed number of decimals (non-finite doubles as null).
//
// Example:
//   JsonWriter w;
//   w.BeginObject().Key("seed").Uint(42).Key("ratio").Double(1.5, 3).EndObject();
//   std::string text = w.Finish();   // {"seed": 42, "ratio": 1.500} over 4 lines
//
// Misuse (a value without a key inside an object, unbalanced Begin/End,
// Finish before the top-level value is complete) is a programmer error.
class JsonWriter {
 public:
  JsonWriter() = default;
  JsonWriter(const JsonWriter&) = delete;
  JsonWriter& operator=(const JsonWriter&) = delete;

  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(absl::string_view key);
  JsonWriter& String(absl::string_view value);
  JsonWriter& Int(int64_t value);
  JsonWriter& Uint(uint64_t value);
  JsonWriter& Double(double value, int decimals = 6);
  // Double(*value, decimals), or null when `value` is empty.
  JsonWriter& OptionalDouble(const std::optional<double>& value, int decimals = 6);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();
  // A complete, valid JSON value rendered elsewhere (possibly multi-line);
  // its continuation lines are indented to the current depth.
  JsonWriter& Raw(absl::string_view json_value);

  // The document with a trailing newline. REQUIRES: exactly one complete
  // top-level value was written.
  std::string Finish();

 private:
  struct Frame {
    bool is_object = false;
    int members = 0;
    bool key_pending = false;
  };
  void BeforeValue();
  void Indent(size_t depth);

  std::vector<Frame> stack_;
  std::string out_;
  bool done_ = false;
};

// Re-renders a JSON document through nlohmann::ordered_json (member order
// kept, two-space indent, invalid UTF-8 replaced) for embedding with
// JsonWriter::Raw. Returns INVALID_ARGUMENT when `text` is not JSON.
[[nodiscard]] absl::Status CanonicalJson(absl::string_view text, std::string* out);

// Creates `dir` and its parents when missing. Errors name the path: an
// existing non-directory is FAILED_PRECONDITION, otherwise the code follows
// errno (PERMISSION_DENIED, NOT_FOUND, ...).
[[nodiscard]] absl::Status EnsureDirectory(const std::string& dir);

// Writes `contents` to `path` (replacing it). Errors name the path; the code
// follows errno.
[[nodiscard]] absl::Status WriteTextFile(const std::string& path, absl::string_view contents);

// `dir` + "/" + `name` without doubling a trailing slash.
std::string JoinPath(absl::string_view dir, absl::string_view name);

}  // namespace heatsink::sim

#endif  // HEATSINK_SIM_REPORT_FORMAT_H_
