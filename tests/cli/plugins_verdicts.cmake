# `strata plugins` lists every file examined with its verdict and exits 0, whatever the verdicts.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)

strata_run(0 OUT out ARGS plugins --plugin-path ${FAKE}/good --plugin-path ${FAKE}/bad_abi
           --plugin-path ${FAKE}/score0 --plugin-path ${FAKE}/init_fails --plugin-path ${FAKE}/garbage
           --plugin-path ${FAKE}/shadow)
expect_contains("${out}" "good           0.0.1    backend  10     usable")
expect_contains("${out}" "device 0: cpu [fake] fake device 0")
expect_contains("${out}" "built for plugin ABI 2.0, this host speaks 1.0")
expect_contains("${out}" "unusable here")
expect_contains("${out}" "no fake accelerator on this machine")
expect_contains("${out}" "init failed")
expect_contains("${out}" "fake device refused to start")
expect_contains("${out}" "cannot open")
expect_contains("${out}" "shadowed")

strata_run(0 OUT json ARGS plugins --plugin-path ${FAKE}/good --json)
expect_contains("${json}" "\"verdict\": \"usable\"")
expect_contains("${json}" "\"name\": \"fake device 1\"")

# Plugin options from a launch reach the plugin; one it does not know fails its init, named.
file(WRITE ${WORK}/launch.yaml "plugin_path: [${FAKE}/good]\nplugins:\n  good: {devices: 3}\n")
strata_run(0 OUT out ARGS plugins --config ${WORK}/launch.yaml)
expect_contains("${out}" "device 2:")
file(WRITE ${WORK}/bad.yaml "plugin_path: [${FAKE}/good]\nplugins:\n  good: {colour: blue}\n")
strata_run(0 OUT out ARGS plugins --config ${WORK}/bad.yaml)
expect_contains("${out}" "unknown option 'colour=blue'")
