#include "core/master/internal/manifest_journal.h"

namespace heatsink::master_internal {

void ManifestJournal::Record(ClientId owner, RangeKey key, ManifestChange change) {
  ClientChanges& c = clients_[owner];
  change.seq = next_seq_++;
  auto it = c.by_range.find(key);
  if (it != c.by_range.end()) {
    c.by_seq.erase(it->second.seq);
    it->second = std::move(change);
  } else {
    it = c.by_range.emplace(key, std::move(change)).first;
    ++pending_;
  }
  c.by_seq.emplace(it->second.seq, key);
}

void ManifestJournal::Put(ClientId owner, const ManifestEntry& entry) {
  MutexLock lock(&mu_);
  ManifestChange change;
  change.present = true;
  change.entry = entry;
  Record(owner, {entry.segment_id, entry.offset}, std::move(change));
}

void ManifestJournal::Remove(ClientId owner, SegmentId segment, uint64_t offset) {
  MutexLock lock(&mu_);
  ManifestChange change;
  change.present = false;
  change.entry.segment_id = segment;
  change.entry.offset = offset;
  Record(owner, {segment, offset}, std::move(change));
}

void ManifestJournal::DropClient(ClientId owner) {
  MutexLock lock(&mu_);
  auto it = clients_.find(owner);
  if (it == clients_.end()) return;
  pending_ -= static_cast<int64_t>(it->second.by_range.size());
  clients_.erase(it);
}

void ManifestJournal::DropSegment(ClientId owner, SegmentId segment) {
  MutexLock lock(&mu_);
  auto it = clients_.find(owner);
  if (it == clients_.end()) return;
  ClientChanges& c = it->second;
  auto first = c.by_range.lower_bound({segment, 0});
  auto last = c.by_range.upper_bound({segment, UINT64_MAX});
  for (auto r = first; r != last; ++r) {
    c.by_seq.erase(r->second.seq);
    --pending_;
  }
  c.by_range.erase(first, last);
}

std::vector<ManifestChange> ManifestJournal::Fetch(ClientId owner, uint64_t ack_seq, size_t max) {
  MutexLock lock(&mu_);
  std::vector<ManifestChange> out;
  auto it = clients_.find(owner);
  if (it == clients_.end()) return out;
  ClientChanges& c = it->second;
  // An acknowledgement of a change this journal never made comes from a
  // store still talking about an earlier master: it acknowledges nothing.
  if (ack_seq >= next_seq_) ack_seq = 0;
  while (!c.by_seq.empty() && c.by_seq.begin()->first <= ack_seq) {
    c.by_range.erase(c.by_seq.begin()->second);
    c.by_seq.erase(c.by_seq.begin());
    --pending_;
  }
  for (auto s = c.by_seq.begin(); s != c.by_seq.end() && out.size() < max; ++s) {
    out.push_back(c.by_range.at(s->second));
  }
  return out;
}

int64_t ManifestJournal::pending() const {
  MutexLock lock(&mu_);
  return pending_;
}

}  // namespace heatsink::master_internal
