#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf/cuda/device_check.sh: verify ferry's CUDA path on a machine with an NVIDIA GPU, in one
# command and under 5 minutes: build (Release, sm_90 + sm_75 with PTX) in its own build folder,
# run the gpu-labelled tests, the cuda_transfer benchmark, the image trainer's GPU model check and
# one short epoch of the image trainer on the GPU (against the same epoch on the CPU), print each
# row as it is measured and one table at the end. It decides: exits non-zero when there is no
# GPU, the driver is too old for the toolkit, the build fails, a test fails or is skipped, the
# benchmark fails or misses a target it prints (to_cuda pinned >= 90% of raw pinned H2D; the
# decode pipeline keeps >= 0.90 of its rate with to_cuda), the trainer has no data, or its GPU
# run fails or disagrees with its CPU run (test accuracy within 0.03 and >= 0.5, loss within
# 0.05). Every step has a timeout, and the whole check a budget (BUDGET_S, default 300 s).
#
#   bash perf/cuda/device_check.sh                # from any checkout (needs the CUDA Toolkit and
#                                                 # ferry's build deps: `bash setup.sh deps`)
#   bash perf/cuda/device_check.sh --build-only   # configure and build only (no GPU needed)
#
# Environment: BUILD_DIR (default <repo>/build-device-check), JOBS (default nproc),
# CUDA_ARCHS (default "90;75"), BENCH_ARGS (default "--batches 200 --reps 3 --images 1024"),
# TRAINER_ARGS (default "--epochs 1 --max-items 10000 --max-test-items 2000 --seed 3"),
# TRAINER_DATA (an image folder for the trainer; default Fashion-MNIST, unpacked into the build
# folder on first use from Debian's dataset-fashion-mnist; without either the check fails),
# BUDGET_S (default 300: seconds for the whole check; each step's timeout is cut to what is left).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-device-check}"
jobs="${JOBS:-$(nproc)}"
archs="${CUDA_ARCHS:-90;75}"
bench_args="${BENCH_ARGS:---batches 200 --reps 3 --images 1024}"
trainer_args="${TRAINER_ARGS:---epochs 1 --max-items 10000 --max-test-items 2000 --seed 3}"
build_only=0
[[ "${1:-}" == "--build-only" ]] && build_only=1
deadline=$((SECONDS + ${BUDGET_S:-300}))

rows=()
# Each row is printed when it is known (a later hang or crash loses nothing) and kept for the
# table at the end.
row() {
    rows+=("| $1 | $2 |")
    echo "device_check: $1: $2"
}
# limit N: N seconds, or what is left of the budget if that is less (1 once it is spent, so that
# the step times out and fails at once).
limit() {
    local left=$((deadline - SECONDS))
    ((left < 1)) && left=1
    ((left < $1)) && echo "$left" || echo "$1"
}
table() {
    echo
    echo "## ferry device check ($(date -u +%Y-%m-%dT%H:%MZ), $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo 'no git'))"
    echo
    echo "| check | result |"
    echo "|---|---|"
    printf '%s\n' "${rows[@]}"
}
fail() {
    row "result" "**FAILED**: $1"
    table
    echo "device_check: FAILED: $1" >&2
    exit 1
}

# --- 1. a GPU? -------------------------------------------------------------------------------
gpu=""
if command -v nvidia-smi >/dev/null 2>&1; then
    gpu="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -n1)"
fi
if [[ -z "$gpu" ]]; then
    msg="no NVIDIA GPU here (nvidia-smi is missing or lists no device)"
    if [[ $build_only == 0 ]]; then
        echo "device_check: $msg: nothing to check. Run it on a machine with an NVIDIA GPU, or pass --build-only." >&2
        row "GPU" "none: $msg"
        fail "no GPU"
    fi
    row "GPU" "none (--build-only)"
else
    row "GPU" "$gpu"
fi
driver_major="$(cut -d, -f2 <<<"$gpu" | xargs | cut -d. -f1)"

# --- 2. the toolkit and the build ------------------------------------------------------------
nvcc="$(command -v nvcc || true)"
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -z "$nvcc" ]]; then
    row "CUDA Toolkit" "not found (no nvcc on PATH or in /usr/local/cuda/bin)"
    fail "no CUDA Toolkit"
fi
toolkit="$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')"
row "CUDA Toolkit" "$toolkit ($nvcc)"
# CUDA 13 runs only on drivers of the R580 branch or newer; older ones make device_count() 0.
if [[ $build_only == 0 && -n "${driver_major:-}" && "${toolkit%%.*}" -ge 13 && "$driver_major" -lt 580 ]]; then
    fail "driver R$driver_major is too old for CUDA $toolkit (CUDA 13 needs R580 or newer)"
