#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# perf/compare in one command, from the repository root, on Debian 12 (as root for apt-get):
#
#   bash perf/compare/run.sh [compare.py options, e.g. --images 2000 --reps 3]
#   bash perf/compare/run.sh audio [audio_compare.py options, e.g. --windows 256 --reps 3]
#
# The second runs audio_compare.py (ferry's decode_audio against PyTorch's DataLoader with
# torchaudio), which needs python3-torchaudio too and the Python package, not the C++ runners.
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
audio=0
if [[ "${1:-}" == audio ]]; then
    audio=1
    shift
fi
python_packages=(python3-torch python3-torchvision python3-pil python3-matplotlib)
((audio == 0)) || python_packages=(python3-torch python3-torchaudio)
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
if ((audio)); then
    cmake --build build --parallel "$(nproc)" --target ferry_python
    exec /usr/bin/python3 perf/compare/audio_compare.py --python-package build/python "$@"
fi
targets=(compare_runner photo_set_gen)
# compare_runner_torch exists where CMake found libtorch (setup.sh deps installs libtorch-dev).
[[ -d build/perf/compare/CMakeFiles/compare_runner_torch.dir ]] && targets+=(compare_runner_torch)
# The Python package (the rows of ferry from Python) where FERRY_PYTHON built it.
[[ -d build/python/CMakeFiles/ferry_python.dir ]] && targets+=(ferry_python)
cmake --build build --parallel "$(nproc)" --target "${targets[@]}"
exec /usr/bin/python3 perf/compare/compare.py --runner build/perf/compare_runner \
    --data "${TMPDIR:-/tmp}/ferry-compare-jpegs" "$@"
