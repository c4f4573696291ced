#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf/cuda/device_check.sh: verify ferry's CUDA path on a machine with an NVIDIA GPU, in one
# command and under 5 minutes: build (Release, sm_90 + sm_75 with PTX) in its own build folder,
# run the gpu-labelled tests and the cuda_transfer benchmark, print one table. Exits non-zero
# when there is no GPU, the build fails, a test fails or the benchmark fails.
#
#   bash perf/cuda/device_check.sh                # from any checkout (needs the CUDA Toolkit and
#                                                 # ferry's build deps: `bash setup.sh deps`)
#   bash perf/cuda/device_check.sh --build-only   # configure and build only (no GPU needed)
#
# Environment: BUILD_DIR (default <repo>/build-device-check), JOBS (default nproc),
# CUDA_ARCHS (default "90;75"), BENCH_ARGS (default "--batches 200 --reps 3 --images 1024").
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${BUILD_DIR:-$root/build-device-check}"
jobs="${JOBS:-$(nproc)}"
archs="${CUDA_ARCHS:-90;75}"
bench_args="${BENCH_ARGS:---batches 200 --reps 3 --images 1024}"
build_only=0
[[ "${1:-}" == "--build-only" ]] && build_only=1

rows=()
row() { rows+=("| $1 | $2 |"); }
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

# --- 2. the toolkit and the build ------------------------------------------------------------
nvcc="$(command -v nvcc || true)"
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
if [[ -z "$nvcc" ]]; then
    row "CUDA Toolkit" "not found (no nvcc on PATH or in /usr/local/cuda/bin)"
    fail "no CUDA Toolkit"
fi
row "CUDA Toolkit" "$("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p') ($nvcc)"

mkdir -p "$build/device_check" || fail "cannot make $build/device_check"
logs="$build/device_check"
t0=$SECONDS
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if ! cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
        -DFERRY_CUDA=ON -DCMAKE_CUDA_COMPILER="$nvcc" -DCMAKE_CUDA_ARCHITECTURES="$archs" \
        -DFERRY_BUILD_TESTS=ON -DFERRY_BUILD_EXAMPLES=OFF -DFERRY_BUILD_PERF=ON \
        -DFERRY_VIDEO=OFF >"$logs/configure.log" 2>&1; then
    tail -n 30 "$logs/configure.log" >&2
    fail "configure failed (log: $logs/configure.log; missing deps? try \`bash setup.sh deps\`)"
fi
if ! cmake --build "$build" -j"$jobs" --target cuda_tests cuda_transfer >"$logs/build.log" 2>&1; then
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
if timeout 150 "$build/tests/cuda/cuda_tests" --run_test=@gpu --report_level=detailed \
        >"$logs/gpu-tests.log" 2>&1; then
    gpu_result="passed"
else
    gpu_result="**FAILED**"
    status=1
fi
if grep -q "SKIPPED gpu cases" "$logs/gpu-tests.log"; then
    gpu_result="**SKIPPED** (ferry sees no CUDA device although nvidia-smi does: driver/runtime mismatch?)"
    status=1
fi
counts="$(grep -Eo '[0-9]+ test cases? out of [0-9]+ (passed|failed|skipped)' "$logs/gpu-tests.log" | head -n 3 | paste -sd ',' -)"
row "gpu tests (label gpu)" "$gpu_result: $counts, $((SECONDS - t0)) s"
[[ $status != 0 ]] && tail -n 40 "$logs/gpu-tests.log" >&2

if timeout 60 "$build/tests/cuda/cuda_tests" --run_test='!@gpu' --report_level=short \
        >"$logs/host-tests.log" 2>&1; then
    row "host tests (label cuda)" "passed: $(grep -Eo '[0-9]+ test cases? out of [0-9]+ passed' "$logs/host-tests.log" | head -n1)"
else
    row "host tests (label cuda)" "**FAILED** (log: $logs/host-tests.log)"
    status=1
fi

# --- 4. the benchmark ------------------------------------------------------------------------
t0=$SECONDS
# shellcheck disable=SC2086  # BENCH_ARGS is a list of words
if timeout 200 "$build/perf/cuda_transfer" $bench_args >"$logs/bench.log" 2>&1; then
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
    row "benchmark" "cuda_transfer $bench_args: $((SECONDS - t0)) s"
else
    tail -n 30 "$logs/bench.log" >&2
    row "benchmark" "**FAILED** (log: $logs/bench.log)"
    status=1
fi

if [[ $status == 0 ]]; then
    row "result" "**passed**"
    table
    exit 0
fi
fail "see the rows above"
