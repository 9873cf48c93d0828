#include "sim/json.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/base/check.h"

namespace heatsink::sim {

absl::string_view JsonKindName(JsonKind kind) {
  switch (kind) {
    case JsonKind::kNull: return "null";
    case JsonKind::kBool: return "boolean";
    case JsonKind::kNumber: return "number";
    case JsonKind::kString: return "string";
    case JsonKind::kArray: return "array";
    case JsonKind::kObject: return "object";
  }
  return "unknown";
}

std::string FormatJsonPos(absl::string_view source, JsonPos pos) {
  return absl::StrCat(source, ":", pos.line, ":", pos.column, ": ");
}

bool JsonValue::bool_value() const {
  HS_CHECK(kind_ == JsonKind::kBool);
  return bool_;
}

const std::string& JsonValue::string_value() const {
  HS_CHECK(kind_ == JsonKind::kString);
  return text_;
}

const std::string& JsonValue::number_text() const {
  HS_CHECK(kind_ == JsonKind::kNumber);
  return text_;
}

bool JsonValue::is_integer_literal() const {
  HS_CHECK(kind_ == JsonKind::kNumber);
  return integer_literal_;
}

std::optional<int64_t> JsonValue::int_value() const {
  HS_CHECK(kind_ == JsonKind::kNumber);
  return int_;
}

double JsonValue::double_value() const {
  HS_CHECK(kind_ == JsonKind::kNumber);
  return double_;
}

const std::vector<JsonValue>& JsonValue::elements() const {
  HS_CHECK(kind_ == JsonKind::kArray);
  return elements_;
}

const std::vector<JsonMember>& JsonValue::members() const {
  HS_CHECK(kind_ == JsonKind::kObject);
  return members_;
}

const JsonValue* JsonValue::Find(absl::string_view key) const {
  HS_CHECK(kind_ == JsonKind::kObject);
  for (const JsonMember& m : members_) {
    if (m.key == key) return m.value.get();
  }
  return nullptr;
}

// Recursive descent over the bytes, tracking line and column as it goes.
class JsonParser {
 public:
  static constexpr size_t kLinearKeyCheckMax = 16;

  JsonParser(absl::string_view text, absl::string_view source, const JsonLimits& limits,
             int first_line)
      : text_(text), source_(source), limits_(limits) {
    pos_.line = first_line;
  }

  absl::StatusOr<std::unique_ptr<JsonValue>> Parse() {
    if (text_.size() > limits_.input_bytes_max) {
      return absl::ResourceExhaustedError(absl::StrCat(
          FormatJsonPos(source_, pos_), "input is ", text_.size(),
          " bytes, more than the limit of ", limits_.input_bytes_max, " bytes"));
    }
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") i_ = 3;  // BOM: not a column
    SkipWhitespace();
    auto root = std::make_unique<JsonValue>();
    absl::Status st = ParseValue(*root, 0);
    if (!st.ok()) return st;
    SkipWhitespace();
    if (i_ < text_.size()) {
      return Error(absl::StrCat("unexpected ", Describe(), " after the end of the document"));
    }
    return root;
  }

 private:
  bool AtEnd() const { return i_ >= text_.size(); }
  char Peek() const { return text_[i_]; }

  void Advance() {
    const unsigned char c = static_cast<unsigned char>(text_[i_]);
    ++i_;
    if (c == '\n') {
      ++pos_.line;
      pos_.column = 1;
    } else if ((c & 0xC0) != 0x80) {
      ++pos_.column;
    }
  }

  void SkipWhitespace() {
    while (!AtEnd()) {
      const char c = Peek();
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      Advance();
    }
  }

  // What sits at the cursor, for messages.
  std::string Describe() const {
    if (AtEnd()) return "end of input";
    const unsigned char c = static_cast<unsigned char>(Peek());
    if (c >= 0x20 && c < 0x7F) return absl::StrFormat("'%c'", c);
    return absl::StrFormat("byte 0x%02X", c);
  }

  absl::Status Error(absl::string_view what) const { return ErrorAt(pos_, what); }
  absl::Status ErrorAt(JsonPos pos, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(FormatJsonPos(source_, pos), what));
  }
  absl::Status LimitError(JsonPos pos, absl::string_view what) const {
    return absl::ResourceExhaustedError(absl::StrCat(FormatJsonPos(source_, pos), what));
  }

