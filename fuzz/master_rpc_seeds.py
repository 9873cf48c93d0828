#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the `master_rpc` fuzz target.

An input is a list of calls, each: method byte, caller byte, 16-bit little
endian payload length, payload (a protobuf-encoded request of
proto/heatsink/master.proto). The wire encoding is written here by hand, so
no protobuf package is needed.

Usage: fuzz/master_rpc_seeds.py [fuzz/corpus]
"""
import os
import sys

# Method indices of fuzz/master_rpc.cc.
(PING, REGISTER, HEARTBEAT, MOUNT, UNMOUNT, LIST, PUT_START, PUT_END, PUT_REVOKE, GET,
 BATCH_GET, REMOVE, FETCH, MARK_COMPLETE, COPY_START, COPY_END, COPY_REVOKE, DYN_START,
 DYN_END, DYN_REVOKE, PING2, BATCH_PUT_START, BATCH_PUT_END, BATCH_PUT_REVOKE,
 ADVANCE) = range(25)
NO_CALLER, BAD_ZERO, BAD_NEGATIVE, BAD_TEXT = 0, 5, 6, 7


def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def uint(field, n):
    return varint(field << 3) + varint(n)


def text(field, s):
    data = s.encode() if isinstance(s, str) else s
    return varint((field << 3) | 2) + varint(len(data)) + data


def name(tenant, key):
    return text(1, tenant) + text(2, key)


def call(method, caller, payload=b""):
    assert len(payload) < 65536
    return bytes([method, caller, len(payload) & 0xFF, len(payload) >> 8]) + payload


def advance(ms):
    # The payload is empty; the length field carries the milliseconds - 1.
    return bytes([ADVANCE, 0, (ms - 1) & 0xFF, (ms - 1) >> 8])


def store(client, domain=""):
    return (call(REGISTER, client, text(1, f"h{client}") + text(2, domain)) +
            call(MOUNT, client, uint(1, client) + text(2, f"s{client}") + text(3, f"h{client}") +
                 text(4, domain) + uint(5, 1 << 20) + text(6, f"tcp://127.0.0.1:{9000 + client}") +
                 uint(7, 1)))


def put(client, key, version, size=4096, preferred=(), tenant=""):
    body = text(1, name(tenant, key)) + uint(2, size) + uint(3, 1)
    for s in preferred:
        body += uint(4, s)
    return (call(PUT_START, client, body) +
            call(PUT_END, client, text(1, name(tenant, key)) + uint(2, version)))


def get(requester, key, domain="", tenant=""):
    return call(GET, NO_CALLER, text(1, name(tenant, key)) + uint(2, requester) + text(3, domain))


def fence(task, version, lease):
    return uint(1, task) + uint(2, version) + uint(3, lease)


SEEDS = {
    # Three stores, one object, reads that cross the hit count, the admission
    # worker (clock advance), the source fetching its task and running the
    # dynamic copy with the fence the master issued (task 1, version 1,
    # lease 1).
    "cluster_hot_key_copy": (
        store(1) + store(2) + store(3, "d1") + put(1, "k", 1, preferred=[1]) +
        b"".join(get(2, "k") for _ in range(8)) + advance(200) +
        call(FETCH, 1, uint(1, 8)) + call(DYN_START, 1, fence(1, 1, 1)) +
        call(DYN_END, 1, fence(1, 1, 1)) + call(MARK_COMPLETE, 1, uint(1, 1) + uint(2, 1)) +
        call(LIST, NO_CALLER) + get(3, "k", "d1")),
    # Stale and foreign fences: wrong version, wrong lease, the wrong caller.
    "stale_fences": (
        store(1) + store(2) + put(1, "k", 1) + b"".join(get(2, "k") for _ in range(8)) +
        advance(200) + call(FETCH, 1, uint(1, 8)) + call(DYN_START, 2, fence(1, 1, 1)) +
        call(DYN_START, 1, fence(1, 7, 1)) + call(DYN_START, 1, fence(1, 1, 9)) +
        call(DYN_REVOKE, 1, fence(1, 1, 1)) + call(COPY_START, 1, fence(1, 1, 0)) +
        call(COPY_END, 1, fence(1, 1, 0)) + call(COPY_REVOKE, 1, fence(1, 1, 0))),
    # Calls without a valid identity: none, "0", "-1", "x".
    "unauthenticated": (
        store(1) + call(REGISTER, NO_CALLER, text(1, "h9")) + call(MOUNT, BAD_ZERO, uint(1, 9)) +
        call(PUT_START, BAD_NEGATIVE, text(1, name("", "k")) + uint(2, 10) + uint(3, 1)) +
        call(HEARTBEAT, BAD_TEXT) + call(FETCH, NO_CALLER, uint(1, 1)) + call(PING, NO_CALLER)),
    # Batches, tenants, removes, revoked and unfinished puts, unmounts.
    "batch_tenants_remove": (
        store(1) + store(2, "d1") + put(1, "a", 1) + put(2, "b", 2, tenant="t1") +
        call(BATCH_GET, NO_CALLER, text(1, name("", "a")) + text(1, name("t1", "b")) +
             text(1, name("", "missing")) + uint(2, 2) + text(3, "d1")) +
        call(PUT_START, 1, text(1, name("", "c")) + uint(2, 100) + uint(3, 2)) +
        call(PUT_REVOKE, 1, text(1, name("", "c")) + uint(2, 3)) +
        call(REMOVE, NO_CALLER, text(1, name("", "a"))) + advance(5000) + advance(5000) +
        call(REMOVE, NO_CALLER, text(1, name("", "a"))) + call(UNMOUNT, 2, uint(1, 2)) +
        call(LIST, NO_CALLER)),
    # Batch puts: a fit and a key too large for any segment, the fit ended
    # and a stale fence refused per key, then the other revoked; a read.
    "batch_puts": (
        store(1) + store(2) +
        call(BATCH_PUT_START, 1, text(1, name("", "a")) + text(1, name("", "b")) +
             uint(2, 100) + uint(2, 1 << 30) + uint(3, 1)) +
        call(BATCH_PUT_END, 1, text(1, text(1, name("", "a")) + uint(2, 1)) +
             text(1, text(1, name("", "z")) + uint(2, 9))) +
        call(BATCH_PUT_START, 2, text(1, name("t1", "c")) + uint(2, 200) + uint(3, 1)) +
        call(BATCH_PUT_REVOKE, 2, text(1, text(1, name("t1", "c")) + uint(2, 2))) +
        get(2, "a") + call(LIST, NO_CALLER)),
    # Malformed payloads: a truncated sub-message, a wrong wire type, a huge
    # length prefix, an over-long varint, an oversized key.
    "malformed": (
        store(1) + call(GET, NO_CALLER, b"\x0a\x05\x12\x03k") +
        call(PUT_START, 1, b"\x10\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01") +
        call(MOUNT, 1, b"\x0a\xff\xff\xff\xff\x0f") +
        call(GET, NO_CALLER, b"\x08" + b"\xff" * 11) +
        call(GET, NO_CALLER, text(1, name("", "k" * 5000))) +
        call(FETCH, 1, uint(1, 1 << 40))),
}


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus")
    out = os.path.join(root, "master_rpc")
    os.makedirs(out, exist_ok=True)
    for seed, data in SEEDS.items():
        with open(os.path.join(out, seed), "wb") as f:
            f.write(data)
    print(f"wrote {len(SEEDS)} seeds to {out}")


if __name__ == "__main__":
    main()
