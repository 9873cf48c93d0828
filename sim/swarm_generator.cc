// The swarm scenario generator (sim/swarm_generator.h). Everything is drawn
// with the project's Rng; nlohmann's ordered_json keeps the keys in the order
// written, so the text is a pure function of the seed.
#include "sim/swarm_generator.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/env/rng.h"
#include "nlohmann/json.hpp"

namespace heatsink::sim {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

// Milliseconds as the seconds a scenario's `*_s` field takes.
double Seconds(int64_t ms) { return static_cast<double>(ms) / 1000.0; }

// A probability in thousandths, as a number.
double Permille(int64_t permille) { return static_cast<double>(permille) / 1000.0; }

bool Coin(Rng& rng, uint64_t numerator, uint64_t denominator) {
  return rng.Bernoulli(numerator, denominator);
}

template <typename T>
const T& Pick(Rng& rng, const std::vector<T>& items) {
  return items[rng.Uniform(items.size())];
}

struct HostDraw {
  std::string name;
  std::string domain;
};

// Traffic classes of the network and copy budgets (foreground first): the
// sharing mode with its weight, and each copy budget unpaced in half the
// seeds, else from a quarter of the smallest object to twice the largest
// (objects are 64 to 512 KiB), so copies that go through alone are drawn too.
// `pacing` is a stream of its own, so the other draws of a seed stay what
// they were before these knobs existed.
void DrawForegroundFirstKnobs(Rng pacing, Json& knobs) {
  const char* const sharing[] = {"strict", "weighted", "equal"};
  knobs["background_sharing"] = sharing[pacing.Uniform(3)];
  knobs["background_weight"] = Permille(50 * pacing.UniformRange(1, 20));
  for (const char* budget : {"copy_budget_per_source_bytes", "copy_budget_per_trunk_bytes"}) {
    knobs[budget] =
        Coin(pacing, 1, 2) ? (int64_t{1} << 40) : 16 * kKiB * pacing.UniformRange(1, 64);
  }
}

// A partition or a degradation on a third of the trunks between domains.
Json DrawTrunkFaults(Rng& fault, int64_t faults_end_ms, int64_t domains) {
  Json trunk_faults = Json::array();
  if (domains < 2) return trunk_faults;
  for (int64_t a = 0; a < domains; ++a) {
    for (int64_t b = a + 1; b < domains; ++b) {
      if (!Coin(fault, 1, 3)) continue;
      const int64_t from_ms = fault.UniformRange(50, faults_end_ms - 100);
      const int64_t to_ms = std::min(faults_end_ms, from_ms + fault.UniformRange(20, 1000));
      Json t = Json{{"between", Json::array({absl::StrCat("d", a), absl::StrCat("d", b)})}};
      if (Coin(fault, 1, 2)) {
        t["kind"] = "partition";
      } else {
        t["kind"] = "degrade";
        t["bandwidth_factor"] = Permille(fault.UniformRange(1, 1000));
        t["extra_latency_ms"] = fault.UniformRange(0, 100);
      }
      t["from_s"] = Seconds(from_ms);
      t["to_s"] = Seconds(to_ms);
      trunk_faults.push_back(std::move(t));
    }
  }
  return trunk_faults;
}

// Every scenario's timing: when the faults end, and the timeouts the
// liveness phase then waits out.
struct SwarmTiming {
  int64_t faults_end_ms = 0;
  int64_t lease_ttl_ms = 0;
  int64_t sweep_interval_ms = 0;
  int64_t task_timeout_sec = 0;
  int64_t put_discard_timeout_sec = 1;
  int64_t rpc_timeout_ms = 0;
  int64_t copy_delay_max_ms = 0;
};

SwarmTiming DrawTiming(Rng& knob) {
  SwarmTiming t;
  t.faults_end_ms = 1'500 + 100 * knob.UniformRange(0, 25);
  t.lease_ttl_ms = 50 * knob.UniformRange(3, 24);  // 150 ms .. 1.2 s
  t.sweep_interval_ms = 50 * knob.UniformRange(1, 5);
  t.task_timeout_sec = knob.UniformRange(1, 2);
  t.rpc_timeout_ms = 50 * knob.UniformRange(2, 6);
  t.copy_delay_max_ms = 2 * t.lease_ttl_ms;
  return t;
}

// The domains d0.. with their hosts (one MEMORY segment and one client
// each), the default trunk and the control plane's jitter.
struct SwarmTopology {
  int64_t domains = 0;
  std::vector<HostDraw> hosts;
  Json json;

