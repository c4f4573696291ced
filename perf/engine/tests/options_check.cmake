# SPDX-License-Identifier: Apache-2.0
# ctest check of the benchmarks' command lines (perf/common/args.hpp), on many_sources
# (cmake -P this file):  -DPROGRAM=<many_sources>, or on http_fetch, whose options include
# flags without a value:  -DFLAGS_PROGRAM=<http_fetch>
# --help prints the usage to stdout and exits 0 at once, without running; a trailing option
# without a value, a value that is not a whole number, one out of range and an unknown option
# exit 2 with one line naming the option (and the value), then the usage, on stderr.
cmake_minimum_required(VERSION 3.25)

# Runs `program` with the arguments `args` (a list); fails unless it exits with `want_rc` and
# the regular expressions match its stdout and stderr. A run past 20 s is a benchmark running.
function(expect args want_rc out_regex err_regex)
  execute_process(COMMAND ${program} ${args} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE rc TIMEOUT 20)
  if(NOT rc STREQUAL want_rc OR NOT out MATCHES "${out_regex}" OR NOT err MATCHES "${err_regex}")
    message(FATAL_ERROR "options check, ${program} ${args}: exit status '${rc}', expected "
                        "${want_rc}; stdout must match '${out_regex}', stderr '${err_regex}'\n"
                        "stdout:\n${out}\nstderr:\n${err}")
  endif()
endfunction()

if(DEFINED FLAGS_PROGRAM)
  # A flag takes no value: the option after it is read as an option (a missing value, an
  # unknown name), never as the flag's value. --help still runs nothing (no server is started).
  set(program ${FLAGS_PROGRAM})
  expect("--no-large;--help" 0 "^usage: http_fetch " "^$")
  expect("--no-large;--reps" 2 "^$" "^http_fetch: --reps needs a value\n")
  expect("--no-shards;--bogus;1" 2 "^$" "^http_fetch: unknown option '--bogus'\n")
  expect("--concurrency;1,x" 2 "^$"
         "^http_fetch: --concurrency expects whole numbers, comma-separated, not '1,x'\n")
  return()
endif()

set(program ${PROGRAM})
set(usage "usage: many_sources \\[--items N\\] \\[--reps R\\] \\[--threads T\\]\n$")
expect("--help" 0 "^${usage}" "^$")
expect("--items;10;-h" 0 "^${usage}" "^$")
expect("--reps;1;--items" 2 "^$" "^many_sources: --items needs a value\n${usage}")
expect("--items;abc" 2 "^$" "^many_sources: --items expects a whole number, not 'abc'\n${usage}")
expect("--threads;2x" 2 "^$" "^many_sources: --threads expects a whole number, not '2x'\n")
expect("--items;0" 2 "^$" "^many_sources: --items expects a whole number >= 1, not '0'\n")
expect("--reps;99999999999999999999" 2 "^$"
       "^many_sources: --reps expects a whole number, not '99999999999999999999'\n")
expect("--bogus;1" 2 "^$" "^many_sources: unknown option '--bogus'\n${usage}")
