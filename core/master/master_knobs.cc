#include "core/master/master_knobs.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace heatsink {

absl::string_view AllocationStrategyName(AllocationStrategy s) {
  switch (s) {
    case AllocationStrategy::kRandom:
      return "random";
    case AllocationStrategy::kFreeRatioFirst:
      return "free_ratio_first";
  }
  return "unknown";
}

std::optional<AllocationStrategy> ParseAllocationStrategy(absl::string_view word) {
  if (word == "random") return AllocationStrategy::kRandom;
  if (word == "free_ratio_first") return AllocationStrategy::kFreeRatioFirst;
  return std::nullopt;
}

namespace {

absl::Status CheckPositive(absl::string_view name, int64_t v) {
  if (v >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("knob ", name, " must be >= 1, got ", v));
}

absl::Status CheckRatio(absl::string_view name, double v) {
  // (0, 1]: a zero ratio would never evict; above 1 is meaningless.
  if (v > 0.0 && v <= 1.0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("knob ", name, " must be in (0, 1], got ", v));
}

}  // namespace

absl::Status MasterKnobs::Validate() const {
  struct Positive {
    absl::string_view name;
    int64_t value;
  };
  const Positive positives[] = {
      {"client_live_ttl_sec", client_live_ttl_sec},
      {"put_start_discard_timeout_sec", put_start_discard_timeout_sec},
      {"put_start_release_timeout_sec", put_start_release_timeout_sec},
      {"default_kv_lease_ttl_ms", default_kv_lease_ttl_ms},
      {"pending_task_timeout_sec", pending_task_timeout_sec},
      {"processing_task_timeout_sec", processing_task_timeout_sec},
      {"sweep_interval_ms", sweep_interval_ms},
      {"metadata_shards", metadata_shards},
      {"objects_max", objects_max},
      {"segments_max", segments_max},
      {"segments_per_client_max", segments_per_client_max},
      {"clients_max", clients_max},
      {"key_bytes_max", key_bytes_max},
      {"tenant_bytes_max", tenant_bytes_max},
      {"name_bytes_max", name_bytes_max},
      {"batch_keys_max", batch_keys_max},
      {"replicas_per_object_max", replicas_per_object_max},
      {"preferred_segments_max", preferred_segments_max},
      {"tasks_max", tasks_max},
      {"pending_tasks_per_client_max", pending_tasks_per_client_max},
      {"processing_tasks_per_client_max", processing_tasks_per_client_max},
      {"fetch_tasks_batch_max", fetch_tasks_batch_max},
      {"discarded_puts_max", discarded_puts_max},
      {"manifest_changes_per_fetch_max", manifest_changes_per_fetch_max},
      {"manifest_entries_per_report_max", manifest_entries_per_report_max},
      {"copy_budget_per_source_bytes", copy_budget_per_source_bytes},
      {"copy_budget_per_trunk_bytes", copy_budget_per_trunk_bytes},
  };
  for (const Positive& p : positives) {
    if (absl::Status s = CheckPositive(p.name, p.value); !s.ok()) return s;
  }
  if (absl::Status s = CheckRatio("eviction_high_watermark_ratio", eviction_high_watermark_ratio);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckRatio("eviction_ratio", eviction_ratio); !s.ok()) return s;
  // A discarded put must keep its bytes at least until it is discarded, or a
  // writer still inside the discard window could write into reused memory.
  if (put_start_release_timeout_sec < put_start_discard_timeout_sec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knob put_start_release_timeout_sec (", put_start_release_timeout_sec,
        ") must be >= put_start_discard_timeout_sec (", put_start_discard_timeout_sec, ")"));
  }
  if (metadata_shards > 4'096) {
    return absl::InvalidArgumentError(
        absl::StrCat("knob metadata_shards must be <= 4096, got ", metadata_shards));
  }
  // Timeouts in ns must not overflow int64 when added to a clock reading.
  constexpr int64_t kSecondsMax = int64_t{1} << 32;
  const Positive seconds[] = {
      {"client_live_ttl_sec", client_live_ttl_sec},
      {"put_start_discard_timeout_sec", put_start_discard_timeout_sec},
      {"put_start_release_timeout_sec", put_start_release_timeout_sec},
      {"pending_task_timeout_sec", pending_task_timeout_sec},
      {"processing_task_timeout_sec", processing_task_timeout_sec},
      {"default_kv_lease_ttl_ms / 1000", default_kv_lease_ttl_ms / 1000},
      {"sweep_interval_ms / 1000", sweep_interval_ms / 1000},
      {"restart_grace_ms / 1000", restart_grace_ms / 1000},
  };
  for (const Positive& p : seconds) {
    if (p.value > kSecondsMax) {
      return absl::InvalidArgumentError(
          absl::StrCat("knob ", p.name, " must be <= ", kSecondsMax, " seconds, got ", p.value));
    }
  }
  if (restart_grace_ms < 0 || restart_expected_stores < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knobs restart_grace_ms and restart_expected_stores must be >= 0, got ", restart_grace_ms,
        " and ", restart_expected_stores));
  }
  if (fetch_tasks_batch_max > processing_tasks_per_client_max) {
    return absl::InvalidArgumentError(absl::StrCat(
        "knob fetch_tasks_batch_max (", fetch_tasks_batch_max,
        ") must be <= processing_tasks_per_client_max (", processing_tasks_per_client_max, ")"));
  }
  return absl::OkStatus();
}

