#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ferry's one entry point on a fresh Debian 12 machine, run as root from the repository root:
#
#   bash setup.sh deps   install what building and testing needs (apt-get; skipped when present)
#   bash setup.sh run    deps + Release build in build/ + run examples/torch_trainer, ferry's
#                        main job: a libtorch CNN trained on Fashion-MNIST image files fed by
#                        ferry (extra arguments go to the trainer: bash setup.sh run --epochs 2)
#   bash setup.sh test   deps + what CI runs (about 23 minutes on 2 cores): a Release
#                        build in build/ (libraries, examples, benchmarks, the torch and mpi
#                        suites, the Python package) and its tests (examples, package, perf,
#                        torch, mpi, python, the tuner's wall-clock cases, alone); the unit
#                        suites (core, engine, image, video, http, shards, cuda) and the
#                        Python package built once more under AddressSanitizer +
#                        UndefinedBehaviorSanitizer (build-asan/: libraries -O1, the suites'
#                        files -O0, unity builds) and run there (the package's suite with the
#                        runtime preloaded into python3); the
#                        decode_image, redact, decode_media, tar_samples, listing and
#                        pipeline_state fuzzers (clang, libFuzzer, build-fuzz/) for 33, 4, 20, 8,
#                        5 and 4 s, two at a time; every build through ccache; exits non-zero on
#                        any failure
#
# Environment switches for `test` (what a change to the engine or the packaging should run once
# before it lands; CI runs the bounded default):
#   FERRY_FULL=1    all of the below but FERRY_SHARED_SUITE and FERRY_SOAK: the unit suites in
#                   build/ (Release) too, libtorch's suite under ASan too, the shared libraries'
#                   package tests, TSan
#   FERRY_RELEASE_SUITES=1   the unit suites in build/ (Release) too
#   FERRY_SHARED=1  build ferry's shared libraries (build-shared/) and run the package tests that
#                   depend on the linkage against them, the .deb packages' test among them
#   FERRY_TSAN=1    also build build-tsan/ and run the engine, cuda, http, video and Python
#                   tests under TSan
#   FERRY_SOAK=1    also run the tests labelled "soak" (long runs) in build/
#   FERRY_SHARED_SUITE=1   in build-shared/, build and run the whole suite (every test, example
#                   and consumer then links only what ferry's shared libraries export)
#   FERRY_FUZZ_SECONDS=N   how long the fuzzers run together (default 74: 33/74 decode_image,
#                   4/74 redact, 20/74 decode_media, 5/74 listing, 4/74 pipeline_state, the
#                   rest tar_samples; 0 skips them)
#   FERRY_SANITIZER_CXX=...   compiler for the sanitizer builds (default g++; Debian 12's clang++ 14
#                   cannot compile libstdc++ 12's std::views, which the tests use)
#   FERRY_CCACHE=0  compile without ccache (by default every build here, and the package tests'
#                   builds of ferry, go through it: the vcpkg and Conan recipe tests then reuse
#                   build/'s objects; its cache is ccache's own, ~/.cache/ccache)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"
readonly root="$PWD"
jobs="$(nproc)"
readonly jobs
readonly started="$SECONDS"

# A new build tree gets Ninja; an existing one keeps the generator it was made with.
export CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}"

# The Python package is built for Debian's python3, which has numpy and torch (a python3 earlier
# on PATH, pyenv's say, may have neither): in build/ and in the sanitized builds, whose suites
# include the package's.
python=()
[[ -x /usr/bin/python3 ]] && python=(-DPython3_EXECUTABLE=/usr/bin/python3)
readonly python

# -D options every build here is configured with: ccache as the compiler launcher (set after
# deps, which installs it).
launcher=()
use_ccache() {
    if [[ "${FERRY_CCACHE:-1}" != 0 ]] && command -v ccache >/dev/null; then
        launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
        # Not the locale in each compile's hash: ctest --build-and-test (the subproject tests)
        # sets LC_ALL and LC_MESSAGES, the builds here do not, and the objects are the same.
        export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:+$CCACHE_SLOPPINESS,}locale"
    else
        launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=)
    fi
}

