# SPDX-License-Identifier: Apache-2.0
# ctest checks for image_trainer on bad folders (cmake -P this file):
#   -DTRAINER=<image_trainer> -DCORPUS=<folder of good images> -DWORK=<scratch> -DCHECK=<name>
# CHECK=missing: --data names a folder that does not exist: exit 2, a message naming the layout
# CHECK=corrupt: an image folder with a zero-byte and a garbage file among good images: the bad
#                files are skipped and listed as failures, training runs, exit 0
# CHECK=device:  --device takes auto, cpu or cuda only; --device cuda where no GPU can train
#                (-DGPU_MODEL=OFF: built without CUDA; ON: no device here) exits 2 naming why,
#                before touching the data; --device cpu never asks for a GPU
cmake_minimum_required(VERSION 3.25)

function(fail msg)
  message(FATAL_ERROR "trainer check '${CHECK}': ${msg}")
endfunction()

if(CHECK STREQUAL "missing")
  execute_process(COMMAND ${TRAINER} --data ${WORK}/no-such-folder --epochs 1 --no-progress
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "needs train/ and test/ subfolders")
    fail("exit status ${rc}, message '${err}'")
  endif()
  message(STATUS "missing folder ok: ${err}")
elseif(CHECK STREQUAL "corrupt")
  file(REMOVE_RECURSE ${WORK})
  foreach(split train test)
    foreach(cls bags shoes)
      file(MAKE_DIRECTORY ${WORK}/${split}/${cls})
    endforeach()
  endforeach()
  file(COPY ${CORPUS}/baseline.jpg ${CORPUS}/progressive.jpg ${CORPUS}/rgb.png ${CORPUS}/rgb.bmp
       DESTINATION ${WORK}/train/bags)
  file(COPY ${CORPUS}/gray.jpg ${CORPUS}/gray.png ${CORPUS}/gray.bmp ${CORPUS}/lossy.webp
       DESTINATION ${WORK}/train/shoes)
  file(COPY ${CORPUS}/rgba.png DESTINATION ${WORK}/test/bags)
  file(COPY ${CORPUS}/16bit.png DESTINATION ${WORK}/test/shoes)
  file(WRITE ${WORK}/train/bags/empty.png "")
  file(WRITE ${WORK}/train/shoes/garbage.jpg "not an image")
  execute_process(COMMAND ${TRAINER} --data ${WORK} --epochs 2 --batch-size 4 --no-progress
                          --threads 2
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    fail("exit status ${rc}: ${out}${err}")
  endif()
  # 10 training files a epoch, 2 of them bad: 2 epochs -> 4 failures, each naming its cause.
  if(NOT out MATCHES "10 train / 2 test images, 2 classes" OR NOT out MATCHES "epoch 2/2"
     OR NOT out MATCHES "failures: 4" OR NOT out MATCHES "empty input \\(0 bytes\\)"
     OR NOT out MATCHES "unsupported image format")
    fail("unexpected output:\n${out}")
  endif()
  message(STATUS "corrupt folder ok: trained 2 epochs, 4 failures reported")
elseif(CHECK STREQUAL "device")
  execute_process(COMMAND ${TRAINER} --device tpu --data ${WORK}/no-such-folder
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(rc EQUAL 0 OR NOT err MATCHES "--device: tpu not in \\{auto,cpu,cuda\\}")
    fail("--device tpu: exit status ${rc}, message '${err}'")
  endif()
  execute_process(COMMAND ${TRAINER} --device cpu --data ${WORK}/no-such-folder --no-progress
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 2 OR NOT err MATCHES "needs train/ and test/ subfolders")
    fail("--device cpu: exit status ${rc}, message '${err}'")
  endif()
  # A missing --data folder: the device is decided first, so a GPU-less run fails on that.
  execute_process(COMMAND ${TRAINER} --device cuda --data ${WORK}/no-such-folder --no-progress
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(GPU_MODEL)
    # Here either no device (the reason) or one (then the run goes on to the missing folder).
    set(expected "--device cuda: cannot train on a GPU: no CUDA device|needs train/ and test/")
  else()
    set(expected "--device cuda: cannot train on a GPU: this image_trainer was built without CUDA")
  endif()
  if(NOT rc EQUAL 2 OR NOT err MATCHES "${expected}")
    fail("--device cuda: exit status ${rc}, message '${err}'")
  endif()
  message(STATUS "device choice ok: ${err}")
else()
  fail("unknown check")
endif()