  std::string ClientOf(size_t i) const { return absl::StrCat(hosts[i].name, "/c"); }
};

SwarmTopology DrawTopology(Rng& topo) {
  SwarmTopology out;
  out.domains = topo.UniformRange(1, 3);
  Json topology_domains = Json::array();
  const std::vector<int64_t> nic_gbps = {1, 10, 100};
  const std::vector<int64_t> segment_mib = {2, 3, 4, 6};
  for (int64_t d = 0; d < out.domains; ++d) {
    const std::string domain = absl::StrCat("d", d);
    Json hosts_json = Json::array();
    const int64_t per_domain = topo.UniformRange(1, 3);
    for (int64_t h = 0; h < per_domain; ++h) {
      const std::string host = absl::StrCat(domain, "h", h);
      out.hosts.push_back(HostDraw{host, domain});
      const int64_t gbps = Pick(topo, nic_gbps);
      Json host_json = Json::object();
      host_json["name"] = host;
      host_json["nic_send_gbps"] = gbps;
      host_json["nic_receive_gbps"] = gbps;
      host_json["segments"] =
          Json::array({Json{{"name", "mem"}, {"capacity_bytes", Pick(topo, segment_mib) * kMiB}}});
      host_json["clients"] = Json::array({Json{{"name", "c"}}});
      hosts_json.push_back(std::move(host_json));
    }
    topology_domains.push_back(Json{{"name", domain}, {"hosts", std::move(hosts_json)}});
  }
  out.json = Json::object();
  out.json["domains"] = std::move(topology_domains);
  out.json["default_trunk"] =
      Json{{"bandwidth_gbps", Pick(topo, nic_gbps)}, {"latency_us", 10 * topo.UniformRange(1, 10)}};
  out.json["network"] = Json{{"control_jitter_percent", topo.UniformRange(0, 20)}};
  return out;
}

// The knobs, and what the other sections need to know of them.
struct SwarmKnobs {
  Json json = Json::object();
  int64_t hit_count = 0;
  bool domain_aware = false;
  // How long the warmup jobs left when the faults end may take (0: warmup
  // off).
  int64_t warmup_drain_ms = 0;
};

// Dynamic replication's knobs, tiny limits included.
void DrawReplicationKnobs(Rng& knob, const SwarmTiming& timing, int64_t domains, SwarmKnobs& out) {
  Json& knobs = out.json;
  knobs["dynamic_replication_mode"] = Coin(knob, 4, 5) ? "enforce" : "observe";
  const int64_t window_s = knob.UniformRange(1, 2);
  knobs["dynamic_replication_heat_window_seconds"] = window_s;
  knobs["dynamic_replication_heat_window_sub_buckets"] =
      Pick(knob, std::vector<int64_t>{2, 4, 5, 10});
  // A hit count of 2..6 reads in the window, written as reads per second.
  out.hit_count = knob.UniformRange(2, 6);
  knobs["dynamic_replication_admission_qps_threshold"] =
      static_cast<double>(out.hit_count) / static_cast<double>(window_s);
  knobs["dynamic_replication_max_memory_replicas"] = knob.UniformRange(1, 2);
  // Half the seeds have a window so small that the Zipf storm's hot keys,
  // never replaced while hot, leave the script's keys untracked; the other
  // half track them, so their reads cross and proposals for them can pass.
  knobs["dynamic_replication_heat_window_entries_max"] =
      Coin(knob, 1, 2) ? knob.UniformRange(2, 16) : knob.UniformRange(64, 256);
  knobs["dynamic_replication_admission_cooldown_ms"] =
      Coin(knob, 1, 4) ? 0 : 50 * knob.UniformRange(1, 12);
  knobs["dynamic_replication_recreate_cooldown_ms"] =
      Coin(knob, 1, 4) ? 0 : 50 * knob.UniformRange(1, 20);
  knobs["dynamic_replication_target_utilization_cap"] = Permille(50 * knob.UniformRange(10, 20));
  knobs["dynamic_replication_admission_retry_ms"] = 50 * knob.UniformRange(1, 20);
  knobs["dynamic_replication_target_heat_aware"] = Coin(knob, 1, 2);
  if (Coin(knob, 1, 3)) {
    knobs["dynamic_replication_release_enabled"] = true;
    knobs["dynamic_replication_release_after_ms"] = 100 * knob.UniformRange(1, 20);
    knobs["dynamic_replication_release_below_count"] = knob.UniformRange(1, 4);
  }
  out.domain_aware = Coin(knob, 1, 2);
  knobs["dynamic_replication_domain_aware"] = out.domain_aware;
  knobs["dynamic_replication_lease_ttl_ms"] = timing.lease_ttl_ms;
  knobs["dynamic_replication_trigger_queue_max"] = knob.UniformRange(1, 8);
  knobs["dynamic_replication_pending_actions_max"] = knob.UniformRange(1, 8);
  knobs["dynamic_replication_proposals_max"] = knob.UniformRange(1, 8);
  knobs["dynamic_replication_cooldown_entries_max"] = knob.UniformRange(1, 16);
  // Cross-domain warmup in half the stage-2 seeds (it needs domain-aware
  // placement; the script requests warmups of random domains in every seed,
  // and without the knob they are refused).
  const bool warmup = out.domain_aware && Coin(knob, 1, 2);
  knobs["dynamic_replication_warmup_enabled"] = warmup;
  // Warmup is paced work that goes on after the faults end; the liveness
  // phase waits for the warmup jobs left then (one per domain, each of at
  // most warmup_objects_max copies, each copy at worst one budget window,
  // its lease TTL and a poll apart).
  if (warmup) {
    const int64_t objects_max = knob.UniformRange(1, 4);
    const int64_t poll_ms = 50 * knob.UniformRange(1, 10);
    knobs["dynamic_replication_warmup_copies_in_flight_max"] = knob.UniformRange(1, 3);
    knobs["dynamic_replication_warmup_bytes_per_second_max"] = 64 * kKiB * knob.UniformRange(1, 64);
    knobs["dynamic_replication_warmup_objects_max"] = objects_max;
    knobs["dynamic_replication_warmup_domain_poll_ms"] = poll_ms;
    out.warmup_drain_ms = domains * objects_max * (1000 + timing.lease_ttl_ms + poll_ms);
  }
}

// The master's, the workers' and the network's knobs, and the NUMA model.
void DrawClusterKnobs(Rng& knob, const Rng& root, const SwarmTiming& timing,
                      const std::vector<HostDraw>& hosts, SwarmKnobs& out) {
  Json& knobs = out.json;
  knobs["replica_selection_policy"] = Coin(knob, 1, 2) ? "first" : "spread";
  knobs["eviction_high_watermark_ratio"] = Permille(50 * knob.UniformRange(10, 19));
  knobs["eviction_ratio"] = Permille(50 * knob.UniformRange(1, 10));
  knobs["sweep_interval_ms"] = timing.sweep_interval_ms;
  knobs["client_live_ttl_sec"] = knob.UniformRange(1, 2);
  knobs["put_start_discard_timeout_sec"] = timing.put_discard_timeout_sec;
  knobs["put_start_release_timeout_sec"] = knob.UniformRange(1, 2);
  knobs["default_kv_lease_ttl_ms"] = 10 * knob.UniformRange(2, 50);
  knobs["pending_task_timeout_sec"] = timing.task_timeout_sec;
  knobs["processing_task_timeout_sec"] = timing.task_timeout_sec;
  knobs["metadata_shards"] = knob.UniformRange(1, 4);
  const int64_t processing_per_client = knob.UniformRange(1, 8);
  knobs["pending_tasks_per_client_max"] = knob.UniformRange(1, 8);
  knobs["processing_tasks_per_client_max"] = processing_per_client;
  knobs["fetch_tasks_batch_max"] = knob.UniformRange(1, processing_per_client);
  knobs["tasks_max"] = knob.UniformRange(1, 16);
  knobs["invariant_check_events"] = 1;
  knobs["master_host"] = hosts[knob.Uniform(hosts.size())].name;
  knobs["worker_heartbeat_interval_ms"] = 50 * knob.UniformRange(2, 6);
  knobs["worker_fetch_interval_ms"] = 10 * knob.UniformRange(1, 10);
  knobs["worker_copies_in_flight_max"] = knob.UniformRange(1, 4);
  knobs["control_rpc_timeout_ms"] = timing.rpc_timeout_ms;
  knobs["read_retries_max"] = 200;
  DrawForegroundFirstKnobs(root.Fork("swarm/pacing"), knobs);
  const bool numa = Coin(knob, 1, 2);
  knobs["numa_model"] = numa;
  if (numa) {
    knobs["block"] = kMiB;
    knobs["ram_head"] = 256 * kKiB;
    knobs["memory"] = kMiB * knob.UniformRange(1, 4);
  }
}

int64_t ObjectSize(Rng& rng) { return 64 * kKiB * rng.UniformRange(1, 8); }

// The Zipf storm over the whole fault phase.
Json DrawZipfWorkload(Rng& work, const SwarmTiming& timing, const SwarmTopology& topology) {
  const int64_t objects = work.UniformRange(2, 8);
  const int64_t settle_ms = 50;
  const int64_t start_ms = 10 * work.UniformRange(0, 20);
  Json z = Json::object();
  z["type"] = "zipf";
  z["name"] = "z";
  z["start_s"] = Seconds(start_ms);
  z["objects"] = objects;
  z["rate_per_s"] = 50 * work.UniformRange(1, 8);
  z["readers_per_domain"] = work.UniformRange(1, 2);
  z["object_size_bytes"] = ObjectSize(work);
  z["skew"] = Permille(250 * work.UniformRange(0, 6));
  z["batch_size"] = work.UniformRange(1, 2);
  z["writer_domain"] = topology.hosts[work.Uniform(topology.hosts.size())].domain;
  z["settle_ms"] = settle_ms;
  z["duration_s"] = Seconds(timing.faults_end_ms - start_ms - settle_ms);
  return z;
}

// Cross-domain reuse in half the multi-domain seeds, when every read lands
// before the faults end (drawn either way, so the stream does not depend on
// the fit).
std::optional<Json> DrawReuseWorkload(Rng& work, const SwarmTiming& timing, int64_t domains) {
  if (domains < 2 || !Coin(work, 1, 2)) return std::nullopt;
  const int64_t objects = work.UniformRange(1, 4);
  const int64_t reads_per_object = work.UniformRange(4, 16);
  const int64_t rate = 50 * work.UniformRange(2, 8);
  const int64_t writer = work.UniformRange(0, domains - 1);
  const int64_t reader = (writer + work.UniformRange(1, domains - 1)) % domains;
  // Every read lands before the faults end.
  const int64_t span_ms = objects * reads_per_object * 1000 / rate + 200;
  const int64_t start_ms =
      10 * work.UniformRange(0, std::max<int64_t>(0, (timing.faults_end_ms - span_ms) / 10));
  Json r = Json::object();
  r["type"] = "cross_domain_reuse";
  r["name"] = "reuse";
  r["start_s"] = Seconds(start_ms);
  r["writer_domain"] = absl::StrCat("d", writer);
  r["reader_domain"] = absl::StrCat("d", reader);
  r["objects"] = objects;
  r["reads_per_object"] = reads_per_object;
  r["rate_per_s"] = rate;
  r["object_size_bytes"] = ObjectSize(work);
  if (start_ms + span_ms > timing.faults_end_ms) return std::nullopt;
  return r;
}

// The scripted workload: a few keys of its own, put one by one or in one
// batch, then timed episodes (read bursts with proposals, warmups and
// re-puts; removes; failed, delayed and foreign copy starts). Every draw
// comes from `script`, in the order the ops are written.
class ScriptDraw {
 public:
  ScriptDraw(Rng& script, const SwarmTiming& timing, const SwarmTopology& topology,
             const SwarmKnobs& knobs)
      : script_(script), timing_(timing), topology_(topology), knobs_(knobs) {}

