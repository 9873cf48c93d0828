// Covers the positioned JSON parser (sim/json.h) and the typed field readers
// (sim/json_fields.h): values and their line:column, strictness (trailing
// commas, leading zeros, comments, bad escapes, invalid UTF-8, duplicate
// keys), limits (size, depth, value count), exact decimal scaling, sizes with
// units, durations, bandwidths, paths and unknown-field reporting.
#include "sim/json.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/json_fields.h"

namespace heatsink::sim {
namespace {

using ::testing::HasSubstr;

JsonDocument MustParse(absl::string_view text) {
  absl::StatusOr<JsonDocument> doc = ParseJson(text, "t.json");
  EXPECT_TRUE(doc.ok()) << doc.status();
  return *std::move(doc);
}

std::string ParseError(absl::string_view text, const JsonLimits& limits = JsonLimits()) {
  absl::StatusOr<JsonDocument> doc = ParseJson(text, "t.json", limits);
  EXPECT_FALSE(doc.ok()) << "parsed: " << text;
  return doc.ok() ? "" : std::string(doc.status().message());
}

TEST(Json, ParsesValuesWithPositions) {
  JsonDocument doc = MustParse("{\n  \"a\": [1, -2.5e3, true],\n  \"b\": {\"c\": null},\n"
                               "  \"d\": \"x\\u00e9\\ud83d\\ude00\"\n}");
  const JsonValue& root = doc.root();
  ASSERT_TRUE(root.is_object());
  EXPECT_EQ(root.pos().line, 1);
  EXPECT_EQ(root.pos().column, 1);
  const JsonValue* a = root.Find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->pos().line, 2);
  EXPECT_EQ(a->pos().column, 8);
  ASSERT_EQ(a->elements().size(), 3u);
  EXPECT_EQ(a->elements()[0].int_value(), 1);
  EXPECT_TRUE(a->elements()[0].is_integer_literal());
  EXPECT_FALSE(a->elements()[1].is_integer_literal());
  EXPECT_EQ(a->elements()[1].double_value(), -2500.0);
  EXPECT_EQ(a->elements()[1].number_text(), "-2.5e3");
  EXPECT_EQ(a->elements()[1].pos().column, 12);
  EXPECT_TRUE(a->elements()[2].bool_value());
  EXPECT_TRUE(root.Find("b")->Find("c")->is_null());
  EXPECT_EQ(root.Find("d")->string_value(), "x\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(root.members()[2].key_pos.line, 4);
  EXPECT_EQ(root.members()[2].key_pos.column, 3);
  EXPECT_EQ(root.Find("missing"), nullptr);
}

TEST(Json, ColumnsCountCodePoints) {
  // "é" is two bytes but one column, so the 1 sits at column 9.
  JsonDocument doc = MustParse("{\"\xC3\xA9\": 1, \"k\": 2}");
  EXPECT_EQ(doc.root().members()[0].value->pos().column, 7);
  EXPECT_EQ(doc.root().members()[1].key_pos.column, 10);
}

TEST(Json, MalformedInputNamesLineAndColumn) {
  EXPECT_EQ(ParseError("{\n  \"a\": 1,\n  \"b\" 2\n}"),
            "t.json:3:7: expected ':' after object key, got '2'");
  EXPECT_EQ(ParseError("[1, 2,]"), "t.json:1:7: trailing comma before ']'");
  EXPECT_EQ(ParseError("{\"a\": 1,}"), "t.json:1:9: trailing comma before '}'");
  EXPECT_EQ(ParseError("[01]"), "t.json:1:3: leading zeros are not allowed in numbers");
  EXPECT_EQ(ParseError("[1.]"), "t.json:1:4: expected a digit after '.', got ']'");
  EXPECT_EQ(ParseError("// c\n{}"), "t.json:1:1: expected a value, got '/'");
  EXPECT_EQ(ParseError("{\"a\": tru}"), "t.json:1:7: expected a value, got 't'");
  EXPECT_EQ(ParseError("[nullx]"), "t.json:1:2: invalid literal (expected true, false or null)");
  EXPECT_EQ(ParseError("\"abc"), "t.json:1:1: unterminated string");
  EXPECT_EQ(ParseError("\"a\\qb\""), "t.json:1:3: invalid escape '\\q'");
  EXPECT_EQ(ParseError("\"a\tb\""), "t.json:1:3: control character 0x09 in string (escape it)");
  EXPECT_EQ(ParseError("\"\\ud800x\""),
            "t.json:1:2: high surrogate in \\u escape without a low surrogate");
  EXPECT_EQ(ParseError("\"\xC0\xAF\""), "t.json:1:2: invalid UTF-8 in string");
  EXPECT_EQ(ParseError("{} {}"), "t.json:1:4: unexpected '{' after the end of the document");
  EXPECT_EQ(ParseError(""), "t.json:1:1: expected a value, got end of input");
  EXPECT_EQ(ParseError("[1e999]"), "t.json:1:2: number 1e999 is out of range");
  EXPECT_EQ(ParseError("{\"a\": [1, 2"),
            "t.json:1:12: unterminated array: expected ',' or ']', got end of input");
}

TEST(Json, RejectsDuplicateKeysAtTheSecondOccurrence) {
  EXPECT_EQ(ParseError("{\n  \"seed\": 1,\n  \"seed\": 2\n}"), "t.json:3:3: duplicate key \"seed\"");
  // Large objects use a set instead of scanning; same message.
  std::string big = "{";
  for (int i = 0; i < 40; ++i) big += "\"k" + std::to_string(i) + "\": 0, ";
  big += "\"k7\": 1}";
  EXPECT_THAT(ParseError(big), HasSubstr("duplicate key \"k7\""));
}

TEST(Json, EnforcesLimits) {
  JsonLimits limits;
  limits.depth_max = 3;
  EXPECT_TRUE(ParseJson("[[[1]]]", "t.json", limits).ok());
  absl::StatusOr<JsonDocument> deep = ParseJson("[[[[1]]]]", "t.json", limits);
  EXPECT_EQ(deep.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(deep.status().message(), "t.json:1:4: nesting deeper than 3 levels");

  limits = JsonLimits();
  limits.input_bytes_max = 4;
  absl::StatusOr<JsonDocument> big = ParseJson("[1, 2]", "t.json", limits);
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("more than the limit of 4 bytes"));

  limits = JsonLimits();
  limits.values_max = 3;
  absl::StatusOr<JsonDocument> many = ParseJson("[1, 2, 3]", "t.json", limits);
  EXPECT_EQ(many.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(many.status().message(), "t.json:1:8: more than 3 values in the document");

  // The default depth limit protects the recursion from hostile input.
  const std::string hostile(100000, '[');
  EXPECT_EQ(ParseJson(hostile, "t.json").status().code(), absl::StatusCode::kResourceExhausted);
}

TEST(Json, FirstLineOffsetsPositions) {
  absl::StatusOr<JsonDocument> doc = ParseJson("{\"a\" 1}", "trace.jsonl", JsonLimits(), 17);
  EXPECT_EQ(doc.status().message(), "trace.jsonl:17:6: expected ':' after object key, got '1'");
}

TEST(JsonFields, ScaleDecimalIsExact) {
  bool inexact = false;
  EXPECT_EQ(ScaleDecimal("1.5", 1000, DecimalRounding::kExact), 1500);
  EXPECT_EQ(ScaleDecimal("0.001", 1'000'000, DecimalRounding::kExact), 1000);
  EXPECT_EQ(ScaleDecimal("2.5e-3", 1'000'000'000, DecimalRounding::kExact), 2'500'000);
  EXPECT_EQ(ScaleDecimal("1e3", 1, DecimalRounding::kExact), 1000);
  EXPECT_EQ(ScaleDecimal("-3", 7, DecimalRounding::kExact), -21);
  EXPECT_EQ(ScaleDecimal("0.0000", 5, DecimalRounding::kExact), 0);
  EXPECT_EQ(ScaleDecimal("0.1", 1, DecimalRounding::kExact, &inexact), std::nullopt);
  EXPECT_TRUE(inexact);
  EXPECT_EQ(ScaleDecimal("0.5", 1, DecimalRounding::kNearest), 1);  // ties away from zero
  EXPECT_EQ(ScaleDecimal("0.49", 1, DecimalRounding::kNearest), 0);
  EXPECT_EQ(ScaleDecimal("12.5", 125'000'000, DecimalRounding::kNearest), 1'562'500'000);
  EXPECT_EQ(ScaleDecimal("9223372036854775807", 1, DecimalRounding::kExact), INT64_MAX);
  EXPECT_EQ(ScaleDecimal("9223372036854775808", 1, DecimalRounding::kExact, &inexact),
            std::nullopt);
  EXPECT_FALSE(inexact);
  EXPECT_EQ(ScaleDecimal("1e30", 1, DecimalRounding::kExact), std::nullopt);
  EXPECT_EQ(ScaleDecimal("1e-300", 1, DecimalRounding::kNearest), 0);
}

// A field over `json` at path "$.x" for the value-level readers.
struct Field {
  explicit Field(absl::string_view json) : doc(MustParse(json)) {}
  JsonField get() const { return JsonField{"t.json", &doc.root(), "$.x"}; }
  JsonDocument doc;
};

TEST(JsonFields, ReadsSizesWithUnits) {
  EXPECT_EQ(*ReadBytes(Field("4096").get(), 0, kInt64Max), 4096);
  EXPECT_EQ(*ReadBytes(Field("\"2MiB\"").get(), 0, kInt64Max), 2 << 20);
  EXPECT_EQ(*ReadBytes(Field("\"1.5KiB\"").get(), 0, kInt64Max), 1536);
  EXPECT_EQ(*ReadBytes(Field("\"3 GB\"").get(), 0, kInt64Max), 3'000'000'000);
  EXPECT_EQ(*ReadBytes(Field("\"7B\"").get(), 0, kInt64Max), 7);
  EXPECT_EQ(ReadBytes(Field("\"0.3B\"").get(), 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: size \"0.3B\" is not a whole number of bytes");
  EXPECT_EQ(ReadBytes(Field("\"2 MiBs\"").get(), 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: size \"2 MiBs\" needs a unit: B, KB, MB, GB, TB, KiB, MiB, GiB or TiB");
  EXPECT_EQ(ReadBytes(Field("\"-2MiB\"").get(), 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: malformed size \"-2MiB\": expected a non-negative decimal number "
            "and a unit, such as \"1.5GiB\"");
  EXPECT_EQ(ReadBytes(Field("-1").get(), 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: must be at least 0, got -1");
  EXPECT_EQ(ReadBytes(Field("1.5").get(), 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: expected a whole number of bytes or a size string such as "
            "\"2MiB\", got 1.5");
  EXPECT_EQ(ReadBytes(Field("true").get(), 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: expected a size (integer bytes or a string such as \"2MiB\"), "
            "got boolean");
}

TEST(JsonFields, ReadsDurationsAndBandwidths) {
  EXPECT_EQ(*ReadDuration(Field("1.5").get(), kNsPerUs, 0, kInt64Max), 1500);
  EXPECT_EQ(*ReadDuration(Field("2").get(), kNsPerSec, 0, kInt64Max), 2'000'000'000);
  EXPECT_EQ(ReadDuration(Field("0.0001").get(), kNsPerUs, 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: 0.0001 is not a whole number of nanoseconds");
  EXPECT_EQ(ReadDuration(Field("-1").get(), kNsPerMs, 0, kInt64Max).status().message(),
            "t.json:1:1: $.x: must be at least 0 ns, got -1 (-1000000 ns)");
  EXPECT_EQ(*ReadBandwidth(Field("100").get()), 12'500'000'000);
  EXPECT_EQ(*ReadBandwidth(Field("12.5").get()), 1'562'500'000);
  EXPECT_EQ(ReadBandwidth(Field("0").get()).status().message(),
            "t.json:1:1: $.x: must be positive (at least 1 byte/s), got 0 Gbps");
  EXPECT_EQ(ReadBandwidth(Field("\"100Gbps\"").get()).status().message(),
            "t.json:1:1: $.x: expected a number, got string");
}

TEST(JsonFields, PathsQuoteOddKeys) {
  EXPECT_EQ(JsonChildPath("$", "hosts"), "$.hosts");
  EXPECT_EQ(JsonIndexPath("$.hosts", 3), "$.hosts[3]");
  EXPECT_EQ(JsonChildPath("$.knobs", "a-b"), "$.knobs[\"a-b\"]");
  EXPECT_EQ(JsonChildPath("$", "q\"x"), "$[\"q\\\"x\"]");
}

TEST(JsonFields, ObjectReaderReportsMissingWrongAndUnknownFields) {
  JsonDocument doc = MustParse("{\n  \"name\": \"a\",\n  \"size\": \"big\",\n  \"extra\": 1\n}");
  absl::StatusOr<ObjectReader> r = ObjectReader::Make("t.json", doc.root(), "$.host");
  ASSERT_TRUE(r.ok());
  std::string name;
  ASSERT_TRUE(r->Name("name", &name, Need::kRequired).ok());
  EXPECT_EQ(name, "a");
  int64_t count = 7;
  ASSERT_TRUE(r->Int("count", &count, 1, 10).ok());
  EXPECT_EQ(count, 7);  // absent: default kept
  EXPECT_EQ(r->Int("id", &count, 0, 10, Need::kRequired).message(),
            "t.json:1:1: $.host: missing required field \"id\"");
  EXPECT_EQ(r->Int("size", &count, 0, 10).message(),
            "t.json:3:11: $.host.size: expected an integer, got string");
  EXPECT_EQ(r->Finish().message(),
            "t.json:4:3: $.host.extra: unknown field \"extra\" (known fields: count, id, name, "
            "size)");
  JsonDocument arr = MustParse("[1]");
  EXPECT_EQ(ObjectReader::Make("t.json", arr.root(), "$.host").status().message(),
            "t.json:1:1: $.host: expected an object, got array");
}

}  // namespace
}  // namespace heatsink::sim
