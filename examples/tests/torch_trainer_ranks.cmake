# SPDX-License-Identifier: Apache-2.0
# ctest check that torch_trainer trains data parallel over 2 ranks (cmake -P this file):
#   -DTRAINER=<torch_trainer> -DCACHE=<Fashion-MNIST cache> -DWORK=<scratch>
# Two processes started at once, told their place the way torchrun tells it (RANK, WORLD_SIZE,
# MASTER_ADDR=127.0.0.1, MASTER_PORT), read by ferry::world::from_environment(); they meet
# through c10d's TCPStore and a ProcessGroupGloo. 2001 images, 2 epochs: each rank trains on
# ceil(2001 / 2) = 1001 a epoch (the sampler repeats one image so both take as many steps).
# Checked:
#   - both ranks joined the group and exit 0;
#   - both end with bit-identical weights and batch-norm statistics (the hash of every byte):
#     they trained on different images, so only the all-reduce of every step makes them equal;
#   - in every epoch the two ranks' items (--record-items) are each of the 2001 images, once,
#     apart from the one padding repeat.
cmake_minimum_required(VERSION 3.25)

function(fail msg)
  message(FATAL_ERROR "torch_trainer ranks check: ${msg}")
endfunction()

set(items 2001)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
# A port of its own, so that another job's TCPStore on the default 29500 does not answer.
string(RANDOM LENGTH 4 ALPHABET 0123456789 r)
math(EXPR port "20000 + ${r}")

set(common --cache ${CACHE} --max-items ${items} --max-test-items 500 --epochs 2
           --batch-size 64 --threads 1 --pad 2 --no-progress --seed 11)
# One shell per rank, both started by one execute_process (its commands run at the same time),
# each writing its own output file. The sh -c script gets the trainer's arguments as "$@".
set(cmds "")
foreach(r 0 1)
  list(APPEND cmds COMMAND ${CMAKE_COMMAND} -E env RANK=${r} WORLD_SIZE=2 MASTER_ADDR=127.0.0.1
                           MASTER_PORT=${port}
                   sh -c "exec \"$0\" \"$@\" > ${WORK}/rank${r}.out 2>&1"
                   ${TRAINER} ${common} --record-items ${WORK}/rank${r}.txt)
endforeach()
execute_process(${cmds} RESULTS_VARIABLE rcs TIMEOUT 100)
foreach(r 0 1)
  if(EXISTS ${WORK}/rank${r}.out)
    file(READ ${WORK}/rank${r}.out out${r})
  endif()
endforeach()
if(NOT rcs STREQUAL "0;0")
  fail("exit statuses ${rcs}:\n--- rank 0:\n${out0}\n--- rank 1:\n${out1}")
endif()

foreach(r 0 1)
  if(NOT out${r} MATCHES "rank ${r}/2 trains on 1001 training images per epoch.*rank ${r}/2: joined the Gloo group at 127\\.0\\.0\\.1:${port}.*epoch 2/2  loss [0-9.]+  test accuracy [0-9.]+.*failures: 0.*weights: ([0-9a-f]+)")
    fail("rank ${r}'s output:\n${out${r}}")
  endif()
  set(hash${r} ${CMAKE_MATCH_1})
endforeach()
if(NOT hash0 STREQUAL hash1)
  fail("the ranks' weights differ: rank 0 ${hash0}, rank 1 ${hash1}")
endif()

# Each rank's record: `epoch E` lines, then the indices it trained on.
foreach(r 0 1)
  file(STRINGS ${WORK}/rank${r}.txt lines)
  set(cur "")
  foreach(l IN LISTS lines)
    if(l MATCHES "^epoch ([0-9]+)$")
      set(cur ${CMAKE_MATCH_1})
    else()
      list(APPEND r${r}_e${cur} ${l})
    endif()
  endforeach()
endforeach()
math(EXPR last "${items} - 1")
set(every_item "")
foreach(i RANGE ${last})
  list(APPEND every_item ${i})
endforeach()
foreach(e 1 2)
  foreach(r 0 1)
    list(LENGTH r${r}_e${e} n)
    if(NOT n EQUAL 1001)
      fail("epoch ${e}: rank ${r} trained on ${n} images, expected 1001")
    endif()
  endforeach()
  set(both ${r0_e${e}} ${r1_e${e}})
  set(distinct ${both})
  list(REMOVE_DUPLICATES distinct)
  list(SORT distinct COMPARE NATURAL)
  if(NOT distinct STREQUAL every_item)
    fail("epoch ${e}: the ranks together did not train on each of the ${items} images")
  endif()
  # 2002 trained, 2001 distinct: exactly one image twice (the padding).
endforeach()
if(r0_e1 STREQUAL r0_e2)
  fail("rank 0 trained on the same order in both epochs (no shuffle per epoch)")
endif()
message(STATUS "ranks ok: both ranks end with weights ${hash0}; each epoch covers all "
               "${items} images once, plus one padding repeat")
