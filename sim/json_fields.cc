#include "sim/json_fields.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace heatsink::sim {
namespace {

using U128 = unsigned __int128;

bool IsIdentifier(absl::string_view key) {
  if (key.empty()) return false;
  if (!absl::ascii_isalpha(static_cast<unsigned char>(key[0])) && key[0] != '_') return false;
  return std::all_of(key.begin(), key.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

absl::Status TypeError(const JsonField& f, absl::string_view expected) {
  return f.Error(absl::StrCat("expected ", expected, ", got ", JsonKindName(f.value->kind())));
}

struct SizeUnit {
  absl::string_view name;
  int64_t bytes;
};

constexpr SizeUnit kSizeUnits[] = {
    {"B", 1},
    {"KB", 1'000},
    {"MB", 1'000'000},
    {"GB", 1'000'000'000},
    {"TB", 1'000'000'000'000},
    {"KiB", int64_t{1} << 10},
    {"MiB", int64_t{1} << 20},
    {"GiB", int64_t{1} << 30},
    {"TiB", int64_t{1} << 40},
};

// "12" or "1.5": digits with an optional fraction (no sign, no exponent).
bool IsPlainDecimal(absl::string_view s) {
  if (s.empty() || !absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) return false;
  size_t i = 0;
  while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) return true;
  if (s[i] != '.') return false;
  ++i;
  if (i == s.size()) return false;
  while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
  return i == s.size();
}

absl::Status RangeError(const JsonField& f, int64_t min, int64_t max, absl::string_view got) {
  if (max == kInt64Max) {
    return f.Error(absl::StrCat("must be at least ", min, ", got ", got));
  }
  return f.Error(absl::StrCat("must be in [", min, ", ", max, "], got ", got));
}

}  // namespace

std::string JsonChildPath(absl::string_view parent, absl::string_view key) {
  if (IsIdentifier(key)) return absl::StrCat(parent, ".", key);
  return absl::StrCat(parent, "[", Quote(key), "]");
}

std::string JsonIndexPath(absl::string_view parent, size_t index) {
  return absl::StrCat(parent, "[", index, "]");
}

absl::Status JsonSchemaError(absl::string_view source, JsonPos pos, absl::string_view path,
                             absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(FormatJsonPos(source, pos), path, ": ", message));
}

std::optional<int64_t> ScaleDecimal(absl::string_view literal, int64_t scale,
                                    DecimalRounding rounding, bool* inexact) {
  if (inexact != nullptr) *inexact = false;
  // 24 significant digits (< 2^80) times a scale up to 2^47 stays below
  // 2^127, so the arithmetic below cannot overflow.
  if (scale <= 0 || scale > (int64_t{1} << 47)) return std::nullopt;
  bool negative = false;
  if (!literal.empty() && literal[0] == '-') {
    negative = true;
    literal.remove_prefix(1);
  }
  // Split into significant digits and a power of ten.
  std::string digits;
  int64_t exp10 = 0;
  size_t i = 0;
  bool fraction = false;
  for (; i < literal.size(); ++i) {
    const char c = literal[i];
    if (c == '.') {
      fraction = true;
    } else if (absl::ascii_isdigit(static_cast<unsigned char>(c))) {
      digits.push_back(c);
      if (fraction) --exp10;
    } else {
      break;
    }
  }
  if (i < literal.size()) {
    if (literal[i] != 'e' && literal[i] != 'E') return std::nullopt;
    int64_t e = 0;
    absl::string_view rest = literal.substr(i + 1);
    bool e_negative = false;
    if (!rest.empty() && (rest[0] == '+' || rest[0] == '-')) {
      e_negative = rest[0] == '-';
      rest.remove_prefix(1);
    }
    if (rest.empty()) return std::nullopt;
    for (char c : rest) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      // Exponents beyond any int64 result are clamped; they overflow or
      // round to zero below either way.
      e = std::min<int64_t>(e * 10 + (c - '0'), 100'000);
    }
    exp10 += e_negative ? -e : e;
  }
  const size_t first = digits.find_first_not_of('0');
  if (first == std::string::npos) return 0;  // zero, whatever the exponent
  digits.erase(0, first);
  while (digits.back() == '0') {
    digits.pop_back();
    ++exp10;
  }
  if (digits.size() > 24) return std::nullopt;  // more precision than any use here needs
  U128 m = 0;
  for (char c : digits) m = m * 10 + static_cast<U128>(c - '0');
  const U128 limit = static_cast<U128>(kInt64Max) + (negative ? 1 : 0);
  m *= static_cast<U128>(scale);
  if (exp10 >= 0) {
    for (int64_t k = 0; k < exp10; ++k) {
      if (m > limit) return std::nullopt;
      m *= 10;
    }
  } else {
    const int64_t shift = -exp10;
    if (shift > 38) {
      // Divisor exceeds 10^38 > 2 m: the quotient is 0 and the remainder nonzero.
      if (inexact != nullptr) *inexact = true;
      if (rounding == DecimalRounding::kExact) return std::nullopt;
      return 0;
    }
    U128 divisor = 1;
    for (int64_t k = 0; k < shift; ++k) divisor *= 10;
    const U128 q = m / divisor;
    const U128 r = m % divisor;
    if (r != 0) {
      if (inexact != nullptr) *inexact = true;
      if (rounding == DecimalRounding::kExact) return std::nullopt;
    }
    m = (r != 0 && r >= divisor - r) ? q + 1 : q;  // nearest, ties away from zero
  }
  if (m > limit) return std::nullopt;
  if (negative) return static_cast<int64_t>(-static_cast<__int128>(m));
  return static_cast<int64_t>(m);
}

absl::StatusOr<std::string> ReadString(const JsonField& f) {
  if (!f.value->is_string()) return TypeError(f, "a string");
  return f.value->string_value();
}

absl::StatusOr<bool> ReadBool(const JsonField& f) {
  if (!f.value->is_bool()) return TypeError(f, "a boolean");
  return f.value->bool_value();
}

absl::StatusOr<int64_t> ReadInt(const JsonField& f, int64_t min, int64_t max) {
  if (!f.value->is_number()) return TypeError(f, "an integer");
  const std::string& text = f.value->number_text();
  if (!f.value->is_integer_literal()) {
    return f.Error(absl::StrCat("expected an integer, got ", text));
  }
  const std::optional<int64_t> v = f.value->int_value();
  if (!v.has_value() && max == kInt64Max && text[0] != '-') {
    // Above int64: "must be at least <min>" would point the wrong way.
    return f.Error(absl::StrCat("must be at most ", kInt64Max, ", got ", text));
  }
  if (!v.has_value() || *v < min || *v > max) return RangeError(f, min, max, text);
  return *v;
}

absl::StatusOr<double> ReadNumber(const JsonField& f, double min, double max) {
  if (!f.value->is_number()) return TypeError(f, "a number");
  const double v = f.value->double_value();
  if (v < min || v > max) {
    return f.Error(absl::StrCat("must be in [", min, ", ", max, "], got ",
                                f.value->number_text()));
  }
  return v;
}

absl::StatusOr<int64_t> ReadBytes(const JsonField& f, int64_t min, int64_t max) {
  if (f.value->is_number()) {
    if (!f.value->is_integer_literal()) {
      return f.Error(absl::StrCat("expected a whole number of bytes or a size string such as "
                                  "\"2MiB\", got ",
                                  f.value->number_text()));
    }
    return ReadInt(f, min, max);
  }
  if (!f.value->is_string()) {
    return TypeError(f, "a size (integer bytes or a string such as \"2MiB\")");
  }
  const std::string& text = f.value->string_value();
  absl::string_view s = text;
  const SizeUnit* unit = nullptr;
  // Longest unit name first so "KiB" is not read as "B".
  for (const SizeUnit& u : kSizeUnits) {
    if (absl::EndsWith(s, u.name) && (unit == nullptr || u.name.size() > unit->name.size())) {
      unit = &u;
    }
  }
  if (unit == nullptr) {
    return f.Error(absl::StrCat("size \"", text,
                                "\" needs a unit: B, KB, MB, GB, TB, KiB, MiB, GiB or TiB"));
  }
  s.remove_suffix(unit->name.size());
  absl::ConsumeSuffix(&s, " ");
  if (!IsPlainDecimal(s)) {
    return f.Error(absl::StrCat("malformed size \"", text,
                                "\": expected a non-negative decimal number and a unit, "
                                "such as \"1.5GiB\""));
  }
  bool inexact = false;
  const std::optional<int64_t> bytes =
      ScaleDecimal(s, unit->bytes, DecimalRounding::kExact, &inexact);
  if (!bytes.has_value()) {
    if (inexact) {
      return f.Error(absl::StrCat("size \"", text, "\" is not a whole number of bytes"));
    }
    return RangeError(f, min, max, absl::StrCat("\"", text, "\""));
  }
  if (*bytes < min || *bytes > max) {
    return RangeError(f, min, max, absl::StrCat("\"", text, "\" (", *bytes, " bytes)"));
  }
  return *bytes;
}

absl::StatusOr<DurationNs> ReadDuration(const JsonField& f, int64_t unit_ns, DurationNs min,
                                        DurationNs max) {
  if (!f.value->is_number()) return TypeError(f, "a number");
  const std::string& text = f.value->number_text();
  bool inexact = false;
  const std::optional<int64_t> ns = ScaleDecimal(text, unit_ns, DecimalRounding::kExact, &inexact);
  if (!ns.has_value()) {
    if (inexact) return f.Error(absl::StrCat(text, " is not a whole number of nanoseconds"));
    return f.Error(absl::StrCat(text, " is out of range"));
  }
  if (*ns < min || *ns > max) {
    const std::string got = absl::StrCat(text, " (", *ns, " ns)");
    if (max == kInt64Max) {
      return f.Error(absl::StrCat("must be at least ", min, " ns, got ", got));
    }
    return f.Error(absl::StrCat("must be in [", min, ", ", max, "] ns, got ", got));
  }
  return *ns;
}

absl::StatusOr<int64_t> ReadBandwidth(const JsonField& f) {
  if (!f.value->is_number()) return TypeError(f, "a number");
  const std::string& text = f.value->number_text();
  // 1 Gbps = 10^9 bits/s = 125,000,000 bytes/s.
  const std::optional<int64_t> bytes_per_s =
      ScaleDecimal(text, 125'000'000, DecimalRounding::kNearest);
  if (!bytes_per_s.has_value()) return f.Error(absl::StrCat(text, " Gbps is out of range"));
  if (*bytes_per_s < 1) {
    return f.Error(absl::StrCat("must be positive (at least 1 byte/s), got ", text, " Gbps"));
  }
  return *bytes_per_s;
}

absl::StatusOr<std::string> ReadEnum(const JsonField& f,
                                     std::initializer_list<absl::string_view> allowed) {
  if (!f.value->is_string()) return TypeError(f, "a string");
  const std::string& s = f.value->string_value();
  for (absl::string_view a : allowed) {
    if (s == a) return s;
  }
  return f.Error(absl::StrCat("unknown value \"", s, "\" (expected one of: ",
                              absl::StrJoin(allowed, ", "), ")"));
}

absl::StatusOr<std::string> ReadName(const JsonField& f) {
  if (!f.value->is_string()) return TypeError(f, "a string");
  const std::string& s = f.value->string_value();
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
           c == '.';
  });
  if (s.empty() || s.size() > 128 || !plain) {
    return f.Error(absl::StrCat("invalid name \"", s,
                                "\": use 1 to 128 characters of A-Z a-z 0-9 _ - ."));
  }
  return s;
}