  Json Draw() {
    keys_ = script_.UniformRange(1, 4);
    writer_domain_.assign(static_cast<size_t>(keys_), std::string());
    PutKeys();
    const int64_t episodes = script_.UniformRange(3, 14);
    for (int64_t e = 0; e < episodes; ++e) {
      clock_ms_ += script_.UniformRange(20, 300);
      if (clock_ms_ >= timing_.faults_end_ms - 150) break;
      Episode(script_.UniformRange(0, keys_ - 1));
    }
    std::sort(delayed_hosts_.begin(), delayed_hosts_.end());
    for (const std::string& host : delayed_hosts_) {
      ops_.push_back(Json{{"op", "delay_copies"},
                          {"host", host},
                          {"by_ms", 0},
                          {"at_ms", std::max(clock_ms_, timing_.faults_end_ms - 1)}});
    }
    return Json{{"type", "scripted"}, {"name", "script"}, {"ops", std::move(ops_)}};
  }

 private:
  static std::string KeyName(int64_t k) { return absl::StrCat("s-", k); }
  const std::vector<HostDraw>& hosts() const { return topology_.hosts; }
  size_t AnyHost() { return script_.Uniform(hosts().size()); }

  void Put(int64_t at_ms, int64_t k) {
    const size_t writer = AnyHost();
    writer_domain_[static_cast<size_t>(k)] = hosts()[writer].domain;
    ops_.push_back(Json{{"op", "put"},
                        {"client", topology_.ClientOf(writer)},
                        {"key", KeyName(k)},
                        {"size_bytes", ObjectSize(script_)},
                        {"at_ms", at_ms}});
  }

