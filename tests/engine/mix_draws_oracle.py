#!/usr/bin/env python3
"""The draws of small weighted mixes, written from mix_sampler's documented rule, for
tests/engine/mix_draws.cpp (an oracle that is not the code under test).

A position's draw: splitmix64's finaliser over a key from (seed, epoch) and the position; its top
53 bits make u in [0, 1); the source is the first whose running weight sum (over the sources still
in the draw, in list order) is above u * total. Sources that are used up leave the draw
(all_exhausted) or end the epoch when drawn (first_exhausted). No shuffle, one rank: the c-th draw
of a source takes its item c.
"""
import sys

M = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(z):
    z &= M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def u_at(seed, epoch, position):
    key = mix(seed ^ mix(epoch + GOLDEN))
    return (mix(key ^ mix(position + GOLDEN)) >> 11) * 2.0**-53


def epoch_draws(sizes, weights, seed, epoch, stop, limit):
    taken = [0] * len(sizes)
    in_draw = [w > 0 and (stop == "first_exhausted" or n > 0) for n, w in zip(sizes, weights)]
    out = []
    while len(out) < limit:
        total = sum(w for w, d in zip(weights, in_draw) if d)
        if total <= 0:
            break
        at = u_at(seed, epoch, len(out)) * total
        run, pick = 0.0, None
        for k, w in enumerate(weights):
            if in_draw[k]:
                run += w
                if run > at:
                    pick = k
                    break
        if pick is None:  # rounding onto the total: the last source in the draw
            pick = max(k for k in range(len(weights)) if in_draw[k])
        if taken[pick] == sizes[pick]:
            if stop == "first_exhausted":
                break
            in_draw[pick] = False
            continue
        out.append((pick, taken[pick]))
        taken[pick] += 1
        if stop == "all_exhausted" and taken[pick] == sizes[pick]:
            in_draw[pick] = False
    return out


if __name__ == "__main__":
    cases = [
        ("two sources 0.7 / 0.3, seed 42", [100, 100], [0.7, 0.3], 42, 0, "first_exhausted", 20),
        ("the same mix in epoch 1", [100, 100], [0.7, 0.3], 42, 1, "first_exhausted", 20),
        ("three sources 1 / 2 / 5, seed 7", [3, 4, 20], [1, 2, 5], 7, 0, "all_exhausted", 100),
        ("three sources 1 / 2 / 5, seed 7", [3, 4, 20], [1, 2, 5], 7, 0, "first_exhausted", 100),
        ("two sources 3 / 1, seed 2", [6, 9], [3, 1], 2, 0, "first_exhausted", 100),
    ]
    for what, sizes, weights, seed, epoch, stop, limit in cases:
        d = epoch_draws(sizes, weights, seed, epoch, stop, limit)
        print(f"{what}, epoch {epoch}, {stop}: {len(d)} draws")
        print("  sources:", ", ".join(str(k) for k, _ in d))
        print("  items:  ", ", ".join(f"{{{k}, {i}}}" for k, i in d))