readonly packages=(
    build-essential g++ cmake ninja-build pkg-config ccache
    libtbb-dev libboost-test-dev librange-v3-dev libdlpack-dev
    libjpeg62-turbo-dev libpng-dev libwebp-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
    zlib1g-dev libcli11-dev dataset-fashion-mnist
    libavformat-dev libavcodec-dev libswscale-dev libswresample-dev libavutil-dev
    ffmpeg libjpeg-turbo-progs python3-pil
    libcurl4-openssl-dev libexpat1-dev libssl-dev
    libarchive-dev zstd python3-boto3
    libopenmpi-dev openmpi-bin
    libtorch-dev libgloo-dev
    python3-dev pybind11-dev python3-pybind11 python3-numpy python3-torch python3-pytest
    python3-torchvision python3-av
    python3-pip python3-setuptools python3-wheel
    clang libclang-rt-14-dev
)

mode="${1:-}"
current_step=""
step() {
    current_step="$*"
    printf '\n==> [%s] %s\n' "$(elapsed)" "$*"
}
on_exit() {
    local rc=$?
    if ((rc != 0)); then
        printf '\nsetup.sh %s: FAILED (exit %d) during: %s\n' "$mode" "$rc" "${current_step:-setup}"
    fi
}
trap on_exit EXIT

usage() {
    sed -n '3,/^set -euo/{/^set -euo/!p}' "$0" | sed 's/^# \{0,1\}//'
}