const KnobRegistry<MasterKnobs>& MasterKnobs::Registry() {
  static const KnobRegistry<MasterKnobs>* const registry = [] {
    auto* r = new KnobRegistry<MasterKnobs>();
    using K = MasterKnobs;
    r->Field("client_live_ttl_sec", "seconds without a heartbeat before a client is dead",
             [](K& k) -> int64_t& { return k.client_live_ttl_sec; })
        .Field("put_start_discard_timeout_sec",
               "seconds after PutStart before an unfinished put is discarded",
               [](K& k) -> int64_t& { return k.put_start_discard_timeout_sec; })
        .Field("put_start_release_timeout_sec",
               "seconds after PutStart before a discarded put's bytes are freed",
               [](K& k) -> int64_t& { return k.put_start_release_timeout_sec; })
        .Field("default_kv_lease_ttl_ms", "read lease granted by GetReplicaList, milliseconds",
               [](K& k) -> int64_t& { return k.default_kv_lease_ttl_ms; })
        .Field("default_kv_lease_ttl", "Mooncake name of default_kv_lease_ttl_ms (milliseconds)",
               [](K& k) -> int64_t& { return k.default_kv_lease_ttl_ms; })
        .Field("eviction_high_watermark_ratio", "used/capacity above which eviction runs",
               [](K& k) -> double& { return k.eviction_high_watermark_ratio; })
        .Field("eviction_ratio", "fraction of used bytes one eviction pass frees",
               [](K& k) -> double& { return k.eviction_ratio; })
        .Custom(
            "allocation_strategy", "random | free_ratio_first", KnobType::kString,
            [](K& k, absl::string_view v) -> absl::Status {
              std::optional<AllocationStrategy> s = ParseAllocationStrategy(v);
              if (!s.has_value()) {
                return absl::InvalidArgumentError(absl::StrCat(
                    "knob allocation_strategy: expected random or free_ratio_first, got '", v,
                    "'"));
              }
              k.allocation_strategy = *s;
              return absl::OkStatus();
            },
            [](const K& k) { return std::string(AllocationStrategyName(k.allocation_strategy)); })
        .Field("pending_task_timeout_sec", "seconds a task may wait to be fetched",
               [](K& k) -> int64_t& { return k.pending_task_timeout_sec; })
        .Field("processing_task_timeout_sec", "seconds a fetched task may run",
               [](K& k) -> int64_t& { return k.processing_task_timeout_sec; })
        .Field("copy_task_timeout_sec", "alias of processing_task_timeout_sec",
               [](K& k) -> int64_t& { return k.processing_task_timeout_sec; })
        .Field("copy_budget_per_source_bytes",
               "copy bytes in flight from one source host (an object larger goes alone)",
               [](K& k) -> int64_t& { return k.copy_budget_per_source_bytes; })
        .Field("copy_budget_per_trunk_bytes",
               "copy bytes in flight from one domain to another (an object larger goes alone)",
               [](K& k) -> int64_t& { return k.copy_budget_per_trunk_bytes; })
        .Field("sweep_interval_ms", "period of the master's background sweep",
               [](K& k) -> int64_t& { return k.sweep_interval_ms; })
        .Field("metadata_shards", "independently locked object metadata shards",
               [](K& k) -> int64_t& { return k.metadata_shards; })
        .Field("objects_max", "objects in the master",
               [](K& k) -> int64_t& { return k.objects_max; })
        .Field("segments_max", "mounted segments", [](K& k) -> int64_t& { return k.segments_max; })
        .Field("segments_per_client_max", "segments one client may mount",
               [](K& k) -> int64_t& { return k.segments_per_client_max; })
        .Field("clients_max", "registered clients", [](K& k) -> int64_t& { return k.clients_max; })
        .Field("key_bytes_max", "longest key (INVALID_ARGUMENT beyond)",
               [](K& k) -> int64_t& { return k.key_bytes_max; })
        .Field("tenant_bytes_max", "longest tenant (INVALID_ARGUMENT beyond)",
               [](K& k) -> int64_t& { return k.tenant_bytes_max; })
        .Field("name_bytes_max", "longest segment name, host, domain or endpoint",
               [](K& k) -> int64_t& { return k.name_bytes_max; })
        .Field("batch_keys_max",
               "keys in one batch call (BatchGetReplicaList, BatchPutStart/End/Revoke)",
               [](K& k) -> int64_t& { return k.batch_keys_max; })
        .Field("replicas_per_object_max", "replicas of one object",
               [](K& k) -> int64_t& { return k.replicas_per_object_max; })
        .Field("preferred_segments_max", "preferred segments in one PutStart",
               [](K& k) -> int64_t& { return k.preferred_segments_max; })
        .Field("tasks_max", "tasks of all clients together",
               [](K& k) -> int64_t& { return k.tasks_max; })
        .Field("pending_tasks_per_client_max", "queued tasks per client",
               [](K& k) -> int64_t& { return k.pending_tasks_per_client_max; })
        .Field("processing_tasks_per_client_max", "fetched, unfinished tasks per client",
               [](K& k) -> int64_t& { return k.processing_tasks_per_client_max; })
        .Field("fetch_tasks_batch_max", "tasks returned by one FetchTasks",
               [](K& k) -> int64_t& { return k.fetch_tasks_batch_max; })
        .Field("discarded_puts_max", "discarded puts waiting for their release timeout",
               [](K& k) -> int64_t& { return k.discarded_puts_max; })
        .Field("restart_grace_ms",
               "recovery after a restart: unknown keys are UNAVAILABLE this long at most (0: off)",
               [](K& k) -> int64_t& { return k.restart_grace_ms; })
        .Field("restart_expected_stores",
               "stores whose manifests end the recovery early (0: wait for the grace period)",
               [](K& k) -> int64_t& { return k.restart_expected_stores; })
        .Field("manifest_changes_per_fetch_max", "manifest changes one FetchTasks returns",
               [](K& k) -> int64_t& { return k.manifest_changes_per_fetch_max; })
        .Field("manifest_entries_per_report_max", "entries one ReportManifest may carry",
               [](K& k) -> int64_t& { return k.manifest_entries_per_report_max; });
    return r;
  }();
  return *registry;
}

