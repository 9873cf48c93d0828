// File: core/base/knobs.h
//
// A name registry for a knob struct, so that scenario JSON ("knobs": {...}),
// `--set name=value` and the runtime's flags all address the same field by the
// same name. Each component keeps one documented struct with defaults in the
// field initializers and a Validate(); the registry only maps names to fields.
//
// Example:
//   const KnobRegistry<MasterKnobs>& r = MasterKnobs::Registry();
//   MasterKnobs k;
//   HS_RETURN_IF_ERROR(r.Set(k, "eviction_ratio", "0.1"));
//   HS_RETURN_IF_ERROR(k.Validate());
//
// Thread safety: a registry is immutable after construction.
#ifndef HEATSINK_CORE_BASE_KNOBS_H_
#define HEATSINK_CORE_BASE_KNOBS_H_

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include "absl/strings/string_view.h"
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace heatsink {

// The JSON type a knob expects; scenario loaders check it before converting.
enum class KnobType { kInt, kDouble, kBool, kString };

template <typename Knobs>
class KnobRegistry {
 public:
  struct Entry {
    std::string name;
    std::string help;
    KnobType type;
    std::function<absl::Status(Knobs&, absl::string_view)> set;
    std::function<std::string(const Knobs&)> get;
  };

  // Registers a field reached through `access` (Knobs& -> Field&). Field is an
  // integer type, double, bool or std::string.
  template <typename Access>
  KnobRegistry& Field(std::string name, std::string help, Access access) {
    using F = std::remove_reference_t<decltype(access(std::declval<Knobs&>()))>;
    Entry e;
    e.name = name;
    e.help = std::move(help);
    if constexpr (std::is_same_v<F, bool>) {
      e.type = KnobType::kBool;
      e.set = [access, name](Knobs& k, absl::string_view v) -> absl::Status {
        if (v == "true" || v == "1") { access(k) = true; return absl::OkStatus(); }
        if (v == "false" || v == "0") { access(k) = false; return absl::OkStatus(); }
        return absl::InvalidArgumentError(
            absl::StrCat("knob ", name, ": expected true or false, got '", v, "'"));
      };
      e.get = [access](const Knobs& k) {
        return std::string(access(const_cast<Knobs&>(k)) ? "true" : "false");
      };
    } else if constexpr (std::is_integral_v<F>) {
      e.type = KnobType::kInt;
      e.set = [access, name](Knobs& k, absl::string_view v) -> absl::Status {
        int64_t x = 0;
        if (!absl::SimpleAtoi(v, &x)) {
          return absl::InvalidArgumentError(
              absl::StrCat("knob ", name, ": expected an integer, got '", v, "'"));
        }
        if (std::is_unsigned_v<F> && x < 0) {
          return absl::InvalidArgumentError(
              absl::StrCat("knob ", name, ": must not be negative, got ", x));
        }
        access(k) = static_cast<F>(x);
        return absl::OkStatus();
      };
      e.get = [access](const Knobs& k) { return absl::StrCat(access(const_cast<Knobs&>(k))); };
    } else if constexpr (std::is_floating_point_v<F>) {
      e.type = KnobType::kDouble;
      e.set = [access, name](Knobs& k, absl::string_view v) -> absl::Status {
        double x = 0;
        if (!absl::SimpleAtod(v, &x) || !std::isfinite(x)) {
          return absl::InvalidArgumentError(
              absl::StrCat("knob ", name, ": expected a finite number, got '", v, "'"));
        }
        access(k) = x;
        return absl::OkStatus();
      };
      // %.17g round-trips every double, so a dumped value reloads exactly.
      e.get = [access](const Knobs& k) {
        return absl::StrFormat("%.17g", access(const_cast<Knobs&>(k)));
      };
    } else {
      static_assert(std::is_same_v<F, std::string>, "unsupported knob field type");
      e.type = KnobType::kString;
      e.set = [access](Knobs& k, absl::string_view v) -> absl::Status {
        access(k) = std::string(v);
        return absl::OkStatus();
      };
      e.get = [access](const Knobs& k) { return access(const_cast<Knobs&>(k)); };
    }
    entries_.push_back(std::move(e));
    return *this;
  }

  // Registers a knob with its own parse/print (enums such as modes).
  KnobRegistry& Custom(std::string name, std::string help, KnobType type,
                       std::function<absl::Status(Knobs&, absl::string_view)> set,
                       std::function<std::string(const Knobs&)> get) {
    entries_.push_back(Entry{std::move(name), std::move(help), type, std::move(set),
                             std::move(get)});
    return *this;
  }

  // Sets knob `name` from its text form. NOT_FOUND for an unknown name (the
  // message lists nothing else so callers can add the JSON path or flag).
  [[nodiscard]] absl::Status Set(Knobs& knobs, absl::string_view name,
                                 absl::string_view value) const {
    const Entry* e = Find(name);
    if (e == nullptr) return absl::NotFoundError(absl::StrCat("unknown knob '", name, "'"));
    return e->set(knobs, value);
  }

  const Entry* Find(absl::string_view name) const {
    for (const Entry& e : entries_) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }

  // Entries in registration order (stable, used for dumps and --help).
  const std::vector<Entry>& entries() const { return entries_; }

  // name=value for every knob, in registration order.
  std::vector<std::pair<std::string, std::string>> Dump(const Knobs& knobs) const {
    std::vector<std::pair<std::string, std::string>> out;
    out.reserve(entries_.size());
    for (const Entry& e : entries_) out.emplace_back(e.name, e.get(knobs));
    return out;
  }

 private:
  std::vector<Entry> entries_;
};

}  // namespace heatsink

#endif  // HEATSINK_CORE_BASE_KNOBS_H_