absl::StatusOr<ObjectReader> ObjectReader::Make(absl::string_view source, const JsonValue& value,
                                                std::string path) {
  if (!value.is_object()) {
    return JsonSchemaError(source, value.pos(), path,
                           absl::StrCat("expected an object, got ", JsonKindName(value.kind())));
  }
  return ObjectReader(source, value, std::move(path));
}

const JsonValue* ObjectReader::Get(absl::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) {
    known_.emplace_back(key);
  }
  return value_->Find(key);
}

absl::StatusOr<std::optional<JsonField>> ObjectReader::Field(absl::string_view key, Need need) {
  const JsonValue* v = Get(key);
  if (v == nullptr) {
    if (need == Need::kRequired) {
      return JsonSchemaError(source_, value_->pos(), path_,
                             absl::StrCat("missing required field \"", key, "\""));
    }
    return std::optional<JsonField>();
  }
  return std::optional<JsonField>(JsonField{source_, v, JsonChildPath(path_, key)});
}

absl::Status ObjectReader::Error(absl::string_view message) const {
  return JsonSchemaError(source_, value_->pos(), path_, message);
}

absl::Status ObjectReader::ErrorAt(absl::string_view key, absl::string_view message) const {
  const JsonValue* v = value_->Find(key);
  if (v == nullptr) return Error(message);
  return JsonSchemaError(source_, v->pos(), JsonChildPath(path_, key), message);
}

