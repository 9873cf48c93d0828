#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the `master` and `replicated_master`
fuzz targets.

Both read their input with FuzzedDataProvider, whose integer reads take
bytes from the END of the input, one byte for every range below 256. The
first byte read is the setup (knob choices); each step is then: client
(1 + b % 4), segment (1 + b % 6), key (b % 18), op (b % 23 for master,
b % 16 for replicated_master), then the op's own bytes. This script lists
steps in reading order and writes them reversed, so each seed replays the
sequence it names.

Usage: fuzz/master_seeds.py [fuzz/corpus]
"""
import os
import sys

# Op numbers of fuzz/master.cc. ADVANCE takes a step index (5 = 10 s) and a
# byte whose low bit 1 means "no heartbeats" (0: every client heartbeats).
REGISTER, HEARTBEAT, MOUNT, UNMOUNT, PUT_START, PUT_FINISH = 0, 1, 2, 3, 4, 5
GET, BATCH_GET, REMOVE, COPY_TASK, PLAN_TASK, FETCH = 7, 8, 9, 10, 11, 12
COPY_CALL, MARK_COMPLETE, CANCEL, EVICT, SWEEP, ADVANCE = 13, 16, 17, 18, 19, 20


def step(client, segment, key, op, *extra):
    return [client - 1, segment - 1, key, op, *extra]


def store(client, segment, capacity_index=4, allocatable=1):
    # capacity index 4 = 1000 bytes; allocatable unless the byte is 0 mod 4.
    return (step(client, 1, 0, REGISTER) +
            step(client, segment, 0, MOUNT, capacity_index, allocatable))


def put(client, key, size_index=3, replicas=1, preferred=()):
    # size index 3 = 64 bytes; then PutEnd with the issued fence (bool 1, end 1).
    return (step(client, 1, key, PUT_START, size_index, replicas, len(preferred), *preferred) +
            step(client, 1, key, PUT_FINISH, 0, 1, 1))


def copy_call(task_index, perturb, call):
    # perturb 3..5: none, 0: version+1, 1: lease+1, 2: other client.
    return step(1, 1, 0, COPY_CALL, task_index, perturb, 1, call)


SEEDS = {
    "put_get_remove": [0] + store(1, 1) + put(1, 0) + step(2, 1, 0, GET) +
                      step(1, 1, 0, REMOVE) + step(1, 1, 0, ADVANCE, 3, 1) + step(1, 1, 0, REMOVE),
    "copy_lifecycle": [1] + store(1, 1) + store(2, 2) + put(1, 0) +
                      step(1, 2, 0, COPY_TASK, 1) + step(1, 1, 0, FETCH, 2) +
                      copy_call(0, 3, 0) + copy_call(0, 3, 1) + step(1, 1, 0, MARK_COMPLETE, 0, 1, 1),
    "stale_fences": [2] + store(1, 1) + store(2, 2) + put(1, 0) +
                    step(1, 2, 0, COPY_TASK, 0) + step(1, 1, 0, FETCH, 1) +
                    copy_call(0, 0, 0) + copy_call(0, 1, 0) + copy_call(0, 3, 0) +
                    put(1, 0) + copy_call(0, 3, 1) + copy_call(0, 3, 2),
    "leased_plan": [3] + store(1, 1) + store(2, 2) + put(1, 6) +
                   step(1, 2, 6, PLAN_TASK, 2, 0, 0) + step(1, 1, 0, FETCH, 1) +
                   copy_call(0, 3, 0) + step(1, 1, 0, ADVANCE, 4, 0) + copy_call(0, 3, 1),
    "eviction_pressure": [8] + store(1, 1, 2) + store(2, 2, 2) +
                         put(1, 0, 3, 2) + put(1, 1, 3) + put(2, 2, 3) + step(1, 1, 0, GET) +
                         step(1, 1, 0, EVICT, 0, 0) + step(1, 1, 0, ADVANCE, 5, 1) +
                         step(1, 1, 0, SWEEP) + put(1, 3, 5),
    "copy_timeout": [4] + store(1, 1) + store(2, 2) + put(1, 2) +
                    step(1, 2, 2, COPY_TASK, 0) + step(1, 1, 0, FETCH, 1) + copy_call(0, 3, 0) +
                    step(1, 1, 0, ADVANCE, 5, 0) + copy_call(0, 3, 1),
    "dead_client_unmount": [5] + store(1, 1) + store(3, 3) + put(3, 1, 3, 2) +
                           step(1, 3, 0, COPY_TASK, 0) + step(3, 3, 0, UNMOUNT) +
                           step(1, 1, 0, ADVANCE, 5, 1) + step(1, 1, 0, ADVANCE, 5, 1) +
                           step(2, 1, 0, BATCH_GET, 3, 1, 7, 13),
}


# Op numbers of fuzz/replicated_master.cc.
R_REGISTER, R_MOUNT, R_UNMOUNT, R_PUT, R_GET, R_REMOVE = 0, 1, 2, 3, 4, 6
R_PROPOSE, R_COPY, R_FETCH, R_WARMUP, R_ADMISSION, R_ADVANCE = 7, 8, 10, 11, 12, 14


def r_store(client, segment):
    # capacity index 2 = 1000 bytes, allocatable.
    return step(client, 1, 0, R_REGISTER) + step(client, segment, 0, R_MOUNT, 2, 1)


def r_put(client, key):
    # size index 1 = 16 bytes, one replica, then PutEnd.
    return step(client, 1, key, R_PUT, 1, 0, 1)


def r_propose(key, proposal, requester=0, target=0, perturb=5, deadline=3):
    # domains: 0 "", 1 "d1", 2 "default"; perturb 0 version+1, 1 size+1, else
    # none; no preferred target; deadline 3 = 60 s.
    return step(1, 1, key, R_PROPOSE, proposal, requester, target, perturb, 1, deadline)


def r_copy(lease, perturb, call):
    # call 0 start, 2 end, 3 revoke; perturb as for the master target.
    return step(1, 1, 0, R_COPY, lease, perturb, call)


def r_advance(step_index, heartbeats=True):
    # step 1 = 100 ms, 3 = 600 ms, 5 = 5 s.
    return step(1, 1, 0, R_ADVANCE, step_index, 0 if heartbeats else 1)


# Proposals, like admissions from reads, need the key hot in the master's own
# heat window (TestMin: 2 reads within 1 s), so seeds read before proposing.
# Setup bits: mode (0, 1 enforce, 2 observe, 3 off), 4 domain-aware,
# 8 warmup, 16 no admission cooldown, 32 free-ratio allocation.
REPLICATED_SEEDS = {
    "heat_admission": [0] + r_store(1, 1) + r_store(2, 2) + r_put(1, 0) +
                      step(2, 1, 0, R_GET, 2) + r_advance(1) + step(1, 1, 0, R_ADMISSION) +
                      step(1, 1, 0, R_FETCH) + r_advance(3) + step(2, 1, 0, R_GET, 2),
    "proposal_copy": [1] + r_store(1, 1) + r_store(2, 2) + r_put(1, 0) +
                     step(2, 1, 0, R_GET, 2) + r_propose(0, 1) +
                     step(1, 1, 0, R_FETCH) + r_copy(0, 3, 0) + r_copy(0, 3, 2) +
                     step(2, 1, 0, R_GET, 0) + r_advance(4),
    "stale_and_expired": [16] + r_store(1, 1) + r_store(2, 2) + r_put(1, 0) +
                         step(2, 1, 0, R_GET, 2) + r_propose(0, 1, perturb=0) + r_propose(0, 2) + r_copy(0, 0, 0) +
                         r_copy(0, 1, 0) + r_copy(0, 3, 0) + r_advance(3) + r_copy(0, 3, 2) +
                         r_put(1, 0) + step(2, 1, 0, R_GET, 2) + r_propose(0, 2),
    "domain_warmup": [4 | 8 | 32] + r_store(1, 1) + r_store(2, 2) + r_put(1, 3) +
                     step(2, 1, 3, R_GET, 2) + r_propose(3, 1, 2, 1) + r_propose(3, 2, 0, 2) +
                     step(1, 1, 0, R_WARMUP, 0) + r_advance(4) + step(1, 1, 0, R_FETCH),
    "observe_mode": [2] + r_store(1, 1) + r_store(2, 2) + r_put(1, 0) + step(2, 1, 0, R_GET, 2) +
                    r_advance(1) + step(1, 1, 0, R_ADMISSION) + r_propose(0, 3) +
                    step(1, 1, 0, R_REMOVE) + r_propose(0, 3),
}


def write(out, seeds):
    os.makedirs(out, exist_ok=True)
    for name, reading_order in seeds.items():
        data = bytes(b & 0xFF for b in reversed(reading_order))
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(data)


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__),
                                                                  "corpus")
    write(os.path.join(corpus, "master"), SEEDS)
    write(os.path.join(corpus, "replicated_master"), REPLICATED_SEEDS)


if __name__ == "__main__":
    main()
