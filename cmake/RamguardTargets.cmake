# Warnings for ramguard's own targets only; third-party headers are SYSTEM includes.
function(ramguard_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
                                           -Wnon-virtual-dtor)
  # GCC 12 at -O3 (Release) reports a false -Wrestrict inside libstdc++ for every
  # "literal" + std::string&& (GCC bug 105651, fixed in GCC 13).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-Wno-restrict>)
  endif()
  if(RAMGUARD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# One static library per daemon module: ramguard_<name>, aliased ramguard::<name>.
# Headers are included as "<module>/<file>.hpp" relative to daemon/.
function(ramguard_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(ramguard_${name} STATIC ${ARG_SOURCES})
  add_library(ramguard::${name} ALIAS ramguard_${name})
  target_include_directories(ramguard_${name} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/daemon>)
  target_link_libraries(ramguard_${name} PUBLIC ${ARG_DEPS})
  set_target_properties(ramguard_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  ramguard_warnings(ramguard_${name})
endfunction()