fi

mkdir -p "$build/device_check" || fail "cannot make $build/device_check"
logs="$build/device_check"
t0=$SECONDS
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if ! timeout "$(limit 60)" cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DFERRY_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$archs" \
        -DFERRY_BUILD_TESTS=ON -DFERRY_BUILD_EXAMPLES=ON -DFERRY_BUILD_PERF=ON \
        -DFERRY_VIDEO=OFF -DFERRY_HTTP=OFF >"$logs/configure.log" 2>&1; then
    tail -n 30 "$logs/configure.log" >&2
    fail "configure failed (log: $logs/configure.log; missing deps? try \`bash setup.sh deps\`)"
fi
if ! timeout "$(limit 200)" cmake --build "$build" -j"$jobs" --target cuda_tests cuda_transfer image_trainer \
        gpu_model_check >"$logs/build.log" 2>&1; then
    grep -E "error|Error" "$logs/build.log" | head -n 30 >&2
    fail "build failed (log: $logs/build.log)"
fi
row "build" "ok in $((SECONDS - t0)) s (Release, CMAKE_CUDA_ARCHITECTURES=\"$archs\", $build)"

if [[ $build_only == 1 ]]; then
    row "result" "built; tests and benchmark not run (--build-only)"
    table
    exit 0
fi

# --- 3. tests ---------------------------------------------------------------------------------
status=0
t0=$SECONDS
if timeout "$(limit 150)" "$build/tests/cuda/cuda_tests" --run_test=@gpu --report_level=detailed \
        >"$logs/gpu-tests.log" 2>&1; then
    gpu_result="passed"
else
    gpu_result="**FAILED**"
    status=1
fi
if grep -q "SKIPPED gpu cases" "$logs/gpu-tests.log"; then
    gpu_result="**SKIPPED**: ferry sees no CUDA device although nvidia-smi does: driver R${driver_major:-?} with CUDA $toolkit (CUDA 13 needs R580+; $(grep -m1 -o 'no CUDA device[^)]*)' "$logs/gpu-tests.log" || echo 'see the log'))"
    status=1
fi
counts="$(grep -Eo '[0-9]+ test cases? out of [0-9]+ (passed|failed|skipped)' "$logs/gpu-tests.log" | head -n 3 | paste -sd ',' -)"
row "gpu tests (label gpu)" "$gpu_result: $counts, $((SECONDS - t0)) s"
[[ $status != 0 ]] && tail -n 40 "$logs/gpu-tests.log" >&2

if timeout "$(limit 60)" "$build/tests/cuda/cuda_tests" --run_test='!@gpu' --report_level=short \
        >"$logs/host-tests.log" 2>&1; then
    row "host tests (label cuda)" "passed: $(grep -Eo '[0-9]+ test cases? out of [0-9]+ passed' "$logs/host-tests.log" | head -n1)"
else
    row "host tests (label cuda)" "**FAILED** (log: $logs/host-tests.log)"
    status=1
fi

# --- 4. the image trainer's GPU model ----------------------------------------------------------
t0=$SECONDS
if timeout "$(limit 60)" "$build/examples/gpu_model_check" >"$logs/gpu-model.log" 2>&1; then
    row "gpu_model_check" "passed: one step agrees with the CPU model (3 shapes), toy problem learnt, $((SECONDS - t0)) s"
else
    grep -E "CHECK FAILED|SKIPPED" "$logs/gpu-model.log" | head -n 10 >&2
    row "gpu_model_check" "**FAILED** (log: $logs/gpu-model.log)"
    status=1
fi

# --- 5. one short epoch of the image trainer, on the GPU and then on the CPU ------------------
# Same seed, so the same init, shuffle, crops and batches: the two runs should end within float
# rounding of each other (accuracy within 0.03).
trainer_data=()
if [[ -n "${TRAINER_DATA:-}" ]]; then
    trainer_data=(--data "$TRAINER_DATA")