  absl::Status CountValue() {
    if (++values_ > limits_.values_max) {
      return LimitError(pos_, absl::StrCat("more than ", limits_.values_max,
                                           " values in the document"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseValue(JsonValue& out, int depth) {
    if (absl::Status st = CountValue(); !st.ok()) return st;
    out.pos_ = pos_;
    if (AtEnd()) return Error("expected a value, got end of input");
    switch (Peek()) {
      case '{': return ParseObject(out, depth + 1);
      case '[': return ParseArray(out, depth + 1);
      case '"':
        out.kind_ = JsonKind::kString;
        return ParseString(out.text_);
      case 't': return ParseLiteral(out, "true", JsonKind::kBool, true);
      case 'f': return ParseLiteral(out, "false", JsonKind::kBool, false);
      case 'n': return ParseLiteral(out, "null", JsonKind::kNull, false);
      default:
        if (Peek() == '-' || (Peek() >= '0' && Peek() <= '9')) return ParseNumber(out);
        return Error(absl::StrCat("expected a value, got ", Describe()));
    }
  }

  absl::Status ParseLiteral(JsonValue& out, absl::string_view word, JsonKind kind, bool b) {
    if (text_.substr(i_, word.size()) != word) {
      return Error(absl::StrCat("expected a value, got ", Describe()));
    }
    for (size_t k = 0; k < word.size(); ++k) Advance();
    // "truex" or "nullnull" is one bad token, not a literal and garbage.
    if (!AtEnd() && ((Peek() >= 'a' && Peek() <= 'z') || (Peek() >= 'A' && Peek() <= 'Z') ||
                     (Peek() >= '0' && Peek() <= '9'))) {
      return ErrorAt(out.pos_, "invalid literal (expected true, false or null)");
    }
    out.kind_ = kind;
    out.bool_ = b;
    return absl::OkStatus();
  }

  absl::Status CheckDepth(int depth, JsonPos pos) const {
    if (depth > limits_.depth_max) {
      return LimitError(pos, absl::StrCat("nesting deeper than ", limits_.depth_max, " levels"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseArray(JsonValue& out, int depth) {
    if (absl::Status st = CheckDepth(depth, pos_); !st.ok()) return st;
    out.kind_ = JsonKind::kArray;
    Advance();  // '['
    SkipWhitespace();
    if (!AtEnd() && Peek() == ']') {
      Advance();
      return absl::OkStatus();
    }
    while (true) {
      out.elements_.emplace_back();
      if (absl::Status st = ParseValue(out.elements_.back(), depth); !st.ok()) return st;
      SkipWhitespace();
      if (AtEnd()) return Error("unterminated array: expected ',' or ']', got end of input");
      if (Peek() == ']') {
        Advance();
        return absl::OkStatus();
      }
      if (Peek() != ',') return Error(absl::StrCat("expected ',' or ']' in array, got ", Describe()));
      Advance();
      SkipWhitespace();
      if (!AtEnd() && Peek() == ']') return Error("trailing comma before ']'");
    }
  }

  absl::Status ParseObject(JsonValue& out, int depth) {
    if (absl::Status st = CheckDepth(depth, pos_); !st.ok()) return st;
    out.kind_ = JsonKind::kObject;
    Advance();  // '{'
    SkipWhitespace();
    if (!AtEnd() && Peek() == '}') {
      Advance();
      return absl::OkStatus();
    }
    // Small objects check duplicates by scanning; large ones keep a set so a
    // hostile document with many keys stays linear.
    absl::flat_hash_set<std::string> seen_keys;
    while (true) {
      if (AtEnd()) return Error("unterminated object: expected a key, got end of input");
      if (Peek() != '"') {
        return Error(absl::StrCat("expected a string key in object, got ", Describe()));
      }
      JsonMember member;
      member.key_pos = pos_;
      if (absl::Status st = ParseString(member.key); !st.ok()) return st;
      bool duplicate = false;
      if (out.members_.size() < kLinearKeyCheckMax) {
        duplicate = out.Find(member.key) != nullptr;
      } else {
        if (seen_keys.empty()) {
          for (const JsonMember& m : out.members_) seen_keys.insert(m.key);
        }
        duplicate = !seen_keys.insert(member.key).second;
      }
      if (duplicate) {
        return ErrorAt(member.key_pos, absl::StrCat("duplicate key \"", member.key, "\""));
      }
      SkipWhitespace();
      if (AtEnd() || Peek() != ':') {
        return Error(absl::StrCat("expected ':' after object key, got ", Describe()));
      }
      Advance();
      SkipWhitespace();
      member.value = std::make_unique<JsonValue>();
      if (absl::Status st = ParseValue(*member.value, depth); !st.ok()) return st;
      out.members_.push_back(std::move(member));
      SkipWhitespace();
      if (AtEnd()) return Error("unterminated object: expected ',' or '}', got end of input");
      if (Peek() == '}') {
        Advance();
        return absl::OkStatus();
      }
      if (Peek() != ',') {
        return Error(absl::StrCat("expected ',' or '}' in object, got ", Describe()));
      }
      Advance();
      SkipWhitespace();
      if (!AtEnd() && Peek() == '}') return Error("trailing comma before '}'");
    }
  }

  static void AppendUtf8(uint32_t cp, std::string& out) {
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // Four hex digits after "\u"; the cursor is on the first digit.
  absl::Status ParseHex4(uint32_t& cp) {
    cp = 0;
    for (int k = 0; k < 4; ++k) {
      if (AtEnd()) return Error("unterminated \\u escape");
      const char c = Peek();
      uint32_t digit = 0;
      if (c >= '0' && c <= '9') {
        digit = static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        digit = static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        digit = static_cast<uint32_t>(c - 'A' + 10);
      } else {
        return Error(absl::StrCat("invalid hex digit in \\u escape: ", Describe()));
      }
      cp = cp * 16 + digit;
      Advance();
    }
    return absl::OkStatus();
  }

  absl::Status ParseEscape(std::string& out) {
    const JsonPos escape_pos = pos_;
    Advance();  // '\\'
    if (AtEnd()) return Error("unterminated string");
    const char c = Peek();
    Advance();
    switch (c) {
      case '"': out.push_back('"'); return absl::OkStatus();
      case '\\': out.push_back('\\'); return absl::OkStatus();
      case '/': out.push_back('/'); return absl::OkStatus();
      case 'b': out.push_back('\b'); return absl::OkStatus();
      case 'f': out.push_back('\f'); return absl::OkStatus();
      case 'n': out.push_back('\n'); return absl::OkStatus();
      case 'r': out.push_back('\r'); return absl::OkStatus();
      case 't': out.push_back('\t'); return absl::OkStatus();
      case 'u': break;
      default: return ErrorAt(escape_pos, absl::StrFormat("invalid escape '\\%c'", c));
    }
    uint32_t cp = 0;
    if (absl::Status st = ParseHex4(cp); !st.ok()) return st;
    if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return ErrorAt(escape_pos, "lone low surrogate in \\u escape");
    }
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (text_.substr(i_, 2) != "\\u") {
        return ErrorAt(escape_pos, "high surrogate in \\u escape without a low surrogate");
      }
      Advance();
      Advance();
      uint32_t low = 0;
      if (absl::Status st = ParseHex4(low); !st.ok()) return st;
      if (low < 0xDC00 || low > 0xDFFF) {
        return ErrorAt(escape_pos, "high surrogate in \\u escape without a low surrogate");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    AppendUtf8(cp, out);
    return absl::OkStatus();
  }

  // Copies one raw UTF-8 sequence starting at the cursor, validating it
  // (no overlong forms, no surrogates, nothing above U+10FFFF).
  absl::Status CopyUtf8(std::string& out) {
    const unsigned char c0 = static_cast<unsigned char>(Peek());
    int extra = 0;
    uint32_t cp = 0;
    uint32_t min_cp = 0;
    if (c0 >= 0xC2 && c0 <= 0xDF) {
      extra = 1, cp = c0 & 0x1F, min_cp = 0x80;
    } else if (c0 >= 0xE0 && c0 <= 0xEF) {
      extra = 2, cp = c0 & 0x0F, min_cp = 0x800;
    } else if (c0 >= 0xF0 && c0 <= 0xF4) {
      extra = 3, cp = c0 & 0x07, min_cp = 0x10000;
    } else {
      return Error("invalid UTF-8 in string");
    }
    if (i_ + static_cast<size_t>(extra) >= text_.size()) {
      return Error("truncated UTF-8 sequence in string");
    }
    for (int k = 1; k <= extra; ++k) {
      const unsigned char ck = static_cast<unsigned char>(text_[i_ + static_cast<size_t>(k)]);
      if ((ck & 0xC0) != 0x80) return Error("invalid UTF-8 in string");
      cp = (cp << 6) | (ck & 0x3F);
    }
    if (cp < min_cp || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
      return Error("invalid UTF-8 in string");
    }
    for (int k = 0; k <= extra; ++k) {
      out.push_back(Peek());
      Advance();
    }
    return absl::OkStatus();
  }

  absl::Status ParseString(std::string& out) {
    const JsonPos start = pos_;
    Advance();  // opening quote
    while (true) {
      if (out.size() > limits_.string_bytes_max) {
        return LimitError(start, absl::StrCat("string longer than ", limits_.string_bytes_max,
                                              " bytes"));
      }
      if (AtEnd()) return ErrorAt(start, "unterminated string");
      const unsigned char c = static_cast<unsigned char>(Peek());
      if (c == '"') {
        Advance();
        return absl::OkStatus();
      }
      if (c == '\\') {
        if (absl::Status st = ParseEscape(out); !st.ok()) return st;
      } else if (c < 0x20) {
        return Error(absl::StrFormat("control character 0x%02X in string (escape it)", c));
      } else if (c < 0x80) {
        out.push_back(static_cast<char>(c));
        Advance();
      } else {
        if (absl::Status st = CopyUtf8(out); !st.ok()) return st;
      }
    }
  }

  bool IsDigit() const { return !AtEnd() && Peek() >= '0' && Peek() <= '9'; }

  absl::Status ParseNumber(JsonValue& out) {
    const size_t begin = i_;
    bool integer = true;
    if (Peek() == '-') Advance();
    if (!IsDigit()) return Error(absl::StrCat("expected a digit after '-', got ", Describe()));
    if (Peek() == '0') {
      Advance();
      if (IsDigit()) return Error("leading zeros are not allowed in numbers");
    } else {
      while (IsDigit()) Advance();
    }
    if (!AtEnd() && Peek() == '.') {
      integer = false;
      Advance();
      if (!IsDigit()) return Error(absl::StrCat("expected a digit after '.', got ", Describe()));
      while (IsDigit()) Advance();
    }
    if (!AtEnd() && (Peek() == 'e' || Peek() == 'E')) {
      integer = false;
      Advance();
      if (!AtEnd() && (Peek() == '+' || Peek() == '-')) Advance();
      if (!IsDigit()) {
        return Error(absl::StrCat("expected a digit in the exponent, got ", Describe()));
      }
      while (IsDigit()) Advance();
    }
    const absl::string_view literal = text_.substr(begin, i_ - begin);
    if (literal.size() > limits_.string_bytes_max) {
      return LimitError(out.pos_, "number literal too long");
    }
    out.kind_ = JsonKind::kNumber;
    out.text_ = std::string(literal);
    out.integer_literal_ = integer;
    if (integer) {
      int64_t v = 0;
      if (absl::SimpleAtoi(literal, &v)) {
        // int64 -> double rounds to nearest, exactly as parsing the text would.
        out.int_ = v;
        out.double_ = static_cast<double>(v);
        return absl::OkStatus();
      }
    }
    double d = 0;
    if (!absl::SimpleAtod(literal, &d) || !std::isfinite(d)) {
      return ErrorAt(out.pos_, absl::StrCat("number ", literal, " is out of range"));
    }
    out.double_ = d;
    return absl::OkStatus();
  }

  absl::string_view text_;
  absl::string_view source_;
  const JsonLimits& limits_;
  size_t i_ = 0;
  JsonPos pos_;
  size_t values_ = 0;
};

absl::StatusOr<JsonDocument> ParseJson(absl::string_view text, absl::string_view source,
                                       const JsonLimits& limits, int first_line) {
  JsonParser parser(text, source, limits, first_line);
  absl::StatusOr<std::unique_ptr<JsonValue>> root = parser.Parse();
  if (!root.ok()) return root.status();
  return JsonDocument(std::string(source), *std::move(root));
}

}  // namespace heatsink::sim
