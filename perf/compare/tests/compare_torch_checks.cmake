# SPDX-License-Identifier: Apache-2.0
# ctest check for perf/compare's libtorch runners (cmake -P this file):
#   -DRUNNER=<compare_runner_torch> -DGEN=<photo_set_gen> -DWORK=<scratch folder>
# On 70 generated JPEGs (two full batches and one of 6), libtorch's DataLoader and ferry ending in
# to_torch deliver all of them, in the batches a user would get: 32, 32 and 6 images of
# 224x224x3 uint8 (HWC, as ferry's collate lays them out), at 0 workers (libtorch's calling
# thread), 1 and 2 threads; and the end-to-end mode takes one training step per batch with a
# finite loss, its time waiting for data within the run's wall time.
cmake_minimum_required(VERSION 3.25)

function(fail msg)
  message(FATAL_ERROR "compare_runner_torch check: ${msg}")
endfunction()

# Runs one runner; sets out in the caller.
function(run_runner runner threads)
  execute_process(COMMAND ${RUNNER} --runner ${runner} --data ${WORK} --threads ${threads}
                          ${ARGN}
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("${runner} at ${threads} threads ${ARGN}: exit status ${rc}: ${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

# Fails unless the JSON line `out` has `value` at `key`.
function(expect label key value)
  string(JSON got GET "${out}" ${key})
  if(NOT got STREQUAL value)
    fail("${label}: ${key} is '${got}', expected '${value}'\n${out}")
  endif()
endfunction()

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND ${GEN} ${WORK} 70 RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  fail("photo_set_gen: exit status ${rc}")
endif()

foreach(case "libtorch;0" "libtorch;1" "libtorch;2" "ferry-torch;1" "ferry-torch;2"
             "ferry-collate;2")
  list(GET case 0 runner)
  list(GET case 1 threads)
  set(modes loader train)
  if(runner STREQUAL "ferry-collate")
    set(modes loader)  # the handoff's baseline: no model
  endif()
  foreach(mode IN LISTS modes)
    set(label "${runner}, ${threads} threads, ${mode}")
    if(mode STREQUAL "train")
      run_runner(${runner} ${threads} --train --model-threads 1)
      expect("${label}" steps 3)
      string(JSON loss GET "${out}" loss)
      string(JSON wait GET "${out}" wait_s)
      string(JSON seconds GET "${out}" seconds)
      if(NOT loss MATCHES "^[0-9]+\\.[0-9]+$" OR loss EQUAL 0 OR wait LESS 0
         OR wait GREATER seconds)
        fail("${label}: loss ${loss}, waited ${wait} s of ${seconds} s\n${out}")
      endif()
    else()
      run_runner(${runner} ${threads})
    endif()
    expect("${label}" images 70)
    expect("${label}" batches 3)
    expect("${label}" shapes "32x224x224x3 x2, 6x224x224x3")
    expect("${label}" dtype "Byte")
  endforeach()
endforeach()
message(STATUS "libtorch, ferry-torch and ferry-collate: 70 images each in 32, 32 and 6 of 224x224x3 uint8")