// Each typed accessor: look the field up, convert it, store it when present.
#define HS_OBJECT_READER_FIELD(call)                                      \
  absl::StatusOr<std::optional<JsonField>> field_or = Field(key, need);   \
  if (!field_or.ok()) return field_or.status();                           \
  if (!field_or->has_value()) return absl::OkStatus();                    \
  const JsonField& f = **field_or;                                        \
  auto converted = (call);                                                \
  if (!converted.ok()) return converted.status();                         \
  *out = *std::move(converted);                                           \
  return absl::OkStatus()

absl::Status ObjectReader::String(absl::string_view key, std::string* out, Need need) {
  HS_OBJECT_READER_FIELD(ReadString(f));
}

absl::Status ObjectReader::Name(absl::string_view key, std::string* out, Need need) {
  HS_OBJECT_READER_FIELD(ReadName(f));
}

absl::Status ObjectReader::Bool(absl::string_view key, bool* out, Need need) {
  HS_OBJECT_READER_FIELD(ReadBool(f));
}

absl::Status ObjectReader::Int(absl::string_view key, int64_t* out, int64_t min, int64_t max,
                               Need need) {
  HS_OBJECT_READER_FIELD(ReadInt(f, min, max));
}

absl::Status ObjectReader::Number(absl::string_view key, double* out, double min, double max,
                                  Need need) {
  HS_OBJECT_READER_FIELD(ReadNumber(f, min, max));
}

