# pcie_balance switched on where there is nothing to balance (the CPU backend: no hybrid path) warns by name and
# changes nothing: the greedy ids equal the run without it. A bad option of the plugin is not reached either.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)
set(STORIES ${SRC}/models/stories260K.gguf)
set(args run --model ${STORIES} --backend cpu_avx2 --prompt "Once upon a time" -n 8 --temperature 0 --json)

strata_run(0 OUT plain ERR plain_err ARGS ${args})
strata_run(0 OUT on ERR on_err ARGS ${args} -o plugins.pcie_balance.enabled=true)
expect_contains("${on_err}" "pcie_balance: unused: it balances the hybrid path's misses")
if(NOT on STREQUAL plain)
  message(FATAL_ERROR "pcie_balance on the CPU backend changed the output:\n${plain}\n---\n${on}")
endif()
