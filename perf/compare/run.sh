#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf/compare in one command, from the repository root, on Debian 12 (as root for apt-get):
#
#   bash perf/compare/run.sh [compare.py options, e.g. --images 2000 --reps 3]
#   bash perf/compare/run.sh audio [audio_compare.py options, e.g. --windows 256 --reps 3]
#   bash perf/compare/run.sh video [video_compare.py options, e.g. --clips 64 --reps 3]
#
# The second runs audio_compare.py (ferry's decode_audio against PyTorch's DataLoader with
# torchaudio), which needs python3-torchaudio too and the Python package, not the C++ runners;
# the third video_compare.py (ferry's load_video against the DataLoader with PyAV and
# torchvision.io.read_video), which needs python3-av and python3-torchvision.
#
# Installs what is missing (ferry's build dependencies via setup.sh deps, and Debian's
# python3-torch, python3-torchvision, python3-pil, python3-matplotlib), builds compare_runner in
# build/ (Release), and compare_runner_torch (libtorch's DataLoader, ferry ending in to_torch, the
# end-to-end training rows) where ferry::torch is built, and the Python package ferry (the rows
# of ferry from Python) where it is built, and runs perf/compare/compare.py, which
# writes perf/compare/results/compare.md, compare.json and compare.png.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

bash setup.sh deps
media=""
if [[ "${1:-}" == audio || "${1:-}" == video ]]; then
    media="$1"
    shift
fi
case "$media" in
    audio) python_packages=(python3-torch python3-torchaudio) ;;
    video) python_packages=(python3-torch python3-torchvision python3-av) ;;
    *) python_packages=(python3-torch python3-torchvision python3-pil python3-matplotlib) ;;
esac
missing=()
for p in "${python_packages[@]}"; do
    dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed' || missing+=("$p")
done
if ((${#missing[@]} > 0)); then
    sudo=()
    ((EUID == 0)) || sudo=(sudo)
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends "${missing[@]}"
fi

export CMAKE_GENERATOR="${CMAKE_GENERATOR:-Ninja}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DFERRY_BUILD_PERF=ON >/dev/null
if [[ -n "$media" ]]; then
    cmake --build build --parallel "$(nproc)" --target ferry_python
    exec /usr/bin/python3 "perf/compare/${media}_compare.py" --python-package build/python "$@"
fi
targets=(compare_runner photo_set_gen)
# compare_runner_torch exists where CMake found libtorch (setup.sh deps installs libtorch-dev).
[[ -d build/perf/compare/CMakeFiles/compare_runner_torch.dir ]] && targets+=(compare_runner_torch)
# The Python package (the rows of ferry from Python) where FERRY_PYTHON built it.
[[ -d build/python/CMakeFiles/ferry_python.dir ]] && targets+=(ferry_python)
cmake --build build --parallel "$(nproc)" --target "${targets[@]}"
exec /usr/bin/python3 perf/compare/compare.py --runner build/perf/compare_runner \
    --data "${TMPDIR:-/tmp}/ferry-compare-jpegs" "$@"