MasterKnobs MasterKnobs::Production() { return MasterKnobs{}; }

MasterKnobs MasterKnobs::TestMin() {
  MasterKnobs k;
  k.client_live_ttl_sec = 2;
  k.put_start_discard_timeout_sec = 3;
  k.put_start_release_timeout_sec = 6;
  k.default_kv_lease_ttl_ms = 1'000;
  k.pending_task_timeout_sec = 5;
  k.processing_task_timeout_sec = 5;
  k.sweep_interval_ms = 100;
  k.metadata_shards = 2;
  k.objects_max = 16;
  k.segments_max = 4;
  k.segments_per_client_max = 2;
  k.clients_max = 4;
  k.key_bytes_max = 32;
  k.tenant_bytes_max = 16;
  k.name_bytes_max = 32;
  k.batch_keys_max = 4;
  k.replicas_per_object_max = 3;
  k.preferred_segments_max = 2;
  k.tasks_max = 4;
  k.pending_tasks_per_client_max = 2;
  k.processing_tasks_per_client_max = 2;
  k.fetch_tasks_batch_max = 2;
  k.discarded_puts_max = 2;
  k.manifest_changes_per_fetch_max = 4;
  k.manifest_entries_per_report_max = 4;
  // The copy budgets stay unpaced: a tiny budget would serialise every copy
  // of the master tests; the pacing tests set their own.
  return k;
}

}  // namespace heatsink
