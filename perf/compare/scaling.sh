#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf/compare/scaling.sh: ferry's scaling curve (images/s and CPU per image against threads) on
# the ImageNet-like set and the FFCV-like one, in one command from any checkout whose build
# dependencies are installed (`bash setup.sh deps`; python3-matplotlib for the plots), within a
# time budget: meant for a machine with more cores than a CI VM (e.g. the lent GPU machine, next
# to perf/cuda/device_check.sh).
#
#   bash perf/compare/scaling.sh [scaling.py options, e.g. --threads 1,2,4,8,16 --reps 3]
#
# Environment: BUILD_DIR (default <repo>/build-scaling), IMAGES (default 2000), BUDGET_S (default
# 420: seconds for the whole script; each set's run is cut to what is left). Writes
# perf/compare/results/scaling.{md,json,png} and scaling-ffcv.{md,json,png}.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-scaling}"
images="${IMAGES:-2000}"
deadline=$((SECONDS + ${BUDGET_S:-420}))
left() { echo $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)); }

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_PERF=ON \
    -DFERRY_BUILD_TESTS=OFF -DFERRY_BUILD_EXAMPLES=OFF >/dev/null
timeout "$(left)" cmake --build "$build" --parallel "$(nproc)" --target compare_runner photo_set_gen
data="${TMPDIR:-/tmp}/ferry-scaling"
# The generation is not timed: both sets first, then the runs share what is left.
"$build/perf/photo_set_gen" "$data/imagenet" "$images" >/dev/null
"$build/perf/photo_set_gen" "$data/ffcv" "$images" --ffcv >/dev/null
status=0
for set in imagenet ffcv; do
    share="$(left)"
    [[ "$set" == imagenet ]] && share=$((share / 2))
    timeout "$share" /usr/bin/python3 "$root/perf/compare/scaling.py" \
        --runner "$build/perf/compare_runner" --data "$data/$set" --set "$set" \
        --images "$images" --out "$root/perf/compare/results" "$@" || status=$?
done
exit "$status"
