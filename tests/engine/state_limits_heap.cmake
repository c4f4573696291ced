# SPDX-License-Identifier: Apache-2.0
# engine.state_limits_heap (label engine): what a small merged state costs the heap, measured
# with glibc's mallinfo2, which AddressSanitizer's allocator hides. tests/CMakeLists.txt includes
# this in every build, the Release one (FERRY_UNIT_TESTS=OFF) too, where it measures; in the
# sanitizer builds its one case is skipped by precondition, and ctest reports it Skipped.
add_executable(state_limits_heap ${CMAKE_CURRENT_LIST_DIR}/state_limits_heap.cpp)
target_link_libraries(state_limits_heap
  PRIVATE ferry::core Boost::unit_test_framework ferry_warnings)
target_compile_definitions(state_limits_heap PRIVATE BOOST_TEST_DYN_LINK)
add_test(NAME engine.state_limits_heap COMMAND state_limits_heap --report_level=short)
set_tests_properties(engine.state_limits_heap PROPERTIES LABELS "engine" TIMEOUT 120
  SKIP_REGULAR_EXPRESSION "SKIPPED engine/state_limits_heap")
