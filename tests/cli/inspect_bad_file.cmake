# Bad files: the reader's error (with the byte offset) printed as `strata: error: ...`, exit 2, never a crash.
include(${CMAKE_CURRENT_LIST_DIR}/inspect/expect.cmake)
set(stories ${SRC}/models/stories260K.gguf)
file(MAKE_DIRECTORY ${WORK})
find_program(HEAD head REQUIRED)

# Cut in the tensor data, in the tensor infos, and in the key/values.
foreach(cut 1000000 14000 5000 100 3)
  set(part ${WORK}/stories-${cut}.gguf)
  execute_process(COMMAND ${HEAD} -c ${cut} ${stories} OUTPUT_FILE ${part} RESULT_VARIABLE head_rc)
  expect_equal("${head_rc}" "0" "head -c ${cut}")
  run_inspect(${part})
  expect_rc(2 "inspect a copy cut at ${cut} bytes")
  expect_contains("${err}" "strata: error: ${part}" "the error names the file")
  expect_contains("${err}" "byte " "the error names the byte offset")
endforeach()

run_inspect(${WORK}/no-such-file.gguf)
expect_rc(2 "a missing file")
expect_contains("${err}" "no-such-file.gguf" "the error names the missing file")

# A file that is not GGUF at all.
run_inspect(${SRC}/CMakeLists.txt)
expect_rc(2 "a text file")
expect_contains("${err}" "strata: error: " "error prefix")