elif [[ -f "$build/fashion-mnist-cache/fashion-mnist/.complete" ||
        -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
    trainer_data=(--cache "$build/fashion-mnist-cache")
fi
if [[ ${#trainer_data[@]} == 0 ]]; then
    row "image_trainer" "**FAILED**: no data (apt-get install dataset-fashion-mnist, or set TRAINER_DATA)"
    status=1
else
    declare -A acc loss rate
    for dev in cuda cpu; do
        t0=$SECONDS
        # shellcheck disable=SC2086  # TRAINER_ARGS is a list of words
        if timeout "$(limit 150)" "$build/examples/image_trainer" --device "$dev" "${trainer_data[@]}" \
                --no-progress $trainer_args >"$logs/trainer-$dev.log" 2>&1; then
            last="$(grep -E '^epoch [0-9]+/[0-9]+ ' "$logs/trainer-$dev.log" | tail -n1)"
            acc[$dev]="$(sed -n 's/.*test accuracy \([0-9.]*\).*/\1/p' <<<"$last")"
            loss[$dev]="$(sed -n 's/.*loss \([0-9.]*\).*/\1/p' <<<"$last")"
            rate[$dev]="$(sed -n 's/.* \([0-9]*\) img\/s.*/\1/p' <<<"$last")"
            where="$(sed -n 's/^training on: //p' "$logs/trainer-$dev.log" | head -n1)"
            row "image_trainer --device $dev" "$where: loss ${loss[$dev]}, test accuracy ${acc[$dev]}, ${rate[$dev]} img/s ($trainer_args, $((SECONDS - t0)) s)"
            if [[ $dev == cuda && $where != cuda:* ]]; then
                row "image_trainer --device cuda" "**FAILED**: trained on '$where', not a GPU"
                status=1
            fi
        else
            tail -n 20 "$logs/trainer-$dev.log" >&2
            row "image_trainer --device $dev" "**FAILED** (log: $logs/trainer-$dev.log)"
            status=1
        fi
    done
    if [[ -n "${acc[cuda]:-}" && -n "${acc[cpu]:-}" ]]; then
        if awk -v g="${acc[cuda]}" -v c="${acc[cpu]}" -v gl="${loss[cuda]}" -v cl="${loss[cpu]}" \
                'BEGIN { d = g - c; l = gl - cl; exit !(d <= 0.03 && d >= -0.03 && g >= 0.5 && l <= 0.05 && l >= -0.05) }'; then
            row "image_trainer GPU vs CPU" "agree: accuracy ${acc[cuda]} vs ${acc[cpu]}, loss ${loss[cuda]} vs ${loss[cpu]} (bounds: accuracy within 0.03 and >= 0.5, loss within 0.05)"
        else
            row "image_trainer GPU vs CPU" "**DIFFER**: accuracy ${acc[cuda]} vs ${acc[cpu]} (must be within 0.03, GPU >= 0.5), loss ${loss[cuda]} vs ${loss[cpu]} (must be within 0.05)"
            status=1
        fi
    fi
fi

# --- 6. the benchmark ------------------------------------------------------------------------
# cuda_transfer prints each row as it is measured and exits 1 on a failed row or a missed target;
# the rows it printed are reported either way.
t0=$SECONDS
# shellcheck disable=SC2086  # BENCH_ARGS is a list of words
timeout "$(limit 200)" "$build/perf/cuda_transfer" $bench_args >"$logs/bench.log" 2>&1
bench_rc=$?
while IFS= read -r line; do
    # "| path | GB/s | of raw pinned |" rows and "| pipeline | images/s | ratio |" rows
    name="$(cut -d'|' -f2 <<<"$line" | xargs)"
    a="$(cut -d'|' -f3 <<<"$line" | xargs)"
    b="$(cut -d'|' -f4 <<<"$line" | xargs)"
    case "$name" in
        raw*|to_cuda*) row "H2D $name" "$a GB/s ($b of raw pinned)" ;;
        without*|with*) row "decode pipeline $name" "$a images/s (ratio $b)" ;;
    esac
done < <(grep -E '^\| (raw|to_cuda|without|with) ' "$logs/bench.log")
while IFS= read -r line; do
    row "target" "${line#target: }"
done < <(grep -E '^target: ' "$logs/bench.log")
if [[ $bench_rc == 0 ]]; then
    row "benchmark" "passed: cuda_transfer $bench_args, $((SECONDS - t0)) s"
else
    tail -n 30 "$logs/bench.log" >&2
    why="exit $bench_rc"
    ((bench_rc == 124)) && why="timed out"
    grep -q 'MISSED' "$logs/bench.log" && why="a target was missed"
    grep -q '| FAILED |' "$logs/bench.log" && why="a row failed"
    row "benchmark" "**FAILED** ($why; log: $logs/bench.log)"
    status=1
fi

if [[ $status == 0 ]]; then
    row "result" "**passed**"
    table
    exit 0
fi
fail "see the rows above"
