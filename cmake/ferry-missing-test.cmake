# SPDX-License-Identifier: Apache-2.0
# ferry_missing_test(NAME LABEL WHAT): a test that cannot run here for want of a tool or a
# library is not left out in silence: NAME is registered as a test that fails saying what to
# install, so a green run always means it ran. Included before examples/ and tests/, which both
# register such tests.
function(ferry_missing_test name label what)
  add_test(NAME ${name} COMMAND sh -c "echo '${name}: not run: ${what}' >&2; exit 1")
  set_tests_properties(${name} PROPERTIES LABELS "${label}")
  message(WARNING "${name}: ${what}; the test is registered and fails until then")
endfunction()
