// File: sim/report_format.cc
#include "sim/report_format.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/base/check.h"
#include "core/replication/decision.h"
#include "nlohmann/json.hpp"

namespace heatsink::sim {
namespace {

// 10^k for 0 <= k <= 9.
int64_t Pow10(int k) {
  int64_t p = 1;
  for (int i = 0; i < k; ++i) p *= 10;
  return p;
}

// `value / unit` with `decimals` digits, truncated toward zero, exactly.
std::string FormatScaledInteger(int64_t value, int64_t unit, int unit_digits, int decimals) {
  HS_CHECK(decimals >= 0 && decimals <= unit_digits);
  const bool negative = value < 0;
  // Work in uint64 so INT64_MIN does not overflow on negation.
  const uint64_t magnitude =
      negative ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
  const uint64_t u = static_cast<uint64_t>(unit);
  const uint64_t whole = magnitude / u;
  std::string out = absl::StrCat(negative ? "-" : "", whole);
  if (decimals > 0) {
    const uint64_t frac =
        (magnitude % u) / static_cast<uint64_t>(Pow10(unit_digits - decimals));
    absl::StrAppend(&out, ".", absl::StrFormat("%0*d", decimals, frac));
  }
  return out;
}

}  // namespace

std::string FormatFixed(double value, int decimals) {
  HS_CHECK(decimals >= 0 && decimals <= 12);
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  std::string out = absl::StrFormat("%.*f", decimals, value);
  // "-0.000" and "0.000" must not differ by the sign of a rounded-away value.
  if (out[0] == '-' && out.find_first_not_of("-0.") == std::string::npos) out.erase(0, 1);
  return out;
}

std::string FormatNsAsSeconds(TimeNs ns, int decimals) {
  return FormatScaledInteger(ns, kNsPerSec, 9, decimals);
}

std::string FormatNsAsMs(TimeNs ns, int decimals) {
  return FormatScaledInteger(ns, kNsPerMs, 6, decimals);
}

std::string ReadLineHead(int64_t t_ns, absl::string_view tenant, absl::string_view key,
                         absl::string_view requester_domain) {
  std::string line = absl::StrCat("{\"t_ns\":", t_ns, ",\"tenant\":");
  AppendJsonString(&line, tenant);
  line += ",\"key\":";
  AppendJsonString(&line, key);
  line += ",\"requester_domain\":";
  AppendJsonString(&line, requester_domain);
  line += ",\"client\":";
  return line;
}

std::string FormatBytesIec(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  double scaled = static_cast<double>(bytes) / 1024.0;
  size_t unit = 0;
  while (scaled >= 1024.0 && unit + 1 < std::size(kUnits)) {
    scaled /= 1024.0;
    ++unit;
  }
  return absl::StrCat(FormatFixed(scaled, 2), " ", kUnits[unit]);
}

int SecondsDecimalsFor(const std::vector<TimeNs>& times_ns) {
  for (int decimals : {3, 6}) {
    const int64_t granule = Pow10(9 - decimals);
    const bool exact = std::all_of(times_ns.begin(), times_ns.end(),
                                   [granule](TimeNs t) { return t % granule == 0; });
    if (exact) return decimals;
  }
  return 9;
}

std::string CsvEscape(absl::string_view field) {
  if (field.find_first_of(",\"\r\n") == absl::string_view::npos) return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

CsvWriter::CsvWriter(const std::vector<std::string>& header) : columns_(header.size()) {
  HS_CHECK(!header.empty());
  AppendLine(header);
}

void CsvWriter::AddRow(const std::vector<std::string>& cells) {
  HS_CHECK_MSG(cells.size() == columns_,
               absl::StrCat("CSV row has ", cells.size(), " cells, header has ", columns_));
  AppendLine(cells);
  ++rows_;
}

void CsvWriter::AppendLine(const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) text_.push_back(',');
    text_ += CsvEscape(cells[i]);
  }
  text_.push_back('\n');
}

TextTable::TextTable(std::vector<std::string> header) {
  HS_CHECK(!header.empty());
  rows_.push_back(std::move(header));
}

void TextTable::AddRow(std::vector<std::string> cells) {
  HS_CHECK_MSG(cells.size() == rows_[0].size(),
               absl::StrCat("table row has ", cells.size(), " cells, header has ",
                            rows_[0].size()));
  rows_.push_back(std::move(cells));
}

std::string TextTable::Render() const {
  const size_t columns = rows_[0].size();
  std::vector<size_t> width(columns, 0);
  for (const auto& row : rows_) {
    for (size_t c = 0; c < columns; ++c) width[c] = std::max(width[c], row[c].size());
  }
  std::string out;
  auto append_row = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < columns; ++c) {
      const std::string pad(width[c] - row[c].size(), ' ');
      if (c > 0) line += "  ";
      line += c == 0 ? row[c] + pad : pad + row[c];
    }
    // Trailing blanks only come from the left-aligned first column.
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
  };
  append_row(rows_[0]);
  size_t rule = 0;
  for (size_t c = 0; c < columns; ++c) rule += width[c] + (c > 0 ? 2 : 0);
  absl::StrAppend(&out, std::string(rule, '-'), "\n");
  for (size_t r = 1; r < rows_.size(); ++r) append_row(rows_[r]);
  return out;
}

std::string HtmlEscape(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(c);
    }
  }
  return out;
}