elapsed() {
    local s=$((SECONDS - started))
    printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# --- deps ------------------------------------------------------------------------------------
installed() { dpkg -s "$1" 2>/dev/null | grep -q '^Status: install ok installed'; }

# The test servers from npm (s3rver, an S3-compatible server the http.s3rver test starts on
# 127.0.0.1), in .test-servers/ (git-ignored); Node.js and npm from Debian where the machine
# has none.
test_servers() {
    if [[ -x .test-servers/node_modules/.bin/s3rver ]]; then
        echo "test servers: s3rver installed"
        return
    fi
    step "deps: npm install s3rver (test server) into .test-servers/"
    npm install --prefix .test-servers --no-audit --no-fund s3rver@3.7.1
}

deps() {
    step "deps: checking ${#packages[@]} Debian packages"
    local missing=() p all=("${packages[@]}")
    # Node.js and npm for the test servers, unless the machine has them (from anywhere).
    command -v npm >/dev/null || all+=(nodejs npm)
    for p in "${all[@]}"; do installed "$p" || missing+=("$p"); done
    if ((${#missing[@]} == 0)); then
        echo "all installed: ${all[*]}"
        test_servers
        return
    fi
    echo "missing: ${missing[*]}"
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || {
            echo "setup.sh deps: run as root (or install sudo) to apt-get install ${missing[*]}" >&2
            return 1
        }
        sudo=(sudo)
    fi
    step "deps: apt-get install ${missing[*]}"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${all[@]}"
    test_servers
}

# --- builds ----------------------------------------------------------------------------------
# release_build [cmake -D options...] [-- cmake --build arguments...]
release_build() {
    local configure=() build=()
    while (($#)) && [[ "$1" != -- ]]; do
        configure+=("$1")
        shift
    done
    (($#)) && shift
    build=("$@")
    step "configure build/ (Release, tests and examples on${configure[*]:+, ${configure[*]}})"
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" -DFERRY_UNITY_TESTS=ON \
        -DFERRY_BUILD_TESTS=ON -DFERRY_BUILD_EXAMPLES=ON -DFERRY_BUILD_PERF=ON "${python[@]}" \
        "${configure[@]}"
    step "build build/${build[*]:+ (${build[*]})}"
    cmake --build build --parallel "$jobs" "${build[@]}"
}

# sanitizer_build DIR SANITIZERS [cmake -D options...]: the libraries and the test suites only,
# eight files to a translation unit (CMake's unity build). The libraries at -O1 (what the
# sanitizers' authors advise: the suites run at a useful speed) with line tables for the reports;
# the suites' own files at -O0 (FERRY_TEST_CXX_FLAGS): compiling them is most of this build, and
# -O1 made it a third longer for a few seconds of test time.
sanitizer_build() {
    local dir="$1" sanitizers="$2" cxx
    shift 2
    cxx="$(command -v "${FERRY_SANITIZER_CXX:-g++}")"
    step "configure $dir/ (-O1, suites -O0, FERRY_SANITIZE=$sanitizers, $cxx${*:+, $*})"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
        -DFERRY_TEST_CXX_FLAGS=-O0 -DCMAKE_UNITY_BUILD=ON -DFERRY_UNITY_TESTS=ON "${launcher[@]}" \
        -DCMAKE_CXX_COMPILER="$cxx" -DFERRY_SANITIZE="$sanitizers" \
        -DFERRY_BUILD_TESTS=ON -DFERRY_BUILD_EXAMPLES=OFF -DFERRY_BUILD_PERF=OFF "${python[@]}" "$@"
    step "build $dir/"
    cmake --build "$dir" --parallel "$jobs"
}

# --- modes -----------------------------------------------------------------------------------
run_mode() {
    deps
    use_ccache
    release_build -- --target torch_trainer
    step "run build/examples/torch_trainer${*:+ $*}"
    "$root/build/examples/torch_trainer" "$@"
    printf '\nsetup.sh run: done in %s\n' "$(elapsed)"
}

test_mode() {
    local done_parts=()
    local full="${FERRY_FULL:-0}"
    deps
    use_ccache

    # The unit suites (core, engine, image, video, http, shards, cuda) are compiled and run once,
    # in the sanitized build below; build/ (Release) builds the libraries, examples, benchmarks
    # and the suites that do not run sanitized (torch, mpi), and runs those, the examples and the
    # package tests. FERRY_FULL=1 (or FERRY_RELEASE_SUITES=1) runs the unit suites in build/ too.
    local release_suites=OFF
    if [[ "$full" == 1 || "${FERRY_RELEASE_SUITES:-0}" == 1 ]]; then
        release_suites=ON
    fi
    release_build "-DFERRY_UNIT_TESTS=$release_suites"
    step "ctest build/ (FERRY_UNIT_TESTS=$release_suites)"
    ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs"
    if [[ "$release_suites" == ON ]]; then
        done_parts+=("release: all tests")
    else
        done_parts+=("release: examples, package, perf, torch, mpi, python, autotune_wallclock")
    fi

    # ASan + UBSan: every unit suite. Not the mpi tests (LeakSanitizer reports Open MPI's own
    # allocations that it keeps past MPI_Finalize, in every rank) and, but with FERRY_FULL=1, not
    # libtorch's (its headers double the sanitized build's time; the torch suite ran in build/).
    local asan_torch=OFF asan_labels='core|engine|image|video|cuda|http|shards|python'
    if [[ "$full" == 1 ]]; then
        asan_torch=AUTO
        asan_labels+='|torch'
    fi
    sanitizer_build build-asan "address;undefined" -DFERRY_UNIT_TESTS=ON -DFERRY_MPI=OFF \
        "-DFERRY_TORCH=$asan_torch"
    step "ctest build-asan/ -L '$asan_labels' (ASan + UBSan)"
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:strict_string_checks=1}" \
        UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}" \
        ctest --test-dir build-asan -L "$asan_labels" --output-on-failure --no-tests=error -j "$jobs"
    done_parts+=("asan+ubsan: ${asan_labels//|/, }")

    # libFuzzer on decode_image, on redaction (text with planted secrets), on decode_media
    # (video and audio from memory), on the tar shard reader, on S3's listing XML and on saved
    # states, clang + ASan, bounded: FERRY_FUZZ_SECONDS of fuzzing in all (default 74: 33 s,
    # 4 s, 20 s, 8 s, 5 s and 4 s; 0 skips them), in two lanes side by side, one per core:
    # decode_image then redact (37 s); the other four in turn (37 s).
    local fuzz_seconds="${FERRY_FUZZ_SECONDS:-74}"
    if ((fuzz_seconds > 0)); then
        local image_seconds=$((fuzz_seconds * 33 / 74))
        local redact_seconds=$((fuzz_seconds * 4 / 74))
        local media_seconds=$((fuzz_seconds * 20 / 74))
        local listing_seconds=$((fuzz_seconds * 5 / 74))
        local state_seconds=$((fuzz_seconds * 4 / 74))
        local shards_seconds=$((fuzz_seconds - image_seconds - redact_seconds - media_seconds -
            listing_seconds - state_seconds))
        step "configure build-fuzz/ (clang++, libFuzzer + ASan)"
        cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" \
            -DCMAKE_UNITY_BUILD=ON \
            -DCMAKE_CXX_COMPILER="$(command -v clang++)" -DFERRY_FUZZ=ON \
            -DFERRY_SANITIZE=address \
            -DFERRY_BUILD_TESTS=OFF -DFERRY_BUILD_EXAMPLES=OFF -DFERRY_BUILD_PERF=OFF
        step "build build-fuzz/ (decode_image, redact, decode_media, tar_samples, listing," \
            "pipeline_state)"
        cmake --build build-fuzz --parallel "$jobs" \
            --target decode_image_fuzzer redact_fuzzer decode_media_fuzzer tar_samples_fuzzer \
            listing_fuzzer pipeline_state_fuzzer
        # fuzz <name> <seconds> <seed folders>...: a scratch corpus in build-fuzz/<name>-corpus,
        # libFuzzer's output in build-fuzz/<name>.log (printed below: the lanes run at once).
        fuzz() {
            local name="$1" seconds="$2"
            shift 2
            # libFuzzer reads -max_total_time=0 as "no limit": a small FERRY_FUZZ_SECONDS's share
            # rounded to 0 would run forever.
            ((seconds > 0)) || seconds=1
            mkdir -p "build-fuzz/${name}-corpus"
            echo "fuzz ${name} for ${seconds}s (seeds: $*)" >"build-fuzz/${name}.log"
            local rc=0
            ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
                "build-fuzz/tests/fuzz/${name}_fuzzer" -max_total_time="$seconds" \
                -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
                "build-fuzz/${name}-corpus" "$@" >>"build-fuzz/${name}.log" 2>&1 || rc=$?
            echo "$rc" >"build-fuzz/${name}.rc"
            return "$rc"
        }
        local names=(decode_image redact decode_media tar_samples listing pipeline_state)
        rm -f build-fuzz/*.rc build-fuzz/*.log
        step "fuzz, two at a time: decode_image ${image_seconds}s, redact ${redact_seconds}s |" \
            "decode_media ${media_seconds}s, tar_samples ${shards_seconds}s, listing" \
            "${listing_seconds}s, pipeline_state ${state_seconds}s"
        {
            fuzz decode_image "$image_seconds" tests/fuzz/corpus tests/fuzz/jpeg_sampling \
                tests/fuzz/regressions &&
                fuzz redact "$redact_seconds" tests/fuzz/redact_corpus
        } &
        local lane_image=$!
        {
            fuzz decode_media "$media_seconds" tests/fuzz/media_corpus \
                tests/fuzz/media_regressions &&
                fuzz tar_samples "$shards_seconds" tests/fuzz/shards_corpus &&
                fuzz listing "$listing_seconds" tests/fuzz/listing_corpus &&
                fuzz pipeline_state "$state_seconds" tests/fuzz/state_corpus
        } &
        local lane_rest=$! failed=0 name
        wait "$lane_image" || failed=1
        wait "$lane_rest" || failed=1
        for name in "${names[@]}"; do
            [[ -f "build-fuzz/${name}.log" ]] || continue
            # The whole log of a fuzzer that found something (its report and reproducer); the
            # closing stats of the others.
            if [[ "$(cat "build-fuzz/${name}.rc" 2>/dev/null)" != 0 ]]; then
                printf '\n--- build-fuzz/%s.log ---\n' "$name"
                cat "build-fuzz/${name}.log"
            else
                printf '\n--- build-fuzz/%s.log (end) ---\n' "$name"
                tail -n 12 "build-fuzz/${name}.log"
            fi
        done
        ((failed == 0)) || return 1
        local fuzzed="decode_image ${image_seconds}s, redact ${redact_seconds}s"
        fuzzed+=", decode_media ${media_seconds}s"
        fuzzed+=", tar_samples ${shards_seconds}s, listing ${listing_seconds}s"
        done_parts+=("fuzz: ${fuzzed}, pipeline_state ${state_seconds}s")
    fi

    # Shared libraries: what their consumers link is what ferry exports (the Conan recipe test
    # above built and consumed a shared ferry already). FERRY_SHARED=1 builds them in
    # build-shared/ and runs the package tests that depend on the linkage against them;
    # FERRY_SHARED_SUITE=1 builds and runs every test and example against them instead.
    if [[ "${FERRY_SHARED_SUITE:-0}" == 1 ]]; then
        step "configure build-shared/ (Release, BUILD_SHARED_LIBS=ON, every test)"
        cmake -S . -B build-shared -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
            "${launcher[@]}" \
            -DFERRY_BUILD_TESTS=ON -DFERRY_UNIT_TESTS=ON -DFERRY_BUILD_EXAMPLES=ON \
            -DFERRY_BUILD_PERF=ON -DFERRY_PYTHON=AUTO "${python[@]}"
        step "build build-shared/"
        cmake --build build-shared --parallel "$jobs"
        step "ctest build-shared/ (all tests)"
        ctest --test-dir build-shared --output-on-failure -j "$jobs"
        done_parts+=("shared: all tests")
    elif [[ "$full" == 1 || "${FERRY_SHARED:-0}" == 1 ]]; then
        step "configure build-shared/ (Release, BUILD_SHARED_LIBS=ON)"
        cmake -S . -B build-shared -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
            "${launcher[@]}" \
            -DFERRY_BUILD_TESTS=ON -DFERRY_UNIT_TESTS=OFF -DFERRY_BUILD_EXAMPLES=OFF \
            -DFERRY_BUILD_PERF=OFF -DFERRY_PYTHON=OFF  # package.install installs what is built
        step "build build-shared/ (libraries only)"
        cmake --build build-shared --parallel "$jobs" --target ferry ferry_core ferry_image \
            ferry_video ferry_cuda ferry_http ferry_shards ferry_mpi ferry_torch
        # With the .deb test (registered for shared builds only); not what does not depend on the
        # linkage (the headers, the recipes, which build ferry themselves, the subproject builds).
        step "ctest build-shared/ -L package (the linkage's tests)"
        ctest --test-dir build-shared -L package \
            -E '^package\.(fetchcontent|subdirectory|find\.not_built|recipes\..*|headers|build_tree\.torch|pkgconfig\.torch)$' \
            --output-on-failure --no-tests=error -j "$jobs"
        done_parts+=("shared: package")
    fi

    if [[ "$full" == 1 || "${FERRY_TSAN:-0}" == 1 ]]; then
        sanitizer_build build-tsan thread -DFERRY_UNIT_TESTS=ON -DFERRY_MPI=OFF -DFERRY_TORCH=OFF
        step "ctest build-tsan/ -L 'engine|cuda|http|video|python' (TSan)"
        # tests/tsan.supp: races inside uninstrumented libtbb, FFmpeg and glibc, none of ferry's.
        local tsan_options="halt_on_error=1:second_deadlock_stack=1"
        tsan_options+=":suppressions=$root/tests/tsan.supp"
        TSAN_OPTIONS="${TSAN_OPTIONS:-$tsan_options}" \
            ctest --test-dir build-tsan -L 'engine|cuda|http|video|python' --output-on-failure \
            --no-tests=error -j "$jobs"
        done_parts+=("tsan: engine, cuda (host side), http, video, python")
    fi

    if [[ "${FERRY_SOAK:-0}" == 1 ]]; then
        step "ctest build/ -L soak (FERRY_SOAK=1)"
        local listed
        listed="$(ctest --test-dir build -N -L soak)"
        if [[ "$listed" =~ Total\ Tests:\ [1-9] ]]; then
            ctest --test-dir build -L soak --output-on-failure
            done_parts+=("soak")
        else
            echo "no tests are labelled soak yet"
        fi
    fi

    local summary
    summary="$(printf '%s, ' "${done_parts[@]}")"
    printf '\nsetup.sh test: PASSED (%s) in %s\n' "${summary%, }" "$(elapsed)"
}

case "$mode" in
    deps) deps ;;
    run)
        shift
        run_mode "$@"
        ;;
    test) test_mode ;;
    -h | --help | help) usage ;;
    *)
        trap - EXIT
        usage >&2
        exit 2
        ;;
esac
