# A launch that needs a plugin that cannot be used exits 2 with the file and the reason.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)

file(WRITE ${WORK}/init.yaml "model: ${SRC}/models/stories260K.gguf\nplugin_path: [${FAKE}/init_fails]\nbackend: init_fails\n")
strata_run(2 ERR err ARGS run --config ${WORK}/init.yaml -p hi -n 2)
expect_contains("${err}" "libstrata-fake_init_fails.so): init failed (device error): fake device refused to start")

file(WRITE ${WORK}/abi.yaml "model: ${SRC}/models/stories260K.gguf\nplugin_path: [${FAKE}/bad_abi]\nbackend: bad_abi\n")
strata_run(2 ERR err ARGS run --config ${WORK}/abi.yaml -p hi -n 2)
expect_contains("${err}" "no plugin named 'bad_abi' was found")
expect_contains("${err}" "built for plugin ABI 2.1, this host speaks 1.1")

file(WRITE ${WORK}/zero.yaml "model: ${SRC}/models/stories260K.gguf\nplugin_path: [${FAKE}/score0]\nbackend: score0\n")
strata_run(2 ERR err ARGS run --config ${WORK}/zero.yaml -p hi -n 2)
expect_contains("${err}" "cannot run on this machine (score 0: no fake accelerator on this machine)")

file(WRITE ${WORK}/throws.yaml "model: ${SRC}/models/stories260K.gguf\nplugin_path: [${FAKE}/init_throws]\nbackend: init_throws\n")
strata_run(2 ERR err ARGS run --config ${WORK}/throws.yaml -p hi -n 2)
expect_contains("${err}" "init failed (internal error): fake init exploded")
