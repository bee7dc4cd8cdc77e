# runtime.peer_device and runtime.layer_split on the CPU backend: refused by name with the fix (exit 2, as every launch error), no crash;
# the default (-1, 0) and peer_device -1 written out change nothing.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)
set(STORIES ${SRC}/models/stories260K.gguf)
set(args run --model ${STORIES} --backend cpu_avx2 --prompt "Once upon a time" -n 8 --temperature 0 --json)

strata_run(0 OUT plain ERR plain_err ARGS ${args})
strata_run(0 OUT modes_off ERR modes_off_err ARGS ${args} -o runtime.peer_device=-1 -o runtime.layer_split=0)
if(NOT modes_off STREQUAL plain)
  message(FATAL_ERROR "peer_device -1 and layer_split 0 changed the output:\n${plain}\n---\n${modes_off}")
endif()
strata_run(2 OUT o ERR peer_err ARGS ${args} -o runtime.peer_device=0)
expect_contains("${peer_err}" "runtime.peer_device 0 needs a GPU backend (cuda, hip)")
expect_contains("${peer_err}" "set backend to cuda or runtime.peer_device to -1")
strata_run(2 OUT o ERR split_err ARGS ${args} -o runtime.layer_split=3)
expect_contains("${split_err}" "runtime.layer_split 3 splits the layers between two GPUs")
strata_run(2 OUT o ERR bad_err ARGS ${args} -o runtime.peer_device=-2)
expect_contains("${bad_err}" "runtime.peer_device")
