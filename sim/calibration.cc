#include "sim/calibration.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/status_macros.h"
#include "nlohmann/json.hpp"

namespace heatsink::sim {
namespace {

using Json = nlohmann::json;

constexpr int kFormatVersion = 1;

absl::Status Invalid(const std::string& source, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

}  // namespace

absl::StatusOr<Calibration> DeriveCalibration(int64_t samples, int64_t small_bytes,
                                              int64_t large_bytes, int64_t rpc_round_trip_p50_ns,
                                              int64_t read_small_p50_ns,
                                              int64_t read_large_p50_ns) {
  if (samples < 1) return absl::InvalidArgumentError("calibration: no samples");
  if (small_bytes < 1 || large_bytes <= small_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("calibration: sizes must grow, got ",
                                                   small_bytes, " and ", large_bytes, " bytes"));
  }
  if (rpc_round_trip_p50_ns < 1 || read_small_p50_ns < 1 || read_large_p50_ns < 1) {
    return absl::InvalidArgumentError("calibration: a median is not positive");
  }
  if (read_large_p50_ns <= read_small_p50_ns) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration: the read of ", large_bytes, " bytes (", read_large_p50_ns,
                     " ns) is not slower than the read of ", small_bytes, " bytes (",
                     read_small_p50_ns, " ns); use a larger object"));
  }
  Calibration c;
  c.samples = samples;
  c.small_bytes = small_bytes;
  c.large_bytes = large_bytes;
  c.rpc_round_trip_p50_ns = rpc_round_trip_p50_ns;
  c.read_small_p50_ns = read_small_p50_ns;
  c.read_large_p50_ns = read_large_p50_ns;
  c.control_latency_ns = std::max<int64_t>(1, rpc_round_trip_p50_ns / 2);
  const __int128 bytes = large_bytes - small_bytes;
  const __int128 ns = read_large_p50_ns - read_small_p50_ns;
  c.link_bytes_per_s = static_cast<int64_t>(std::max<__int128>(1, bytes * 1'000'000'000 / ns));
  const int64_t small_transfer_ns =
      static_cast<int64_t>(static_cast<__int128>(small_bytes) * 1'000'000'000 / c.link_bytes_per_s);
  c.transfer_overhead_ns =
      std::max<int64_t>(0, read_small_p50_ns - rpc_round_trip_p50_ns - small_transfer_ns);
  return c;
}

std::string CalibrationJson(const Calibration& c) {
  Json j = Json::object();
  j["format_version"] = kFormatVersion;
  j["samples"] = c.samples;
  j["small_bytes"] = c.small_bytes;
  j["large_bytes"] = c.large_bytes;
  j["rpc_round_trip_p50_ns"] = c.rpc_round_trip_p50_ns;
  j["read_small_p50_ns"] = c.read_small_p50_ns;
  j["read_large_p50_ns"] = c.read_large_p50_ns;
  j["control_latency_ns"] = c.control_latency_ns;
  j["transfer_overhead_ns"] = c.transfer_overhead_ns;
  j["link_bytes_per_s"] = c.link_bytes_per_s;
  return j.dump(2) + "\n";
}

absl::StatusOr<Calibration> ParseCalibration(const std::string& text, const std::string& source) {
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    const size_t end = std::min<size_t>(e.byte, text.size());
    const int64_t line =
        1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
    return Invalid(absl::StrCat(source, ":", line), absl::StrCat("not JSON: ", e.what()));
  }
  if (!root.is_object()) return Invalid(source, "$: expected an object");
  auto field = [&](const char* name) -> absl::StatusOr<int64_t> {
    if (!root.contains(name)) return Invalid(source, absl::StrCat("$.", name, ": missing"));
    const Json& v = root[name];
    if (!v.is_number_integer()) {
      return Invalid(source, absl::StrCat("$.", name, ": expected an integer"));
    }
    return v.get<int64_t>();
  };
  HS_ASSIGN_OR_RETURN(const int64_t version, field("format_version"));
  if (version != kFormatVersion) {
    return Invalid(source, absl::StrCat("$.format_version: ", version, " is not ", kFormatVersion));
  }
  HS_ASSIGN_OR_RETURN(const int64_t samples, field("samples"));
  HS_ASSIGN_OR_RETURN(const int64_t small, field("small_bytes"));
  HS_ASSIGN_OR_RETURN(const int64_t large, field("large_bytes"));
  HS_ASSIGN_OR_RETURN(const int64_t rtt, field("rpc_round_trip_p50_ns"));
  HS_ASSIGN_OR_RETURN(const int64_t read_small, field("read_small_p50_ns"));
  HS_ASSIGN_OR_RETURN(const int64_t read_large, field("read_large_p50_ns"));
  absl::StatusOr<Calibration> c =
      DeriveCalibration(samples, small, large, rtt, read_small, read_large);
  if (!c.ok()) return Invalid(source, c.status().message());
  const std::pair<const char*, int64_t> derived[] = {
      {"control_latency_ns", c->control_latency_ns},
      {"transfer_overhead_ns", c->transfer_overhead_ns},
      {"link_bytes_per_s", c->link_bytes_per_s}};
  for (const auto& [name, value] : derived) {
    HS_ASSIGN_OR_RETURN(const int64_t in_file, field(name));
    if (in_file != value) {
      return Invalid(source, absl::StrCat("$.", name, ": ", in_file,
                                          " does not follow from the measurements (", value, ")"));
    }
  }
  return *c;
}

absl::StatusOr<Calibration> ReadCalibrationFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot be opened"));
  std::ostringstream s;
  s << in.rdbuf();
  return ParseCalibration(s.str(), path);
}

void ApplyCalibration(const Calibration& c, Scenario* scenario) {
  ScenarioNetwork& net = scenario->topology.network;
  net.control_same_host_latency_ns = c.control_latency_ns;
  net.control_same_domain_latency_ns = c.control_latency_ns;
  net.control_cross_domain_latency_ns = c.control_latency_ns;
  net.transfer_overhead_ns = c.transfer_overhead_ns;
  for (ScenarioDomain& d : scenario->topology.domains) {
    for (ScenarioHost& h : d.hosts) {
      h.nic_send_bytes_per_s = c.link_bytes_per_s;
      h.nic_receive_bytes_per_s = c.link_bytes_per_s;
      h.local_copy_bytes_per_s = c.link_bytes_per_s;
    }
  }
  for (ScenarioTrunk& t : scenario->topology.trunks) {
    t.bandwidth_bytes_per_s = c.link_bytes_per_s;
    t.latency_ns = 0;
    t.oversubscription_percent = 100;
  }
}

}  // namespace heatsink::sim
