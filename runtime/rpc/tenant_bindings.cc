#include "runtime/rpc/tenant_bindings.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace heatsink::runtime {

absl::Status TenantBindings::Bind(ClientId client, absl::string_view tenant) {
  if (!client.valid()) return absl::InvalidArgumentError("client id 0 cannot be bound");
  std::string normalised = NormalizeTenant(tenant);
  auto it = tenants_.find(client.value);
  if (it != tenants_.end()) {
    if (it->second == normalised) return absl::OkStatus();
    return absl::AlreadyExistsError(
        absl::StrCat("client ", client.value, " is already bound to tenant '", it->second, "'"));
  }
  if (tenants_.size() >= kTenantBindingsMax) {
    return absl::ResourceExhaustedError(
        absl::StrCat("at most ", kTenantBindingsMax, " tenant bindings"));
  }
  tenants_.emplace(client.value, std::move(normalised));
  return absl::OkStatus();
}

absl::Status TenantBindings::BindFromFlag(absl::string_view text) {
  const size_t eq = text.find('=');
  uint64_t id = 0;
  if (eq == absl::string_view::npos || !absl::SimpleAtoi(text.substr(0, eq), &id) || id == 0 ||
      eq + 1 == text.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected CLIENT_ID=TENANT with a non-zero id, got '", text, "'"));
  }
  return Bind(ClientId(id), text.substr(eq + 1));
}

absl::Status TenantBindings::Check(ClientId caller, absl::string_view tenant) const {
  if (!enabled()) return absl::OkStatus();
  auto it = tenants_.find(caller.value);
  if (it == tenants_.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat("client ", caller.value, " is bound to no tenant"));
  }
  if (it->second != NormalizeTenant(tenant)) {
    return absl::PermissionDeniedError(absl::StrCat("client ", caller.value, " of tenant '",
                                                    it->second, "' may not name tenant '",
                                                    NormalizeTenant(tenant), "'"));
  }
  return absl::OkStatus();
}

std::vector<std::string> TenantBindings::Tenants() const {
  std::vector<std::string> out;
  for (const auto& [client, tenant] : tenants_) out.push_back(tenant);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace heatsink::runtime