  void PutKeys() {
    if (keys_ > 1 && Coin(script_, 1, 2)) {
      // One writer puts every key in one batch (BatchPutStart/End/Revoke).
      clock_ms_ += script_.UniformRange(1, 20);
      const size_t writer = AnyHost();
      Json batch = Json::array();
      for (int64_t k = 0; k < keys_; ++k) {
        writer_domain_[static_cast<size_t>(k)] = hosts()[writer].domain;
        batch.push_back(KeyName(k));
      }
      ops_.push_back(Json{{"op", "batch_put"},
                          {"client", topology_.ClientOf(writer)},
                          {"keys", std::move(batch)},
                          {"size_bytes", ObjectSize(script_)},
                          {"at_ms", clock_ms_}});
      return;
    }
    for (int64_t k = 0; k < keys_; ++k) {
      clock_ms_ += script_.UniformRange(1, 20);
      Put(clock_ms_, k);
    }
  }

  void Episode(int64_t k) {
    switch (script_.Uniform(6)) {
      case 0:
      case 1:
        ReadBurst(k);
        break;
      case 2:
        ops_.push_back(Json{{"op", "remove"},
                            {"client", topology_.ClientOf(AnyHost())},
                            {"key", KeyName(k)},
                            {"at_ms", clock_ms_}});
        if (Coin(script_, 1, 2)) {
          clock_ms_ += script_.UniformRange(1, 100);
          Put(clock_ms_, k);
        }
        break;
      case 3: {
        Json f =
            Json{{"op", "fail_copy"}, {"count", script_.UniformRange(1, 2)}, {"at_ms", clock_ms_}};
        if (Coin(script_, 1, 2)) f["key"] = KeyName(k);
        ops_.push_back(std::move(f));
        break;
      }
      case 4: {
        // Copies sourced on the host outlive their lease when the delay
        // exceeds the TTL.
        const std::string& host = hosts()[AnyHost()].name;
        ops_.push_back(Json{{"op", "delay_copies"},
                            {"host", host},
                            {"by_ms", script_.UniformRange(1, timing_.copy_delay_max_ms)},
                            {"at_ms", clock_ms_}});
        if (std::find(delayed_hosts_.begin(), delayed_hosts_.end(), host) == delayed_hosts_.end()) {
          delayed_hosts_.push_back(host);
        }
        break;
      }
      default:
        // A copy start from a host that may not be the lease's source.
        ops_.push_back(Json{{"op", "copy_start"},
                            {"host", hosts()[AnyHost()].name},
                            {"key", KeyName(k)},
                            {"at_ms", clock_ms_}});
        break;
    }
  }

