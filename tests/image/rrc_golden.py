#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Golden boxes for ferry's random_resized_crop_box, computed independently of ferry's code.

Prints the C++ table that tests/image/random_resized_crop.cpp
(random_resized_crop_box_matches_torchvision_golden_boxes) holds. Run it with any Python 3:

    python3 tests/image/rrc_golden.py

It has two parts, neither taken from ferry's C++:
  * std::mt19937_64 in pure Python, from the C++ standard's definition ([rand.eng.mt],
    [rand.predef]); checked against the standard's required value (the 10000th output of a
    default-seeded engine is 9981545732273789042).
  * torchvision's RandomResizedCrop.get_params (torchvision 0.14, transforms.py), line for line,
    with torch's two random calls replaced by the draws ferry documents for them:
      torch.empty(1).uniform_(a, b)    -> a + (b - a) * u,  u = (next64 >> 11) * 2**-53
      torch.randint(0, n, size=(1,))   -> next64 % n
    (ferry draws from std::mt19937_64 rather than torch's generator, so the same seed gives other
    boxes than torch would; what is pinned is the algorithm: the order and number of draws, the
    10 tries, the acceptance test, round-half-even, the i-before-j order, and the fallback.)

One deliberate difference: torchvision's fallback can produce a zero-sized box (w = 1, ratio 3..4:
h = round(1 / 3) = 0); ferry clamps the box to at least 1 x 1 and at most the image. The script
applies that clamp last and marks the case "clamped" so the difference is visible.
"""

import math

MASK64 = (1 << 64) - 1


class MT19937_64:
    """std::mt19937_64: w=64, n=312, m=156, r=31 and the standard's tempering constants."""

    n, m = 312, 156
    a = 0xB5026F5AA96619E9
    upper, lower = 0xFFFFFFFF80000000, 0x7FFFFFFF

    def __init__(self, seed=5489):
        self.mt = [seed & MASK64]
        for i in range(1, self.n):
            prev = self.mt[-1]
            self.mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & MASK64)
        self.i = self.n

    def __call__(self):
        if self.i >= self.n:
            for k in range(self.n):
                y = (self.mt[k] & self.upper) | (self.mt[(k + 1) % self.n] & self.lower)
                v = self.mt[(k + self.m) % self.n] ^ (y >> 1)
                if y & 1:
                    v ^= self.a
                self.mt[k] = v
            self.i = 0
        x = self.mt[self.i]
        self.i += 1
        x ^= (x >> 29) & 0x5555555555555555
        x ^= (x << 17) & 0x71D67FFFEDA60000
        x ^= (x << 37) & 0xFFF7EEE000000000
        x ^= x >> 43
        return x & MASK64


def check_engine():
    g = MT19937_64()
    for _ in range(9999):
        g()
    assert g() == 9981545732273789042, "mt19937_64 does not match the C++ standard"


def get_params(gen, height, width, scale, ratio):
    """torchvision 0.14 RandomResizedCrop.get_params; returns (i, j, h, w, path)."""

    def uniform_(a, b):  # torch.empty(1).uniform_(a, b).item()
        u = (gen() >> 11) * 2.0**-53
        return a + (b - a) * u

    def randint(low, high):  # torch.randint(low, high, size=(1,)).item()
        return low + gen() % (high - low)

    area = height * width
    log_ratio = (math.log(ratio[0]), math.log(ratio[1]))
    for attempt in range(10):
        target_area = area * uniform_(scale[0], scale[1])
        aspect_ratio = math.exp(uniform_(log_ratio[0], log_ratio[1]))

        w = int(round(math.sqrt(target_area * aspect_ratio)))
        h = int(round(math.sqrt(target_area / aspect_ratio)))

        if 0 < w <= width and 0 < h <= height:
            i = randint(0, height - h + 1)
            j = randint(0, width - w + 1)
            return i, j, h, w, "try %d" % (attempt + 1)

    # Fallback to central crop
    in_ratio = float(width) / float(height)
    if in_ratio < min(ratio):
        w = width
        h = int(round(w / min(ratio)))
    elif in_ratio > max(ratio):
        h = height
        w = int(round(h * max(ratio)))
    else:  # whole image
        w = width
        h = height
    i = (height - h) // 2
    j = (width - w) // 2
    return i, j, h, w, "fallback"


def ferry_box(seed, width, height, scale, ratio):
    gen = MT19937_64(seed)
    i, j, h, w, path = get_params(gen, height, width, scale, ratio)
    # ferry's one documented difference: the fallback box is at least 1 x 1.
    cw, ch = max(1, min(w, width)), max(1, min(h, height))
    if (cw, ch) != (w, h):
        path += ", clamped (torchvision: %dx%d)" % (w, h)
        w, h = cw, ch
        i, j = (height - h) // 2, (width - w) // 2
    return (j, i, w, h), gen(), path


# (seed, width, height, scale, ratio): defaults, photo sizes, narrow ranges, extreme shapes, and
# ranges that no try can satisfy (the fallback, in each of its three branches).
CASES = [
    (0, 500, 375, (0.08, 1.0), (3 / 4, 4 / 3)),
    (1, 500, 375, (0.08, 1.0), (3 / 4, 4 / 3)),
    (2, 500, 375, (0.08, 1.0), (3 / 4, 4 / 3)),
    (42, 224, 224, (0.08, 1.0), (3 / 4, 4 / 3)),
    (7, 1920, 1080, (0.08, 1.0), (3 / 4, 4 / 3)),
    (123456789, 97, 61, (0.08, 1.0), (3 / 4, 4 / 3)),
    (2**64 - 1, 640, 480, (0.08, 1.0), (3 / 4, 4 / 3)),
    (3, 375, 500, (0.25, 0.5), (0.5, 2.0)),
    (4, 800, 600, (0.5, 0.5), (1.0, 1.0)),
    (5, 256, 256, (0.9, 1.0), (3 / 4, 4 / 3)),
    (6, 1000, 10, (0.08, 1.0), (3 / 4, 4 / 3)),
    (8, 10, 1000, (0.08, 1.0), (3 / 4, 4 / 3)),
    (9, 33, 17, (0.01, 0.02), (0.1, 10.0)),
    (10, 1, 1, (0.08, 1.0), (3 / 4, 4 / 3)),
    (11, 3, 1000, (0.5, 1.0), (3 / 4, 4 / 3)),
    (12, 100, 100, (0.9, 1.0), (4.0, 5.0)),
    (13, 300, 100, (0.9, 1.0), (0.1, 0.2)),
    (14, 50, 50, (1.0, 1.0), (0.5, 0.6)),
    (15, 120, 100, (1.0, 1.0), (1.1, 1.3)),
    (19, 1000, 1000, (1.0, 1.0), (0.5, 2.0)),
    (16, 1, 10, (0.9, 1.0), (3.0, 4.0)),
    (17, 4032, 3024, (0.08, 1.0), (3 / 4, 4 / 3)),
    (18, 500, 375, (0.35, 1.0), (3 / 4, 4 / 3)),
]


def main():
    check_engine()
    for seed, width, height, scale, ratio in CASES:
        (x, y, w, h), after, path = ferry_box(seed, width, height, scale, ratio)
        print(
            "        {%dULL, %d, %d, {%r, %r}, {%r, %r},  // %s\n"
            "         {%d, %d, %d, %d}, %dULL},"
            % (seed, width, height, scale[0], scale[1], ratio[0], ratio[1], path, x, y, w, h,
               after)
        )


if __name__ == "__main__":
    main()
