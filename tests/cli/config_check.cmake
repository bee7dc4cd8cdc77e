# `strata config check` reports every error as FILE:LINE:COLUMN, schema errors before missing files, exit 2.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)

file(WRITE ${WORK}/bad.yaml "model: missing.gguf\nexpetrs:\n  cache: 25%\nruntime:\n  context: big\n  slots: 100\n")
strata_run(2 ERR err ARGS config check ${WORK}/bad.yaml)
expect_contains("${err}" "bad.yaml:2:1: unknown key 'expetrs' (did you mean 'experts'?)")
expect_contains("${err}" "bad.yaml:5:12: runtime.context: expected an integer")
expect_contains("${err}" "bad.yaml:6:10: runtime.slots: 100 is out of range")
expect_contains("${err}" "model: file not found")
expect_contains("${err}" "4 errors")
# Schema errors come before the missing file.
string(FIND "${err}" "expetrs" schema_pos)
string(FIND "${err}" "file not found" missing_pos)
if(NOT schema_pos LESS missing_pos)
  message(FATAL_ERROR "schema errors must come before missing files:\n${err}")
endif()

strata_run(0 OUT out ARGS config check ${SRC}/configs/default.yaml)
# Every shipped launch checks (the GPU ones too: checking needs no GPU).
file(GLOB shipped ${SRC}/configs/*.yaml)
foreach(launch ${shipped})
  get_filename_component(launch_name ${launch} NAME)
  strata_run(0 OUT launch_out ARGS config check ${launch})
  expect_contains("${launch_out}" "${launch_name}: ok")
endforeach()
expect_contains("${out}" "default.yaml: ok")

# Precedence: the file, then STRATA_* switches, then -o; show says where each value came from.
strata_run(0 OUT out ARGS config show ${SRC}/configs/default.yaml -o runtime.context=8192)
expect_contains("${out}" "context: 8192")
expect_contains("${out}" "# -o")
strata_run(2 ERR err ARGS config show ${SRC}/configs/default.yaml -o runtime.contxt=1)
expect_contains("${err}" "did you mean 'runtime.context'?")