  // A burst of reads of one key from several domains at one instant, or,
  // before a burst of proposals, from one domain and enough to cross the
  // hit count (a proposal needs the master's own window to be hot); then,
  // sometimes, a warmup request and a re-put of the key while its copy may
  // run.
  void ReadBurst(int64_t k) {
    const bool proposals = Coin(script_, 1, 2);
    // In stage 2, readers away from the writer's domain, where the key is
    // below its per-domain cap and so records heat.
    std::vector<size_t> away;
    for (size_t h = 0; h < hosts().size(); ++h) {
      if (hosts()[h].domain != writer_domain_[static_cast<size_t>(k)]) away.push_back(h);
    }
    const size_t first_reader = proposals && knobs_.domain_aware && !away.empty()
                                    ? away[script_.Uniform(away.size())]
                                    : AnyHost();
    std::vector<size_t> same_domain;
    for (size_t h = 0; h < hosts().size(); ++h) {
      if (hosts()[h].domain == hosts()[first_reader].domain) same_domain.push_back(h);
    }
    int64_t reads = script_.UniformRange(3, 12);
    if (proposals) reads = std::max(reads, knobs_.hit_count);
    for (int64_t i = 0; i < reads; ++i) {
      const size_t reader = i == 0      ? first_reader
                            : proposals ? same_domain[script_.Uniform(same_domain.size())]
                                        : AnyHost();
      ops_.push_back(Json{{"op", "get"},
                          {"client", topology_.ClientOf(reader)},
                          {"key", KeyName(k)},
                          {"at_ms", clock_ms_}});
    }
    if (proposals) Propose(k, first_reader);
    if (Coin(script_, 1, 4)) {
      // An operator asks for a warmup of some domain while the key is hot
      // (and its copies may be in flight).
      clock_ms_ += script_.UniformRange(0, 20);
      ops_.push_back(
          Json{{"op", "warmup"},
               {"domain", absl::StrCat("d", script_.UniformRange(0, topology_.domains - 1))},
               {"at_ms", clock_ms_}});
    }
    if (Coin(script_, 1, 2)) {
      clock_ms_ += script_.UniformRange(1, 40);
      Put(clock_ms_, k);
    }
  }