std::string JsonQuote(absl::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (u < 0x20) {
          absl::StrAppend(&out, absl::StrFormat("\\u%04x", u));
        } else {
          out.push_back(c);
        }
    }
  }
  out.push_back('"');
  return out;
}

void JsonWriter::Indent(size_t depth) {
  out_.push_back('\n');
  out_.append(2 * depth, ' ');
}

void JsonWriter::BeforeValue() {
  HS_CHECK_MSG(!done_, "JsonWriter: a second top-level value");
  if (stack_.empty()) return;
  Frame& top = stack_.back();
  if (top.is_object) {
    HS_CHECK_MSG(top.key_pending, "JsonWriter: object member without a key");
    top.key_pending = false;
    return;
  }
  if (top.members++ > 0) out_.push_back(',');
  Indent(stack_.size());
}

JsonWriter& JsonWriter::BeginObject() {
  BeforeValue();
  out_.push_back('{');
  stack_.push_back(Frame{.is_object = true});
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  HS_CHECK(!stack_.empty() && stack_.back().is_object && !stack_.back().key_pending);
  const bool empty = stack_.back().members == 0;
  stack_.pop_back();
  if (!empty) Indent(stack_.size());
  out_.push_back('}');
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  BeforeValue();
  out_.push_back('[');
  stack_.push_back(Frame{.is_object = false});
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  HS_CHECK(!stack_.empty() && !stack_.back().is_object);
  const bool empty = stack_.back().members == 0;
  stack_.pop_back();
  if (!empty) Indent(stack_.size());
  out_.push_back(']');
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::Key(absl::string_view key) {
  HS_CHECK_MSG(!stack_.empty() && stack_.back().is_object && !stack_.back().key_pending,
               "JsonWriter: key outside an object or twice in a row");
  Frame& top = stack_.back();
  if (top.members++ > 0) out_.push_back(',');
  Indent(stack_.size());
  absl::StrAppend(&out_, JsonQuote(key), ": ");
  top.key_pending = true;
  return *this;
}

JsonWriter& JsonWriter::String(absl::string_view value) {
  BeforeValue();
  out_ += JsonQuote(value);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::Uint(uint64_t value) {
  BeforeValue();
  absl::StrAppend(&out_, value);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::Double(double value, int decimals) {
  if (!std::isfinite(value)) return Null();
  BeforeValue();
  out_ += FormatFixed(value, decimals);
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::OptionalDouble(const std::optional<double>& value, int decimals) {
  return value.has_value() ? Double(*value, decimals) : Null();
}

JsonWriter& JsonWriter::Bool(bool value) {
  BeforeValue();
  out_ += value ? "true" : "false";
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::Null() {
  BeforeValue();
  out_ += "null";
  if (stack_.empty()) done_ = true;
  return *this;
}

JsonWriter& JsonWriter::Raw(absl::string_view json_value) {
  BeforeValue();
  const std::string indent(2 * stack_.size(), ' ');
  bool first = true;
  for (absl::string_view line : absl::StrSplit(json_value, '\n')) {
    if (!first) absl::StrAppend(&out_, "\n", indent);
    out_.append(line.data(), line.size());
    first = false;
  }
  if (stack_.empty()) done_ = true;
  return *this;
}

std::string JsonWriter::Finish() {
  HS_CHECK_MSG(done_ && stack_.empty(), "JsonWriter: document incomplete");
  std::string out = std::move(out_);
  out.push_back('\n');
  out_.clear();
  done_ = false;
  return out;
}

absl::Status CanonicalJson(absl::string_view text, std::string* out) {
  const auto parsed = nlohmann::ordered_json::parse(text.begin(), text.end(), nullptr,
                                                    /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return absl::InvalidArgumentError("not valid JSON");
  }
  *out = parsed.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return absl::OkStatus();
}

absl::Status EnsureDirectory(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (!ec && fs::exists(st)) {
    if (fs::is_directory(st)) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create output directory '", dir, "': a file with that name exists"));
  }
  ec.clear();
  fs::create_directories(dir, ec);
  if (ec) {
    return absl::Status(absl::ErrnoToStatusCode(ec.value()),
                        absl::StrCat("cannot create output directory '", dir, "': ",
                                     ec.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteTextFile(const std::string& path, absl::string_view contents) {
  errno = 0;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    const int error = errno;
    return absl::Status(absl::ErrnoToStatusCode(error),
                        absl::StrCat("cannot open '", path, "' for writing: ",
                                     std::generic_category().message(error)));
  }
  const size_t written = std::fwrite(contents.data(), 1, contents.size(), file);
  const int write_error = errno;
  const bool close_failed = std::fclose(file) != 0;
  if (written != contents.size() || close_failed) {
    const int error = written != contents.size() ? write_error : errno;
    return absl::Status(error != 0 ? absl::ErrnoToStatusCode(error) : absl::StatusCode::kDataLoss,
                        absl::StrCat("cannot write '", path, "': ",
                                     std::generic_category().message(error)));
  }
  return absl::OkStatus();
}

std::string JoinPath(absl::string_view dir, absl::string_view name) {
  if (dir.empty()) return std::string(name);
  if (dir.back() == '/') return absl::StrCat(dir, name);
  return absl::StrCat(dir, "/", name);
}

}  // namespace heatsink::sim
