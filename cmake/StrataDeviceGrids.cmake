# strata_device_grids(<target>): generates <build>/.../generated/device_grids.cuh (the IQ/FP4 lookup tables as
# device arrays, from the format library's grid files, sha256-checked) for a GPU plugin target and adds its folder
# to the target's include path. The cuda and hip plugins both call it; the generator is
# plugins/cuda/embed_device_grids.cmake.
function(strata_device_grids target)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/generated)
  set(out ${out_dir}/device_grids.cuh)
  set(grids ${PROJECT_SOURCE_DIR}/core/format/data/grids)
  file(GLOB grid_files CONFIGURE_DEPENDS ${grids}/*.bin)
  set(script ${PROJECT_SOURCE_DIR}/plugins/cuda/embed_device_grids.cmake)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DFORMAT_SCRIPT=${PROJECT_SOURCE_DIR}/core/format/embed_grids.cmake
            -DGRIDS_DIR=${grids} -DDEVICE_OUTPUT=${out} -P ${script}
    DEPENDS ${script} ${PROJECT_SOURCE_DIR}/core/format/embed_grids.cmake ${grids}/grids.tsv ${grid_files}
    COMMENT "Generating device lookup tables for ${target} from ${grids}"
    VERBATIM)
  add_custom_target(${target}_device_grids DEPENDS ${out})
  add_dependencies(${target} ${target}_device_grids)
  target_include_directories(${target} PRIVATE ${out_dir})
endfunction()