  // Several proposers at once (distinct ids) or one retrying (the same id),
  // while the reads are still in the window: soon after them (the heat path
  // has usually admitted the key, so mostly pending or cooldown) or once the
  // admission cooldown may have passed (in stage 2 the proposers mostly ask
  // for a copy into another domain than the readers'). Hints sometimes, also
  // where they are not supported; sometimes a stale version or an expiration
  // shorter than the lease TTL.
  void Propose(int64_t k, size_t first_reader) {
    const int64_t room_ms = std::max<int64_t>(1, timing_.faults_end_ms - 100 - clock_ms_);
    clock_ms_ += std::min(
        room_ms, Coin(script_, 1, 2) ? script_.UniformRange(1, 30) : script_.UniformRange(30, 700));
    const int64_t count = script_.UniformRange(2, 6);
    const bool same_id = Coin(script_, 1, 3);
    Json p = Json{{"op", "propose"},
                  {"key", KeyName(k)},
                  {"proposal_id", next_proposal_id_},
                  {"count", count},
                  {"at_ms", clock_ms_}};
    next_proposal_id_ += same_id ? 1 : count;
    if (same_id) p["same_id"] = true;
    if (knobs_.domain_aware ? Coin(script_, 3, 4) : Coin(script_, 1, 8)) {
      const std::string& reader_domain = hosts()[first_reader].domain;
      p["requester_domain"] = reader_domain;
      if (Coin(script_, 3, 4)) {
        // Mostly a domain holding no copy yet (neither the readers' nor the
        // writer's), when there is one.
        std::vector<std::string> fresh;
        for (int64_t d = 0; d < topology_.domains; ++d) {
          const std::string name = absl::StrCat("d", d);
          if (name != reader_domain && name != writer_domain_[static_cast<size_t>(k)]) {
            fresh.push_back(name);
          }
        }
        p["target_domain"] =
            !fresh.empty() && Coin(script_, 3, 4)
                ? fresh[script_.Uniform(fresh.size())]
                : absl::StrCat("d", script_.UniformRange(0, topology_.domains - 1));
      }
    }
    if (Coin(script_, 1, 6)) p["version"] = 1;
    if (Coin(script_, 1, 4)) p["expires_in_ms"] = script_.UniformRange(1, timing_.lease_ttl_ms);
    ops_.push_back(std::move(p));
  }

