# SPDX-License-Identifier: Apache-2.0
# ctest check for perf/compare's C++ runners (cmake -P this file):
#   -DRUNNER=<compare_runner> -DGEN=<photo_set_gen> -DWORK=<scratch folder>
# On 96 generated JPEGs (three batches), every runner delivers all of them, and the runners that
# make the same calls deliver the same batches, byte for byte and in order (--checksum): the
# sequential loop, the hand-written TBB pipeline, ferry tuned and with its defaults, ferry writing
# each crop into its slot of the batch (batch_slots), with either resize. Region and reduced-scale decoding are checked against the loop too: on 500x375 JPEGs a
# 224x224 crop never allows a smaller DCT scale, so they must give the same pixels.
cmake_minimum_required(VERSION 3.25)

function(fail msg)
  message(FATAL_ERROR "compare_runner check: ${msg}")
endfunction()

# Runs one runner with --checksum; sets images, sum, first (seconds) and out in the caller.
function(run_runner runner interp)
  execute_process(COMMAND ${RUNNER} --runner ${runner} --data ${WORK} --threads 2
                          --interp ${interp} --checksum
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("${runner} (${interp}): exit status ${rc}: ${err}")
  endif()
  string(JSON images GET "${out}" images)
  string(JSON sum GET "${out}" checksum)
  string(JSON first GET "${out}" first_batch_s)
  set(images "${images}" PARENT_SCOPE)
  set(sum "${sum}" PARENT_SCOPE)
  set(first "${first}" PARENT_SCOPE)
  set(out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${GEN} ${WORK} 96 RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  fail("photo_set_gen: exit status ${rc}")
endif()

foreach(interp bilinear antialias)
  set(reference "")
  foreach(runner sequential tbb ferry ferry-default ferry-roi ferry-reduced ferry-slots)
    run_runner(${runner} ${interp})
    if(NOT images EQUAL 96 OR first LESS_EQUAL 0)
      fail("${runner} (${interp}): ${images} images, first batch ${first} s\n${out}")
    endif()
    if(reference STREQUAL "")
      set(reference "${sum}")
    elseif(NOT sum STREQUAL reference)
      fail("${runner} (${interp}) delivered other batches than the sequential loop: "
           "checksum ${sum}, the loop's ${reference}")
    endif()
  endforeach()
  message(STATUS "${interp}: 7 runners, 96 images each, batches identical (${reference})")
  # The fast-IDCT runner delivers every image too, and other pixels (the option reaches libjpeg).
  run_runner(ferry-roi-fast ${interp})
  if(NOT images EQUAL 96 OR sum STREQUAL reference)
    fail("ferry-roi-fast (${interp}): ${images} images, checksum ${sum} (the exact one: ${reference})")
  endif()
  # Written into the batch's slots, the fast decode gives the same batches as ferry-roi-fast.
  set(fast "${sum}")
  run_runner(ferry-slots-fast ${interp})
  if(NOT images EQUAL 96 OR NOT sum STREQUAL fast)
    fail("ferry-slots-fast (${interp}): ${images} images, checksum ${sum}, ferry-roi-fast's ${fast}")
  endif()
endforeach()
