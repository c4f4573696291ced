#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Regenerates tests/fuzz/media_corpus/, the decode_media fuzzer's seeds: tiny valid files (a few
# frames of 16x16 video, a few hundredths of a second of audio) in the containers and codecs
# ferry's video ops meet, each a few KB at most (AVI pads its header to 6 KB), so that the fuzzer
# mutates them quickly. The files are checked in; this script says how they were made. Needs the
# ffmpeg CLI.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/media_corpus"

ff() { ffmpeg -hide_banner -loglevel error -nostdin -y "$@"; }
video=(-f lavfi -i testsrc=size=16x16:rate=25:duration=0.12)
tone=(-f lavfi -i sine=frequency=440:sample_rate=8000:duration=0.05)

ff "${video[@]}" -c:v libx264 -preset ultrafast -g 2 -pix_fmt yuv420p -movflags +faststart h264.mp4
ff "${video[@]}" -c:v libx264 -preset ultrafast -g 2 -pix_fmt yuv420p -bf 2 h264-bframes.mkv
ff "${video[@]}" -c:v libvpx-vp9 -g 2 -b:v 20k vp9.webm
ff "${video[@]}" -c:v mpeg4 -g 2 -q:v 20 mpeg4.avi
ff "${video[@]}" -frames:v 2 -pix_fmt yuv420p rawvideo.y4m
# Packets without presentation timestamps: frames counted by decoding in order.
ff "${video[@]}" -c:v mpeg4 -g 3 -bf 1 -q:v 20 mpeg4-bframes.avi
ff "${video[@]}" -c:v mpeg2video -g 3 -bf 1 -q:v 20 mpeg2.mpg
ff "${video[@]}" -c:v mpeg1video -g 3 -bf 1 -q:v 20 mpeg1.m1v
ff "${video[@]}" -c:v libx264 -preset ultrafast -g 2 -pix_fmt yuv420p h264.h264
ff "${video[@]}" "${tone[@]}" -c:v libvpx-vp9 -b:v 20k -c:a libopus -shortest video+audio.webm
ff "${tone[@]}" -c:a flac tone.mka  # raw .flac would carry 8 KB of padding
ff "${tone[@]}" -c:a pcm_s16le tone.wav
ff "${tone[@]}" -c:a libopus tone.opus
ff "${tone[@]}" -c:a aac -b:a 16k tone.m4a
ff "${tone[@]}" -c:a libmp3lame -b:a 16k tone.mp3
ls -l