  Rng& script_;
  const SwarmTiming& timing_;
  const SwarmTopology& topology_;
  const SwarmKnobs& knobs_;
  Json ops_ = Json::array();
  int64_t keys_ = 0;
  int64_t clock_ms_ = 0;
  // The domain of each key's last writer (a put lands on its own host).
  std::vector<std::string> writer_domain_;
  std::vector<std::string> delayed_hosts_;
  int64_t next_proposal_id_ = 1;
};

// The rollout switch (set_knob of the mode) in a third of the seeds: the
// mode changes while everything else runs and comes back before the faults
// end, so the liveness phase runs in the scenario's own mode. Its own
// stream, so the rest of a seed's scenario does not depend on it.
std::optional<Json> DrawRollout(Rng rollout, const std::string& initial_mode,
                                int64_t faults_end_ms) {
  if (!Coin(rollout, 1, 3)) return std::nullopt;
  std::vector<std::string> others;
  for (const char* m : {"off", "observe", "enforce"}) {
    if (m != initial_mode) others.emplace_back(m);
  }
  const int64_t switch_ms = rollout.UniformRange(0, faults_end_ms - 200);
  const int64_t back_ms = rollout.UniformRange(switch_ms + 1, faults_end_ms - 100);
  Json ops = Json::array();
  ops.push_back(Json{{"op", "set_knob"},
                     {"name", "dynamic_replication_mode"},
                     {"value", others[rollout.Uniform(others.size())]},
                     {"at_ms", switch_ms}});
  ops.push_back(Json{{"op", "set_knob"},
                     {"name", "dynamic_replication_mode"},
                     {"value", initial_mode},
                     {"at_ms", back_ms}});
  return Json{{"type", "scripted"}, {"name", "rollout"}, {"ops", std::move(ops)}};
}

// Worker crashes and a segment unmount in the hosts' order of a shuffle,
// copy failures, control-message faults and trunk faults between domains.
Json DrawFaults(Rng& fault, int64_t faults_end_ms, const SwarmTopology& topology) {
  const std::vector<HostDraw>& hosts = topology.hosts;
  Json faults = Json::object();
  Json crashes = Json::array();
  std::vector<size_t> order(hosts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[fault.Uniform(i)]);
  const int64_t crash_count =
      std::min<int64_t>(fault.UniformRange(0, 2), static_cast<int64_t>(hosts.size()));
  for (int64_t c = 0; c < crash_count; ++c) {
    const int64_t at_ms = fault.UniformRange(100, faults_end_ms - 200);
    // Some crashes outlast client_live_ttl_sec: the master then reaps the
    // worker and unmounts its segments while its copies are in flight.
    const int64_t restart_ms = std::min(faults_end_ms, at_ms + fault.UniformRange(20, 2500));
    crashes.push_back(Json{{"host", hosts[order[static_cast<size_t>(c)]].name},
                           {"at_s", Seconds(at_ms)},
                           {"restart_at_s", Seconds(restart_ms)}});
  }
  faults["worker_crashes"] = std::move(crashes);

  Json unmounts = Json::array();
  if (Coin(fault, 1, 3)) {
    const int64_t at_ms = fault.UniformRange(100, faults_end_ms - 200);
    const int64_t remount_ms = std::min(faults_end_ms, at_ms + fault.UniformRange(20, 800));
    unmounts.push_back(
        Json{{"segment", absl::StrCat(hosts[fault.Uniform(hosts.size())].name, "/mem")},
             {"at_s", Seconds(at_ms)},
             {"remount_at_s", Seconds(remount_ms)}});
  }
  faults["segment_unmounts"] = std::move(unmounts);

  faults["copy_failure_probability"] =
      Coin(fault, 1, 2) ? 0.0 : Permille(fault.UniformRange(10, 300));
  if (Coin(fault, 1, 2)) {
    faults["control_messages"] = Json{{"drop_probability", Permille(fault.UniformRange(0, 50))},
                                      {"delay_probability", Permille(fault.UniformRange(0, 200))},
                                      {"delay_ms", fault.UniformRange(1, 50)},
                                      {"to_s", Seconds(faults_end_ms)}};
  }
  faults["trunk_faults"] = DrawTrunkFaults(fault, faults_end_ms, topology.domains);
  return faults;
}

// Master crashes in a fifth of the seeds (one, sometimes two), from their
// own stream so that the other seeds' scenarios do not change. The
// restarted master recovers for up to restart_grace_ms (1 s) after its
// restart; the liveness phase covers it. Returns that recovery time (0: no
// crash).
int64_t DrawMasterCrashes(Rng crash, int64_t faults_end_ms, Json& faults, Json& knobs) {
  if (!Coin(crash, 1, 5)) return 0;
  Json crashes = Json::array();
  const int64_t count = Coin(crash, 1, 4) ? 2 : 1;
  int64_t from_ms = 100;
  for (int64_t c = 0; c < count; ++c) {
    const int64_t last_ms = faults_end_ms - 100 - (count - 1 - c) * 400;
    if (from_ms > last_ms - 100) break;
    const int64_t at_ms = crash.UniformRange(from_ms, last_ms - 100);
    const int64_t restart_ms = std::min(last_ms, at_ms + crash.UniformRange(1, 800));
    crashes.push_back(Json{{"at_s", Seconds(at_ms)}, {"restart_at_s", Seconds(restart_ms)}});
    from_ms = restart_ms + 1;
  }
  if (crashes.empty()) return 0;
  faults["master_crashes"] = std::move(crashes);
  // The stores report within a heartbeat (at most 300 ms here); a store
  // that is down holds the recovery for the whole grace period.
  const int64_t recovery_ms = 1'000;
  knobs["restart_grace_ms"] = recovery_ms;
  return recovery_ms;
}

}  // namespace

