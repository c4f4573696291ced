# SPDX-License-Identifier: Apache-2.0
# ctest check for the video example of ops/video/README.md (cmake -P this file):
#   -DPROGRAM=<video_clips> -DFFMPEG=<ffmpeg> -DWORK=<scratch> -DSOURCE=<examples/video_clips.cpp>
#   -DREADME=<ops/video/README.md>
# 1. The README shows the example's stage verbatim: the lines between "// [readme-video]" and
#    "// [/readme-video]" in the source, unindented, are a block of the README.
# 2. Run on a folder made here by the ffmpeg CLI: a clip in each common container and codec, a
#    clip too short for 8 frames at stride 4, a cut MP4, and a file that is no video. Every good
#    clip is delivered (3 epochs, different random starts), the bad files are skipped and listed,
#    and the accounting adds up.
cmake_minimum_required(VERSION 3.25)

function(fail msg)
  message(FATAL_ERROR "video_clips check: ${msg}")
endfunction()

# --- 1: the README's block ---------------------------------------------------------------------
file(READ ${SOURCE} source)
string(FIND "${source}" "// [readme-video]\n" begin)
string(FIND "${source}" "// [/readme-video]" end)
if(begin LESS 0 OR end LESS begin)
  fail("no // [readme-video] block in ${SOURCE}")
endif()
math(EXPR begin "${begin} + 18")
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${source}" ${begin} ${length} block)
# The block's indentation is that of its first line; the README shows it from column 0.
string(REGEX MATCH "^ *" indent "${block}")
string(LENGTH "${indent}" indent_length)
string(REGEX REPLACE "\n *$" "\n" block "${block}")
string(REPLACE "\n${indent}" "\n" block "\n${block}")
string(SUBSTRING "${block}" 1 -1 block)
file(READ ${README} readme)
string(FIND "${readme}" "${block}" at)
if(at LESS 0)
  fail("${README} does not show the example's stage verbatim; expected this block:\n${block}")
endif()
message(STATUS "README block found (${indent_length} spaces of indentation removed)")

# --- 2: the run --------------------------------------------------------------------------------
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(input -f lavfi -i testsrc2=size=96x64:rate=25:duration=3)
function(make name)
  execute_process(COMMAND ${FFMPEG} -hide_banner -loglevel error -nostdin -y ${input} ${ARGN}
                          ${WORK}/${name}
                  RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    fail("ffmpeg could not make ${name}: ${err}")
  endif()
endfunction()
make(h264.mp4 -c:v libx264 -bf 2 -pix_fmt yuv420p)
make(h264.mkv -c:v libx264 -bf 2 -pix_fmt yuv420p)
make(vp9.webm -c:v libvpx-vp9 -deadline realtime -cpu-used 8)
make(mpeg4.avi -c:v mpeg4 -bf 2)
make(mpeg2.mpg -c:v mpeg2video -bf 2)
make(h264.ts -c:v libx264 -pix_fmt yuv420p)
make(theora.ogv -c:v libtheora)
make(flv1.flv -c:v flv)
make(mjpeg.mov -c:v mjpeg -pix_fmt yuvj420p)
set(good 9)
# Bad: 0.4 s is 10 frames (8 at stride 4 need 29); a cut MP4 without its moov; not a video.
set(input -f lavfi -i testsrc2=size=96x64:rate=25:duration=0.4)
make(short.mp4 -c:v libx264 -pix_fmt yuv420p)
# The first 4000 bytes: the MP4's moov comes last, so nothing of it is left.
execute_process(COMMAND head -c 4000 ${WORK}/h264.mp4 OUTPUT_FILE ${WORK}/cut.mp4 RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  fail("could not cut h264.mp4")
endif()
file(WRITE ${WORK}/notes.txt "not a video, just words\n")
set(bad 3)

execute_process(COMMAND ${PROGRAM} ${WORK} --epochs 3 --seed 7
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 240)
message(STATUS "${out}${err}")
if(NOT rc EQUAL 0)
  fail("exit status ${rc}")
endif()
foreach(epoch 1 2 3)
  if(NOT out MATCHES "epoch ${epoch}: ${good} clips in 3 batches")
    fail("epoch ${epoch} did not deliver the ${good} good clips")
  endif()
endforeach()
if(NOT out MATCHES "first batch: \\[4, 8, 112, 112, 3\\] u8")
  fail("the first batch is not u8 [4, 8, 112, 112, 3]")
endif()
math(EXPR files "${good} + ${bad}")
math(EXPR produced "${files} * 3")
math(EXPR delivered "${good} * 3")
math(EXPR failed "${bad} * 3")
if(NOT out MATCHES "items: ${produced} produced = ${delivered} delivered \\+ 0 filtered \\+ ${failed} failed \\+ 0 cancelled")
  fail("the accounting is not ${produced} = ${delivered} + ${failed} failed")
endif()
foreach(name short.mp4 cut.mp4 notes.txt)
  if(NOT out MATCHES "${name}: (decode_video|demux_video|load_video|probe_video)")
    fail("${name} is not listed among the failures with the op's reason")
  endif()
endforeach()
