# strata_add_plugin(<name> SOURCES ... [LIBRARIES ...] [OUTPUT_DIR dir] [NO_VERSION_SCRIPT])
#
# The one way a plugin is built: a MODULE library `libstrata-<name>.so` in <build>/plugins/ (or OUTPUT_DIR),
# hidden visibility, no undefined symbols, exporting only the two entry points of plugin_api.h. It links the
# plugin API header and core's small format library, never the host.
set(STRATA_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/strata_plugin.map)

function(strata_add_plugin name)
  cmake_parse_arguments(ARG "NO_VERSION_SCRIPT" "OUTPUT_DIR" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_OUTPUT_DIR)
    set(ARG_OUTPUT_DIR ${STRATA_PLUGIN_OUTPUT_DIR})
  endif()
  set(target strata-${name})
  add_library(${target} MODULE ${ARG_SOURCES})
  set_target_properties(${target} PROPERTIES
    PREFIX "lib"
    OUTPUT_NAME strata-${name}
    LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIR}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    HIP_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE strata_plugin_api strata_format strata_warnings ${ARG_LIBRARIES})
  # Every symbol resolved at link time, except under clang's sanitizers: their runtime lives in the executable
  # (static), and a module's __asan_*/__ubsan_* references resolve against it when the host loads it.
  if(NOT (STRATA_SANITIZE AND CMAKE_CXX_COMPILER_ID MATCHES "Clang"))
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  if(NOT ARG_NO_VERSION_SCRIPT)
    target_link_options(${target} PRIVATE -Wl,--version-script=${STRATA_PLUGIN_VERSION_SCRIPT})
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${STRATA_PLUGIN_VERSION_SCRIPT})
  endif()
  set_property(GLOBAL APPEND PROPERTY STRATA_PLUGIN_TARGETS ${target})
endfunction()
