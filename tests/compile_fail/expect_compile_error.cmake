# SPDX-License-Identifier: Apache-2.0
# Compiles one tests/compile_fail/*.cpp and passes only when the compiler refuses it as the file
# says: the first "error:" line matches the file's `// expect-error: <regex>` (a CMake regex),
# the output has exactly `// expect-errors: N` error lines (default 1: one message per mistake),
# and it is at most N * MAX_LINES lines long (no cascade after the message).
#   cmake -DCXX=<compiler> -DSOURCE=<file.cpp> -DINCLUDE_DIR=<include/> -DMAX_LINES=<n>
#         -P expect_compile_error.cmake
foreach(_var CXX SOURCE INCLUDE_DIR MAX_LINES)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "expect_compile_error.cmake: -D${_var}=... is missing")
  endif()
endforeach()

file(STRINGS "${SOURCE}" _expect REGEX "^// expect-error: ")
list(LENGTH _expect _n)
if(NOT _n EQUAL 1)
  message(FATAL_ERROR "${SOURCE}: needs exactly one `// expect-error: <regex>` line (has ${_n})")
endif()
string(REGEX REPLACE "^// expect-error: " "" _regex "${_expect}")
set(_errors 1)
file(STRINGS "${SOURCE}" _count REGEX "^// expect-errors: [0-9]+$")
if(_count)
  string(REGEX REPLACE "^// expect-errors: " "" _errors "${_count}")
endif()

# The C locale: plain ASCII quotes and English "error:" whatever the machine's language.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env LC_ALL=C "${CXX}" -std=c++20 -fsyntax-only
          -fdiagnostics-color=never "-I${INCLUDE_DIR}" "${SOURCE}"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
message("${_out}")
if(_rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must not")
endif()

# The output quotes C++ (`[with T = int; F = ...]`): no semicolon may split it as a CMake list.
string(REPLACE ";" "<semicolon>" _safe "${_out}")
string(REGEX MATCH "[^\n]*: (fatal )?error: [^\n]*" _first "${_safe}")
if(NOT _first)
  message(FATAL_ERROR "the compiler failed (exit ${_rc}) without an error line")
endif()
if(NOT _first MATCHES "${_regex}")
  message(FATAL_ERROR "the first error is not the expected one\n"
                      "  first error: ${_first}\n  expected:    ${_regex}")
endif()
string(REGEX MATCHALL "[^\n]*: (fatal )?error: " _all "${_safe}")
list(LENGTH _all _got)
if(NOT _got EQUAL _errors)
  message(FATAL_ERROR "${_got} errors, expected ${_errors} (one per mistake, no cascade)")
endif()
string(REGEX MATCHALL "\n" _newlines "${_out}")
list(LENGTH _newlines _lines)
math(EXPR _most "${_errors} * ${MAX_LINES}")
if(_lines GREATER _most)
  message(FATAL_ERROR "${_lines} lines of diagnostics, expected at most ${_most}")
endif()
message(STATUS "as expected: ${_got} error(s), ${_lines} lines, the first: ${_first}")
