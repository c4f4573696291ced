# SPDX-License-Identifier: Apache-2.0
# engine.autotune_wallclock (label autotune_wallclock): the tuner's cases judged on the clock
# (autotune_wallclock.cpp), apart from the engine suite so that they run where timing means
# something: tests/CMakeLists.txt includes this where no sanitizer is on, and setup.sh test runs
# the label in the Release build, alone (RUN_SERIAL: no other test shares the machine with it).
# Their bounds are directions and budgets; the policy is proven without a clock in the engine
# suite (tuner_simulator.cpp).
add_executable(autotune_wallclock ${CMAKE_CURRENT_LIST_DIR}/autotune_wallclock.cpp)
target_link_libraries(autotune_wallclock
  PRIVATE ferry::ferry Boost::unit_test_framework ferry_warnings)
target_compile_definitions(autotune_wallclock PRIVATE BOOST_TEST_DYN_LINK)
add_test(NAME engine.autotune_wallclock COMMAND autotune_wallclock --report_level=short)
set_tests_properties(engine.autotune_wallclock PROPERTIES LABELS "autotune_wallclock"
  TIMEOUT 300 RUN_SERIAL TRUE)
