# SPDX-License-Identifier: Apache-2.0
# ctest check that image_trainer resumes mid-epoch exactly (cmake -P this file):
#   -DTRAINER=<image_trainer> -DCACHE=<Fashion-MNIST cache> -DWORK=<scratch>
# 3000 images, 2 epochs of 60 steps (batch 50), a checkpoint every 7 steps. An uninterrupted run,
# then the same run crashing twice (--stop-after-steps: exit 3, no save) and resumed each time:
#   run 1: steps 1-40, crashes in epoch 1 (last checkpoint at step 35)
#   run 2: resumes at step 35, crosses into epoch 2, crashes after step 82 (checkpoint at 77)
#   run 3: resumes at step 77, finishes
# Each run records the dataset index of every item it trains on (--record-items). The steps
# after a run's last checkpoint are trained again by the next run, by design, so each record but
# the last is cut at its last `checkpoint` line. Then in every epoch:
#   - the runs' items, in order, are the uninterrupted run's (the same items, order, batches);
#   - each of the 3000 items appears exactly once;
# and the resumed runs print the uninterrupted run's epoch losses and accuracies (the model and
# the learning rate schedule restored bit for bit). Bad checkpoints exit 2 naming the file.
cmake_minimum_required(VERSION 3.25)

function(fail msg)
  message(FATAL_ERROR "trainer resume check: ${msg}")
endfunction()

set(items 3000)
set(common --cache ${CACHE} --max-items ${items} --max-test-items 500 --epochs 2
           --batch-size 50 --threads 2 --no-progress --device cpu --rank 0 --world-size 1)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ckpt ${WORK}/trainer.ckpt)

# Runs the trainer with `common` and ARGN; expects exit status `want`; output in `out`.
function(run want)
  execute_process(COMMAND ${TRAINER} ${common} ${ARGN}
                  OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
  if(NOT rc EQUAL want)
    fail("image_trainer ${ARGN}: exit status ${rc}, expected ${want}:\n${o}${e}")
  endif()
  set(out "${o}${e}" PARENT_SCOPE)
endfunction()

include(${CMAKE_CURRENT_LIST_DIR}/record_items.cmake)  # epoch_line, check_resumed_items

# The uninterrupted run.
run(0 --record-items ${WORK}/whole.txt)
set(whole_out "${out}")
epoch_line("${whole_out}" 1 whole_line_1)
epoch_line("${whole_out}" 2 whole_line_2)
string(REGEX MATCH "final test accuracy [0-9.]+" whole_final "${whole_out}")

# Crash, resume and crash, resume to the end.
run(3 --checkpoint ${ckpt} --checkpoint-every 7 --record-items ${WORK}/run1.txt
    --stop-after-steps 40)
run(3 --checkpoint ${ckpt} --checkpoint-every 7 --record-items ${WORK}/run2.txt
    --resume ${ckpt} --stop-after-steps 82)
if(NOT out MATCHES "resuming from [^\n]*trainer\\.ckpt: epoch 1/2, step 35, item 1750 of the epoch")
  fail("run 2 did not resume at step 35:\n${out}")
endif()
epoch_line("${out}" 1 line_1)
run(0 --checkpoint ${ckpt} --checkpoint-every 7 --record-items ${WORK}/run3.txt
    --resume ${ckpt})
if(NOT out MATCHES "resuming from [^\n]*trainer\\.ckpt: epoch 2/2, step 77, item 850 of the epoch")
  fail("run 3 did not resume at step 77:\n${out}")
endif()
epoch_line("${out}" 2 line_2)
string(REGEX MATCH "final test accuracy [0-9.]+" final "${out}")
if(EXISTS ${ckpt}.tmp)
  fail("${ckpt}.tmp was left behind")
endif()

foreach(e 1 2)
  if(NOT line_${e} STREQUAL whole_line_${e})
    fail("resumed '${line_${e}}', uninterrupted '${whole_line_${e}}'")
  endif()
endforeach()
if(final STREQUAL "" OR NOT final STREQUAL whole_final)
  fail("resumed '${final}', uninterrupted '${whole_final}'")
endif()

check_resumed_items(${WORK} ${items})
message(STATUS "resume ok: ${whole_line_1}; ${whole_line_2}; ${whole_final}; every item once "
               "per epoch, in the uninterrupted order")

# Bad checkpoints: exit 2, the file named, the cause said.
run(2 --resume ${WORK}/no-such.ckpt)
if(NOT out MATCHES "cannot resume: cannot open [^\n]*no-such\\.ckpt")
  fail("missing checkpoint: ${out}")
endif()
# The text lines (header, counters, loader, model header) without the model's floats.
file(STRINGS ${ckpt} head LIMIT_COUNT 4)
list(JOIN head "\n" head)
file(WRITE ${WORK}/cut.ckpt "${head}\n")
run(2 --resume ${WORK}/cut.ckpt)
if(NOT out MATCHES "cannot resume from [^\n]*cut\\.ckpt: the saved model is cut short")
  fail("cut checkpoint: ${out}")
endif()
run(2 --resume ${ckpt} --hidden 32)
if(NOT out MATCHES "cannot resume from [^\n]*trainer\\.ckpt: the saved model is 784-64-10, this run's is 784-32-10")
  fail("other model sizes: ${out}")
endif()
run(2 --resume ${ckpt} --seed 5)
if(NOT out MATCHES "cannot resume from [^\n]*trainer\\.ckpt: resume_from: the state was saved with seed 1")
  fail("another seed: ${out}")
endif()
message(STATUS "bad checkpoints ok")