absl::Status ObjectReader::Bytes(absl::string_view key, int64_t* out, int64_t min, int64_t max,
                                 Need need) {
  HS_OBJECT_READER_FIELD(ReadBytes(f, min, max));
}

absl::Status ObjectReader::Duration(absl::string_view key, DurationNs* out, int64_t unit_ns,
                                    DurationNs min, DurationNs max, Need need) {
  HS_OBJECT_READER_FIELD(ReadDuration(f, unit_ns, min, max));
}

absl::Status ObjectReader::Bandwidth(absl::string_view key, int64_t* out, Need need) {
  HS_OBJECT_READER_FIELD(ReadBandwidth(f));
}

absl::Status ObjectReader::Probability(absl::string_view key, double* out, Need need) {
  HS_OBJECT_READER_FIELD(ReadNumber(f, 0.0, 1.0));
}

absl::Status ObjectReader::Enum(absl::string_view key, std::string* out,
                                std::initializer_list<absl::string_view> allowed, Need need) {
  HS_OBJECT_READER_FIELD(ReadEnum(f, allowed));
}

#undef HS_OBJECT_READER_FIELD

absl::Status ObjectReader::Finish() const {
  for (const JsonMember& m : value_->members()) {
    if (std::find(known_.begin(), known_.end(), m.key) != known_.end()) continue;
    std::vector<std::string> sorted = known_;
    std::sort(sorted.begin(), sorted.end());
    return JsonSchemaError(source_, m.key_pos, JsonChildPath(path_, m.key),
                           absl::StrCat("unknown field \"", m.key, "\" (known fields: ",
                                        absl::StrJoin(sorted, ", "), ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<JsonField>> ReadArray(const JsonField& f, size_t elements_max) {
  if (!f.value->is_array()) return TypeError(f, "an array");
  const auto& elements = f.value->elements();
  if (elements.size() > elements_max) {
    return absl::ResourceExhaustedError(
        absl::StrCat(FormatJsonPos(f.source, f.value->pos()), f.path, ": ", elements.size(),
                     " elements, more than the limit of ", elements_max));
  }
  std::vector<JsonField> out;
  out.reserve(elements.size());
  for (size_t i = 0; i < elements.size(); ++i) {
    out.push_back(JsonField{f.source, &elements[i], JsonIndexPath(f.path, i)});
  }
  return out;
}

}  // namespace heatsink::sim
