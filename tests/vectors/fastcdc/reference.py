#!/usr/bin/env python3
"""An independent reference of ctxsnap's chunker (docs/FORMAT.md 8.6), written
from the spec, not from lib/format/fastcdc.ts: it prints the vectors of
tests/vectors/fastcdc/vectors.json, which tests/format/fastcdc_test.ts checks the
TypeScript chunker against.

    python3 tests/vectors/fastcdc/reference.py > tests/vectors/fastcdc/vectors.json
"""
import hashlib
import json

MIN, AVG, MAX = 64 * 1024, 256 * 1024, 1024 * 1024
MASK_S, MASK_L = 0xFFFFF000, 0xFFFF0000
GEAR = [
    int.from_bytes(hashlib.sha256(b"ctxsnap-fastcdc-gear/v1" + bytes([i])).digest()[:4], "big")
    for i in range(256)
]


def xorshift(seed, length):
    out = bytearray(length)
    x = seed
    for i in range(length):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[i] = x & 0xFF
    return out


def cuts(data):
    result, start, n = [], 0, len(data)
    while start < n:
        rest = n - start
        if rest <= MIN:
            start = n
            result.append(start)
            continue
        end = min(rest, MAX)
        normal = min(end, AVG)
        h, i, cut = 0, MIN, None
        while i < end:
            h = ((h << 1) + GEAR[data[start + i]]) & 0xFFFFFFFF
            if h & (MASK_S if i < normal else MASK_L) == 0:
                cut = i + 1
                break
            i += 1
        start += cut if cut is not None else end
        result.append(start)
    return result


def case(name, data, source):
    return {
        "name": name,
        "input": source,
        "sha256": hashlib.sha256(data).hexdigest(),
        "cuts": cuts(data),
    }


cases = [
    case("empty", b"", {"kind": "zeros", "length": 0}),
    case("shorter than the minimum", bytes(1000), {"kind": "zeros", "length": 1000}),
    case("exactly the minimum", xorshift(7, MIN), {"kind": "xorshift32", "seed": 7, "length": MIN}),
    case("constant bytes cut at the maximum", bytes(3 * MAX + 5), {"kind": "zeros", "length": 3 * MAX + 5}),
    case("4 MiB of noise", xorshift(1, 4 * MAX), {"kind": "xorshift32", "seed": 1, "length": 4 * MAX}),
    case("8 MiB and a tail of noise", xorshift(2, 8 * MAX + 12345), {"kind": "xorshift32", "seed": 2, "length": 8 * MAX + 12345}),
]
edited = xorshift(3, 6 * MAX)
edited[3_000_000] ^= 0xFF
cases.append(case("6 MiB of noise", xorshift(3, 6 * MAX), {"kind": "xorshift32", "seed": 3, "length": 6 * MAX}))
cases.append(case("the same with byte 3000000 inverted", edited, {"kind": "xorshift32", "seed": 3, "length": 6 * MAX, "invert": 3_000_000}))
gear_digest = hashlib.sha256(b"".join(g.to_bytes(4, "big") for g in GEAR)).hexdigest()
print(json.dumps({
    "params": {"min": MIN, "avg": AVG, "max": MAX, "mask_s": MASK_S, "mask_l": MASK_L},
    "gear_sha256": gear_digest,
    "cases": cases,
}, indent=1))
