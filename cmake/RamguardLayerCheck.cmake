# The module layering check (tests/tools/check_layers.py), run by the build whenever a daemon
# or client source changes: the order is declared once, RAMGUARD_DAEMON_MODULES in
# daemon/CMakeLists.txt. With RAMGUARD_LAYER_CHECK a violation fails the build (and the
# layer_check ctest); without it the build only prints the violations.
set(layer_script ${PROJECT_SOURCE_DIR}/tests/tools/check_layers.py)
find_program(RAMGUARD_LAYER_PYTHON NAMES python3)
# A source tree without tests/ (the container image's build stage copies only what the programs
# need) or a machine without python3 builds the programs without the check; ./dev.sh and CI
# always have both, and the layer_check ctest runs it too.
if(NOT RAMGUARD_LAYER_PYTHON OR NOT EXISTS ${layer_script})
  message(STATUS "ramguard: layer check skipped (needs python3 and ${layer_script})")
  return()
endif()
# Plain globs (no CONFIGURE_DEPENDS, which would re-glob on every build): a new file comes with
# a CMakeLists.txt change, which re-runs this.
file(GLOB_RECURSE layer_sources ${PROJECT_SOURCE_DIR}/daemon/*.cpp ${PROJECT_SOURCE_DIR}/daemon/*.hpp
     ${PROJECT_SOURCE_DIR}/client/*.cpp ${PROJECT_SOURCE_DIR}/client/*.hpp
     ${PROJECT_SOURCE_DIR}/client/*.h)
set(layer_stamp ${PROJECT_BINARY_DIR}/layer_check.stamp)
if(RAMGUARD_LAYER_CHECK)
  set(layer_mode "")
else()
  set(layer_mode --warn-only)
endif()
add_custom_command(OUTPUT ${layer_stamp}
                   COMMAND ${RAMGUARD_LAYER_PYTHON} ${layer_script} --root ${PROJECT_SOURCE_DIR}
                           --stamp ${layer_stamp} ${layer_mode}
                   DEPENDS ${layer_script} ${PROJECT_SOURCE_DIR}/daemon/CMakeLists.txt
                           ${layer_sources}
                   COMMENT "Checking module layering" VERBATIM)
add_custom_target(layer_check ALL DEPENDS ${layer_stamp})

if(RAMGUARD_BUILD_TESTS)
  # The checker itself, on made-up trees: it must name every kind of violation.
  add_test(NAME layer_check_selftest
           COMMAND ${RAMGUARD_LAYER_PYTHON} ${PROJECT_SOURCE_DIR}/tests/tools/check_layers_test.py)
  set_tests_properties(layer_check_selftest PROPERTIES LABELS tools)
  if(RAMGUARD_LAYER_CHECK)
    add_test(NAME layer_check COMMAND ${RAMGUARD_LAYER_PYTHON} ${layer_script}
                                      --root ${PROJECT_SOURCE_DIR})
    set_tests_properties(layer_check PROPERTIES LABELS tools)
  endif()
endif()
