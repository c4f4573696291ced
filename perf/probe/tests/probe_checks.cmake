# SPDX-License-Identifier: Apache-2.0
# ctest checks for ferry-probe that need more than a regular expression (cmake -P this file):
#   -DPROBE=<ferry-probe> -DCORPUS=<folder of good images> -DWORK=<scratch folder> -DCHECK=<name>
# CHECK=json:    --json output parses (with -DPYTHON=<python3>, by Python's json module too), has
#                one trial per setting, its counts add up, every setting ran the same items (with
#                --items, and with a time budget: the first setting's whole passes), and the
#                stats are data: per-stage fields, not a table in a string
# CHECK=missing, empty: a missing folder, a folder without media: exit 2 and a clear message
# CHECK=corrupt: the corpus plus a zero-byte and a garbage file: the bad files are reported as
#                failed (skipped) and listed by path in failed_inputs, the good ones delivered,
#                exit 0
# CHECK=urls:    (needs -DSERVER=<http_fixture_server>) a list file of http:// URLs to the corpus
#                served on 127.0.0.1, file:// URLs, plain paths and one missing URL: every entry
#                is read, the missing one reported as failed (and listed by URL), the counts add
#                up, connections reused
# CHECK=urls_unsupported: (a build without ferry::http) a list with a URL: exit 2 and a message
# CHECK=sniff:   (needs -DFFMPEG=<ffmpeg> -DMEDIA=<tests/fuzz/media_corpus>) a folder of images,
#                videos and audio files with wrong or missing extensions (MPEG-PS and -TS, Ogg
#                Theora, FLV, raw MPEG-1 and H.264 made by ffmpeg, the media corpus), a GIF, text
#                and empty files: each is found as what its bytes say (counts per kind and
#                format), the images are measured, everything else is listed as skipped with its
#                reason, in JSON and text; a dozen more formats (AU, CAF, AIFF, AC-3, MP2, MP3,
#                WavPack, ADTS, fast-start MP4 audio and video, M2TS, IVF, HEVC, MPEG-4 Part 2)
#                without names; with -DVIDEO=ON, videos without extensions decode
cmake_minimum_required(VERSION 3.25)

function(fail msg)
  message(FATAL_ERROR "probe check '${CHECK}': ${msg}")
endfunction()