SwarmScenario GenerateSwarmScenario(uint64_t seed) {
  const Rng root(seed);
  Rng topo = root.Fork("swarm/topology");
  Rng knob = root.Fork("swarm/knobs");
  Rng work = root.Fork("swarm/workloads");
  Rng script = root.Fork("swarm/script");
  Rng fault = root.Fork("swarm/faults");

  SwarmScenario out;
  out.seed = seed;
  out.name = absl::StrCat("swarm-", seed);

  const SwarmTiming timing = DrawTiming(knob);
  SwarmTopology topology = DrawTopology(topo);
  SwarmKnobs knobs;
  DrawReplicationKnobs(knob, timing, topology.domains, knobs);
  DrawClusterKnobs(knob, root, timing, topology.hosts, knobs);

  Json workloads = Json::array();
  workloads.push_back(DrawZipfWorkload(work, timing, topology));
  // A third of the seeds put the Zipf objects in batches (flow groups), from
  // a stream of its own so that the other draws stay those of earlier seeds.
  if (Rng batching = root.Fork("swarm/put_batch"); Coin(batching, 1, 3)) {
    workloads.back()["put_batch_keys"] = batching.UniformRange(2, 4);
  }
  if (std::optional<Json> reuse = DrawReuseWorkload(work, timing, topology.domains)) {
    workloads.push_back(*std::move(reuse));
  }
  workloads.push_back(ScriptDraw(script, timing, topology, knobs).Draw());
  if (std::optional<Json> rollout = DrawRollout(
          root.Fork("swarm/rollout"), knobs.json["dynamic_replication_mode"].get<std::string>(),
          timing.faults_end_ms)) {
    workloads.push_back(*std::move(rollout));
  }

  Json faults = DrawFaults(fault, timing.faults_end_ms, topology);
  const int64_t recovery_ms =
      DrawMasterCrashes(root.Fork("swarm/master_crash"), timing.faults_end_ms, faults, knobs.json);

  // After the faults end: every lease ends within its TTL (twice, for one
  // granted just before the end), tasks and stuck puts within their
  // timeouts, plus the reaping period, a delayed copy and an RPC timeout.
  const int64_t timeouts_ms = std::max({2 * timing.lease_ttl_ms, timing.task_timeout_sec * 1000,
                                        timing.put_discard_timeout_sec * 1000});
  out.faults_end_ms = timing.faults_end_ms;
  out.liveness_ms = timeouts_ms + 2 * timing.sweep_interval_ms + timing.copy_delay_max_ms +
                    timing.rpc_timeout_ms + knobs.warmup_drain_ms + recovery_ms + 500;

  Json scenario = Json::object();
  scenario["format_version"] = 1;
  scenario["name"] = out.name;
  scenario["description"] =
      absl::StrCat("heatsink-sim swarm seed ", seed, ": faults end at ", timing.faults_end_ms,
                   " ms, liveness phase of ", out.liveness_ms, " ms");
  scenario["seed"] = seed;
  scenario["duration_s"] = Seconds(timing.faults_end_ms + out.liveness_ms);
  scenario["time_step_ms"] = 1000;
  scenario["outputs"] = Json{{"per_request_csv", false}, {"html_report", false}};
  scenario["topology"] = std::move(topology.json);
  scenario["knobs"] = std::move(knobs.json);
  scenario["workloads"] = std::move(workloads);
  scenario["faults"] = std::move(faults);
  out.json = scenario.dump(2) + "\n";
  return out;
}

}  // namespace heatsink::sim
