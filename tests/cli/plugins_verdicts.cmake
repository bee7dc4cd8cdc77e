# `strata plugins` lists every file examined with its verdict and exits 0, whatever the verdicts.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)

# plugins_with_launch(OUT FOLDER PLUGIN OPTIONS): `strata plugins` on a launch that finds plugins in ${FAKE}/FOLDER and
# gives PLUGIN the YAML flow map OPTIONS; its stdout in OUT (exit 0 expected).
function(plugins_with_launch out folder plugin options)
  file(WRITE ${WORK}/${plugin}-launch.yaml "plugin_path: [${FAKE}/${folder}]\nplugins:\n  ${plugin}: ${options}\n")
  strata_run(0 OUT text ARGS plugins --config ${WORK}/${plugin}-launch.yaml)
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

strata_run(0 OUT out ARGS plugins --plugin-path ${FAKE}/good --plugin-path ${FAKE}/bad_abi
           --plugin-path ${FAKE}/score0 --plugin-path ${FAKE}/init_fails --plugin-path ${FAKE}/garbage
           --plugin-path ${FAKE}/shadow)
expect_contains("${out}" "good           0.0.1    backend  10     usable")
expect_contains("${out}" "device 0: cpu [fake] fake device 0")
expect_contains("${out}" "built for plugin ABI 2.1, this host speaks 1.1")
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
plugins_with_launch(out good good "{devices: 3}")
expect_contains("${out}" "device 2:")
plugins_with_launch(out good good "{colour: blue}")
expect_contains("${out}" "unknown option 'colour=blue'")

# A plugin whose descriptor names options a launch must give is usable: without a launch giving them it is listed
# with what a launch gives it, not initialised with nothing (which could only fail); given them, it is initialised.
strata_run(0 OUT out ARGS plugins --plugin-path ${FAKE}/needs_option)
if(NOT out MATCHES "needs_option +0\\.0\\.1 +backend +10 +usable")
  message(FATAL_ERROR "needs_option is not listed usable:\n${out}")
endif()
expect_contains("${out}" "a launch gives it token=TEXT (plugins.needs_option); not initialised without them")
if(out MATCHES "init failed")
  message(FATAL_ERROR "needs_option was initialised without its options:\n${out}")
endif()
strata_run(0 OUT json ARGS plugins --plugin-path ${FAKE}/needs_option --json)
string(JSON required GET "${json}" plugins 0 required_options 0)
string(JSON initialised GET "${json}" plugins 0 initialised)
string(JSON verdict GET "${json}" plugins 0 verdict)
if(NOT required STREQUAL "token=TEXT" OR initialised OR NOT verdict STREQUAL "usable")
  message(FATAL_ERROR "needs_option in JSON: required ${required}, initialised ${initialised}, verdict ${verdict}:\n${json}")
endif()
plugins_with_launch(out needs_option needs_option "{token: abc, devices: 1}")
expect_contains("${out}" "device 0: cpu [fake] fake device 0")
# A launch that gives it options, but not the one it needs, is a launch asked for: its init fails, named.
plugins_with_launch(out needs_option needs_option "{devices: 1}")
expect_contains("${out}" "init failed")
expect_contains("${out}" "option token is required")

# The real peerlink (the build's plugin folder) is such a plugin: the link file and role come from a launch.
strata_run(0 OUT out ARGS plugins)
if(NOT out MATCHES "peerlink +[0-9.]+ +feature +[0-9]+ +usable")
  message(FATAL_ERROR "peerlink is not listed usable by a plain `strata plugins`:\n${out}")
endif()
expect_contains("${out}" "a launch gives it file=PATH, role=0|1 (plugins.peerlink)")