if(CHECK STREQUAL "json")
  execute_process(COMMAND ${PROBE} ${CORPUS} --items 64 --decode 1,2 --read 2 --threads 2
                          --resize 32x32 --batch 8 --json
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("exit status ${rc}")
  endif()
  string(JSON kind ERROR_VARIABLE err GET "${out}" kind)
  if(err)
    fail("output is not JSON: ${err}\n${out}")
  endif()
  string(JSON files GET "${out}" files)
  string(JSON n LENGTH "${out}" trials)
  if(NOT kind STREQUAL "images" OR NOT files EQUAL 11 OR NOT n EQUAL 2)
    fail("kind '${kind}', ${files} files, ${n} trials; expected images, 11, 2")
  endif()
  if(PYTHON)
    file(WRITE ${WORK}.json "${out}")
    execute_process(COMMAND ${PYTHON} -c "import json,sys; json.load(sys.stdin)"
                    INPUT_FILE ${WORK}.json RESULT_VARIABLE py_rc ERROR_VARIABLE py_err)
    if(NOT py_rc EQUAL 0)
      fail("Python's json module rejects the output: ${py_err}")
    endif()
  endif()
  math(EXPR last "${n} - 1")
  string(JSON digest0 GET "${out}" trials 0 items_digest)
  foreach(i RANGE ${last})
    string(JSON images GET "${out}" trials ${i} images)
    string(JSON failed GET "${out}" trials ${i} failed)
    string(JSON rate GET "${out}" trials ${i} images_per_s)
    string(JSON items GET "${out}" trials ${i} items)
    string(JSON digest GET "${out}" trials ${i} items_digest)
    string(JSON delivered GET "${out}" trials ${i} stats delivered)
    math(EXPR total "${images} + ${failed}")
    if(NOT total EQUAL 64 OR NOT items EQUAL 64 OR NOT failed EQUAL 0 OR rate LESS_EQUAL 0
       OR NOT delivered EQUAL images)
      fail("trial ${i}: ${images} delivered + ${failed} failed != ${items} items (64), stats "
           "say ${delivered} delivered, or rate ${rate}")
    endif()
    if(NOT digest STREQUAL digest0)
      fail("trial ${i} ran other items than trial 0 (digest ${digest}, not ${digest0})")
    endif()
  endforeach()
  string(JSON best GET "${out}" best decode)
  # The stats as data: the best setting's pipeline counts and one object per stage.
  string(JSON bottleneck GET "${out}" stats bottleneck)
  string(JSON stages LENGTH "${out}" stats stages)
  if(NOT stages EQUAL 5)
    fail("${stages} stages in stats; expected source, read, decode, batch, collate")
  endif()
  string(JSON decode_name GET "${out}" stats stages 2 name)
  string(JSON decode_in GET "${out}" stats stages 2 items_in)
  string(JSON decode_p99 GET "${out}" stats stages 2 task_p99_us)
  string(JSON decode_util GET "${out}" stats stages 2 utilization)
  if(NOT decode_name STREQUAL "decode" OR NOT decode_in EQUAL 64 OR decode_p99 LESS_EQUAL 0)
    fail("stage 2: '${decode_name}', ${decode_in} in, p99 ${decode_p99} us; expected decode, 64")
  endif()
  string(JSON failed_inputs LENGTH "${out}" failed_inputs)
  if(NOT failed_inputs EQUAL 0)
    fail("${failed_inputs} failed inputs listed for a corpus of good files")
  endif()
  # A time budget: the first setting runs whole passes over the 11-file sample until it is
  # spent, and every other setting runs exactly those items.
  execute_process(COMMAND ${PROBE} ${CORPUS} --seconds 0.2 --decode 1,2 --read 2 --threads 2
                          --resize 32x32 --batch 8 --json
                  OUTPUT_VARIABLE timed RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("--seconds: exit status ${rc}")
  endif()
  string(JSON items0 GET "${timed}" trials 0 items)
  string(JSON items1 GET "${timed}" trials 1 items)
  string(JSON digest0 GET "${timed}" trials 0 items_digest)
  string(JSON digest1 GET "${timed}" trials 1 items_digest)
  math(EXPR partial "${items0} % 11")
  if(NOT items0 EQUAL items1 OR NOT digest0 STREQUAL digest1 OR NOT partial EQUAL 0
     OR items0 EQUAL 0)
    fail("--seconds: trials ran ${items0} and ${items1} items (digests ${digest0}, ${digest1}); "
         "expected the same whole passes over 11 files")
  endif()
  message(STATUS "json ok: ${n} trials of the same 64 items, best decode ${best}, bottleneck "
                 "'${bottleneck}'; --seconds: both ran ${items0} items")
elseif(CHECK STREQUAL "corrupt")
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK})
  file(GLOB good ${CORPUS}/*)
  file(COPY ${good} DESTINATION ${WORK})
  file(WRITE ${WORK}/empty.png "")
  file(WRITE ${WORK}/garbage.jpg "this is not a JPEG at all")
  execute_process(COMMAND ${PROBE} ${WORK} --items 26 --decode 2 --read 2 --threads 2
                          --resize 32x32 --batch 2 --json
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("exit status ${rc}: ${out}")
  endif()
  string(JSON files GET "${out}" files)
  string(JSON images GET "${out}" trials 0 images)
  string(JSON failed GET "${out}" trials 0 failed)
  # 26 items cycle over 13 files (11 good, 2 bad) twice: 22 delivered, 4 failed.
  if(NOT files EQUAL 13 OR NOT images EQUAL 22 OR NOT failed EQUAL 4)
    fail("${files} files, ${images} delivered, ${failed} failed; expected 13, 22, 4")
  endif()
  # The two bad files, each listed once, by path, as decode failures.
  string(JSON listed LENGTH "${out}" failed_inputs)
  if(NOT listed EQUAL 2)
    fail("${listed} failed inputs listed; expected 2")
  endif()
  set(names "")
  foreach(i RANGE 1)
    string(JSON input GET "${out}" failed_inputs ${i} input)
    string(JSON code GET "${out}" failed_inputs ${i} code)
    if(NOT code STREQUAL "decode")
      fail("failed input ${input}: code '${code}', expected decode")
    endif()
    list(APPEND names "${input}")
  endforeach()
  list(SORT names)
  if(NOT names STREQUAL "${WORK}/empty.png;${WORK}/garbage.jpg")
    fail("failed inputs ${names}; expected ${WORK}/empty.png and ${WORK}/garbage.jpg")
  endif()
  message(STATUS "corrupt ok: 22 delivered, 4 failed and reported, the 2 bad files listed")
elseif(CHECK STREQUAL "urls")
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK}/www)
  file(GLOB good ${CORPUS}/*)
  list(SORT good)
  file(COPY ${good} DESTINATION ${WORK}/www)
  # 11 http:// URLs, 2 file:// URLs, 2 paths, 1 URL the server does not have: 16 entries, of
  # which 14 URLs and 12 over HTTP. The server fills in {port}.
  set(entries "# ferry-probe list: URLs and paths mixed\n")
  foreach(f IN LISTS good)
    cmake_path(GET f FILENAME name)
    string(APPEND entries "http://127.0.0.1:{port}/${name}\n")
  endforeach()
  list(GET good 0 first)
  list(GET good 1 second)
  cmake_path(GET first FILENAME first_name)
  cmake_path(GET second FILENAME second_name)
  string(APPEND entries "file://${WORK}/www/${first_name}\nFILE://${WORK}/www/${second_name}\n")
  string(APPEND entries "${first}\n${second}\n")
  string(APPEND entries "http://127.0.0.1:{port}/missing.png\n")
  file(WRITE ${WORK}/list.in "${entries}")
  # The server runs the probe and exits with its status; it kills it after 100 s.
  execute_process(COMMAND ${SERVER} ${WORK}/www ${WORK}/list.in ${WORK}/list.txt --limit 100
                          -- ${PROBE} ${WORK}/list.txt --items 32 --decode 1,2 --read 2
                          --threads 2 --resize 32x32 --batch 4 --json
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 110)
  if(NOT rc EQUAL 0)
    fail("exit status ${rc}: ${out}${err}")
  endif()
  string(JSON kind ERROR_VARIABLE json_err GET "${out}" kind)
  if(json_err)
    fail("output is not JSON: ${json_err}\n${out}")
  endif()
  string(JSON files GET "${out}" files)
  string(JSON urls GET "${out}" urls)
  string(JSON n LENGTH "${out}" trials)
  if(NOT kind STREQUAL "images" OR NOT files EQUAL 16 OR NOT urls EQUAL 14 OR NOT n EQUAL 2)
    fail("kind '${kind}', ${files} files, ${urls} URLs, ${n} trials; expected images, 16, 14, 2")
  endif()
  # 32 items cycle over the 16 entries twice: 30 delivered, the missing URL failed twice.
  foreach(i RANGE 1)
    string(JSON images GET "${out}" trials ${i} images)
    string(JSON failed GET "${out}" trials ${i} failed)
    if(NOT images EQUAL 30 OR NOT failed EQUAL 2)
      fail("trial ${i}: ${images} delivered, ${failed} failed; expected 30 and 2")
    endif()
  endforeach()
  string(JSON listed LENGTH "${out}" failed_inputs)
  string(JSON input GET "${out}" failed_inputs 0 input)
  string(JSON stage GET "${out}" failed_inputs 0 stage)
  if(NOT listed EQUAL 1 OR NOT input MATCHES "^http://127\\.0\\.0\\.1:[0-9]+/missing\\.png$"
     OR NOT stage STREQUAL "read")
    fail("failed inputs: ${listed}, the first '${input}' in '${stage}'; expected the missing URL")
  endif()
  # 2 trials x 2 cycles x 12 HTTP entries; per-thread handles keep their connections alive.
  if(NOT err MATCHES "served ([0-9]+) requests over ([0-9]+) connections")
    fail("no request count from the server: ${err}")
  endif()
  set(requests ${CMAKE_MATCH_1})
  set(connections ${CMAKE_MATCH_2})
  if(NOT requests EQUAL 48 OR NOT connections LESS requests)
    fail("${requests} requests over ${connections} connections; expected 48 over fewer")
  endif()
  message(STATUS "urls ok: 30 of 32 delivered per trial, the missing URL failed twice; "
                 "${requests} requests over ${connections} connections")
elseif(CHECK STREQUAL "urls_unsupported")
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK})
  file(GLOB good ${CORPUS}/*)
  list(GET good 0 first)
  file(WRITE ${WORK}/list.txt "${first}\nhttp://127.0.0.1:9/a.png\n")
  execute_process(COMMAND ${PROBE} ${WORK}/list.txt --items 4
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc TIMEOUT 60)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "no ferry::http")
    fail("exit status ${rc}, message '${err}'; expected 2 and 'no ferry::http'")
  endif()
  message(STATUS "urls without ferry::http ok: ${err}")
elseif(CHECK STREQUAL "sniff")
  file(REMOVE_RECURSE ${WORK})
  file(MAKE_DIRECTORY ${WORK}/mixed/sub ${WORK}/videos)
  set(d ${WORK}/mixed)
  # 12 images: the corpus's 11, four of them renamed, and a text file named .jpg (found by its
  # extension, as its bytes are no image: measured, and reported as a failed decode).
  file(GLOB images ${CORPUS}/*)
  file(COPY ${images} DESTINATION ${d})
  file(RENAME ${d}/baseline.jpg ${d}/photo)
  file(RENAME ${d}/rgb.png ${d}/rgb.jpg)
  file(RENAME ${d}/lossy.webp ${d}/sub/lossy.dat)
  file(RENAME ${d}/gray.bmp ${d}/gray.bin)
  file(WRITE ${d}/garbage.jpg "this is not a JPEG at all")
  # 11 videos and 7 audio files: the media corpus and what ffmpeg makes, none with its own
  # extension.
  function(copy_as from to)
    file(COPY_FILE ${MEDIA}/${from} ${to})
  endfunction()
  copy_as(h264.mp4 ${d}/clip1)
  copy_as(mpeg4.avi ${d}/clip2.jpg)
  copy_as(vp9.webm ${d}/clip3.txt)
  copy_as(video+audio.webm ${d}/sub/clip4.mka)
  copy_as(rawvideo.y4m ${d}/clip5.png)
  copy_as(tone.wav ${d}/tone1.bin)
  copy_as(tone.mp3 ${d}/tone2)
  copy_as(tone.m4a ${d}/tone3.mp4)
  copy_as(tone.mka ${d}/tone4.mkv)
  copy_as(tone.opus ${d}/tone5.ogv)
  set(src -f lavfi -i testsrc=size=32x32:rate=25:duration=0.2)
  set(tone -f lavfi -i sine=duration=0.1)
  foreach(made "${src};-c:v;mpeg1video;-f;mpeg;${d}/clip6.mp4"
               "${src};-c:v;mpeg2video;-f;mpegts;${d}/clip7"
               "${src};-c:v;libtheora;-f;ogg;${d}/clip8.ogg"
               "${src};-c:v;flv1;-f;flv;${d}/clip9.mp3"
               "${src};-c:v;mpeg1video;-f;mpeg1video;${d}/clip10.jpg"
               "${src};-c:v;libx264;-f;h264;${d}/clip11"
               "${tone};-c:a;flac;-f;flac;${d}/tone6.txt"
               "${tone};-c:a;flac;-f;ogg;${d}/tone7"
               "${src};-f;gif;${d}/anim.jpg")
    execute_process(COMMAND ${FFMPEG} -v error -y ${made} RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      fail("ffmpeg ${made}: ${err}")
    endif()
  endforeach()
  # Not media: skipped, with the reason.
  file(WRITE ${d}/notes.txt "not an image")
  file(WRITE ${d}/labels.csv "file,label\nphoto,1\n")
  file(WRITE ${d}/zero "")
  execute_process(COMMAND ${PROBE} ${d} --items 24 --decode 1 --read 2 --threads 2
                          --resize 32x32 --batch 4 --json
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("exit status ${rc}: ${out}")
  endif()
  string(JSON kind GET "${out}" kind)
  string(JSON files GET "${out}" files)
  string(JSON n_images GET "${out}" found images)
  string(JSON n_videos GET "${out}" found videos)
  string(JSON n_audio GET "${out}" found audio)
  string(JSON skipped GET "${out}" skipped)
  string(JSON listed LENGTH "${out}" skipped_files)
  if(NOT kind STREQUAL "images" OR NOT files EQUAL 12 OR NOT n_images EQUAL 12
     OR NOT n_videos EQUAL 11 OR NOT n_audio EQUAL 7 OR NOT skipped EQUAL 22
     OR NOT listed EQUAL 22)
    fail("kind ${kind}, ${files} files, found ${n_images} images, ${n_videos} videos, "
         "${n_audio} audio files, ${skipped} skipped (${listed} listed); expected images, 12, "
         "12, 11, 7, 22 (22)")
  endif()
  # Each format by its bytes.
  foreach(pair "jpeg=3" "png=4" "webp=2" "bmp=2" "unrecognised, by its extension=1" "mp4=1"
               "avi=1" "matroska/webm=2" "y4m=1" "mpeg program stream=1"
               "mpeg transport stream=1" "ogg theora=1" "flv=1" "mpeg-1/2 video=1"
               "h.264 annex b=1" "wav=1" "mp3 (id3)=1" "mp4 audio=1" "matroska audio=1"
               "ogg audio=2" "flac=1")
    string(REPLACE "=" ";" pair "${pair}")
    list(GET pair 0 format)
    list(GET pair 1 want)
    string(JSON got ERROR_VARIABLE missing GET "${out}" formats "${format}")
    if(missing OR NOT got EQUAL want)
      string(JSON formats GET "${out}" formats)
      fail("format '${format}': ${got} found, expected ${want}; formats: ${formats}")
    endif()
  endforeach()
  # The reasons: not media, a format ferry does not decode, another kind than measured.
  math(EXPR last "${listed} - 1")
  set(reasons "")
  foreach(i RANGE ${last})
    string(JSON path GET "${out}" skipped_files ${i} path)
    string(JSON why GET "${out}" skipped_files ${i} why)
    cmake_path(GET path FILENAME name)
    set(reason_${name} "${why}")
  endforeach()
  foreach(check "notes.txt=^unrecognised content \\(first bytes: 6e 6f 74 20"
                "labels.csv=^unrecognised content" "zero=^empty file$"
                "anim.jpg=^GIF image: decode_image reads"
                "clip7=^one of the videos \\(mpeg transport stream\\). this run measures images"
                "tone4.mkv=^one of the audio files \\(matroska audio\\)")
    string(FIND "${check}" "=" eq)
    string(SUBSTRING "${check}" 0 ${eq} name)
    math(EXPR eq "${eq} + 1")
    string(SUBSTRING "${check}" ${eq} -1 pattern)
    if(NOT reason_${name} MATCHES "${pattern}")
      fail("${name} skipped because '${reason_${name}}'; expected '${pattern}'")
    endif()
  endforeach()
  # The 12 images cycled twice: the text file named .jpg fails twice, the rest decode.
  string(JSON images GET "${out}" trials 0 images)
  string(JSON failed GET "${out}" trials 0 failed)
  string(JSON failed_input GET "${out}" failed_inputs 0 input)
  if(NOT images EQUAL 22 OR NOT failed EQUAL 2 OR NOT failed_input STREQUAL "${d}/garbage.jpg")
    fail("${images} delivered, ${failed} failed (${failed_input}); expected 22, 2 (garbage.jpg)")
  endif()
  # The text report lists the skipped files too.
  execute_process(COMMAND ${PROBE} ${d} --items 12 --decode 1 --read 1 --threads 2
                          --resize 32x32 --batch 4
                  OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  string(CONCAT summary "12 images under [^\n]*\n\nskipped 22 files: 11 videos, 7 audio files "
                        "\\(this run measures images\\); 4 that ferry does not read:\n")
  string(CONCAT others "anim.jpg: GIF image[^\n]*\n[^\n]*labels.csv: unrecognised[^\n]*\n"
                       "[^\n]*notes.txt: unrecognised[^\n]*\n[^\n]*zero: empty file\n")
  if(NOT rc EQUAL 0 OR NOT text MATCHES "${summary}" OR NOT text MATCHES "${others}")
    fail("text report (exit status ${rc}) does not list the skipped files:\n${text}")
  endif()
  # More formats, none named: a folder of audio files with a few videos and a UTF-16 text file
  # (whose byte order mark FF FE is also an MPEG audio layer I sync).
  file(MAKE_DIRECTORY ${WORK}/more)
  set(m ${WORK}/more)
  foreach(made "${tone};-f;au;${m}/a1" "${tone};-f;caf;${m}/a2" "${tone};-f;aiff;${m}/a3"
               "${tone};-c:a;ac3;-f;ac3;${m}/a4" "${tone};-c:a;mp2;-f;mp2;${m}/a5"
               "${tone};-c:a;wavpack;-f;wv;${m}/a6" "${tone};-c:a;aac;-f;adts;${m}/a7"
               "${tone};-c:a;libmp3lame;-id3v2_version;0;-write_xing;0;-f;mp3;${m}/a8"
               "${tone};-c:a;aac;-movflags;+faststart;-f;mp4;${m}/a9"
               "${src};-c:v;mpeg2video;-f;mpegts;-mpegts_m2ts_mode;1;${m}/v1"
               "${src};-c:v;libvpx;-f;ivf;${m}/v2" "${src};-c:v;libx265;-f;hevc;${m}/v3"
               "${src};-c:v;mpeg4;-f;m4v;${m}/v4"
               "${src};-c:v;libx264;-movflags;+faststart;-f;mp4;${m}/v5")
    execute_process(COMMAND ${FFMPEG} -v error -y ${made} RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
      fail("ffmpeg ${made}: ${err}")
    endif()
  endforeach()
  string(ASCII 255 254 104 105 utf16)  # FF FE "hi" (CMake cannot write a NUL)
  file(WRITE ${m}/utf16 "${utf16}")
  execute_process(COMMAND ${PROBE} ${m} --items 1 --decode 1 --read 1 --threads 1 --batch 1
                          --json
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("more formats: exit status ${rc}: ${out}")
  endif()
  string(JSON formats GET "${out}" formats)
  string(JSON kind GET "${out}" kind)
  string(JSON skipped GET "${out}" skipped)
  if(NOT kind STREQUAL "audio files" OR NOT skipped EQUAL 6)
    fail("more formats: kind ${kind}, ${skipped} skipped; expected audio files, 6")
  endif()
  foreach(format "au" "caf" "aiff" "ac-3" "wavpack" "aac (adts)" "mp4 audio" "m2ts" "ivf"
                 "hevc annex b" "mpeg-4 video" "mp4")
    string(JSON got ERROR_VARIABLE missing GET "${out}" formats "${format}")
    if(missing OR NOT got EQUAL 1)
      fail("more formats: '${format}' found ${got} times, expected once; formats: ${formats}")
    endif()
  endforeach()
  string(JSON got GET "${out}" formats "mpeg audio")
  if(NOT got EQUAL 2)
    fail("more formats: ${got} MPEG audio files (mp2, mp3), expected 2; formats: ${formats}")
  endif()
  if(VIDEO)
    # Videos found by their bytes decode like any other: no extension, or a wrong one.
    copy_as(h264.mp4 ${WORK}/videos/a)
    copy_as(mpeg4.avi ${WORK}/videos/b.jpg)
    copy_as(vp9.webm ${WORK}/videos/c.txt)
    copy_as(rawvideo.y4m ${WORK}/videos/d.wav)
    copy_as(tone.wav ${WORK}/videos/e.mp4)
    execute_process(COMMAND ${PROBE} ${WORK}/videos --items 4 --decode 1 --read 1 --threads 2
                            --resize 32x32 --batch 2 --frames 2 --json
                    OUTPUT_VARIABLE out RESULT_VARIABLE rc)
    string(JSON kind GET "${out}" kind)
    string(JSON files GET "${out}" files)
    string(JSON skipped GET "${out}" skipped)
    string(JSON images GET "${out}" trials 0 images)
    string(JSON failed GET "${out}" trials 0 failed)
    if(NOT rc EQUAL 0 OR NOT kind STREQUAL "videos" OR NOT files EQUAL 4 OR NOT skipped EQUAL 1
       OR NOT images EQUAL 4 OR NOT failed EQUAL 0)
      fail("videos: exit ${rc}, kind ${kind}, ${files} files, ${skipped} skipped, ${images} "
           "decoded, ${failed} failed; expected videos, 4, 1, 4, 0")
    endif()
  endif()
  message(STATUS "sniff ok: 12 images, 11 videos, 7 audio files found by their bytes; 22 "
                 "skipped with reasons; the images measured")
elseif(CHECK STREQUAL "missing" OR CHECK STREQUAL "empty")
  # A folder that does not exist, or one without media: exit status 2 and a message saying so.
  if(CHECK STREQUAL "missing")
    set(folder ${WORK}/no-such-folder)
  else()
    file(REMOVE_RECURSE ${WORK})
    file(MAKE_DIRECTORY ${WORK})
    file(WRITE ${WORK}/notes.txt "not an image")
    set(folder ${WORK})
  endif()
  execute_process(COMMAND ${PROBE} ${folder} --items 4
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "no images .* found in")
    fail("exit status ${rc}, message '${err}'; expected 2 and 'no images ... found in'")
  endif()
  message(STATUS "${CHECK} folder ok: ${err}")
else()
  fail("unknown check")
endif()
