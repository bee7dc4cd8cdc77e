# `strata gate` on stories260K: --save then --check passes (exit 0); a tampered id fails (exit 1) at the named
# position; a launch that differs is reported, not refused; bad input exits 2 with a message.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)
set(STORIES ${SRC}/models/stories260K.gguf)
set(REF ${WORK}/ref.json)
# A small context keeps the long prompt (and the test) short.
set(LAUNCH --model ${STORIES} -o runtime.context=96)

strata_run(0 OUT out ARGS gate ${LAUNCH} -n 6 --save ${REF})
expect_contains("${out}" "long: 90 prompt ids (cut from ")
expect_contains("${out}" "strata gate: saved 4 prompts, 6 ids each")
file(READ ${REF} saved)
string(JSON n_predict GET "${saved}" n_predict)
string(JSON n_prompts LENGTH "${saved}" prompts)
string(JSON n_ids LENGTH "${saved}" prompts 1 ids)
string(JSON name GET "${saved}" prompts 1 name)
string(JSON context GET "${saved}" launch runtime context)
string(JSON vocab GET "${saved}" model n_vocab)
if(NOT n_predict EQUAL 6 OR NOT n_prompts EQUAL 4 OR NOT n_ids EQUAL 6 OR NOT name STREQUAL "code"
   OR NOT context EQUAL 96 OR NOT vocab EQUAL 512)
  message(FATAL_ERROR "unexpected saved file:\n${saved}")
endif()

# The same launch again: every prompt passes.
strata_run(0 OUT out ARGS gate ${LAUNCH} --check ${REF})
foreach(p chat code math long)
  expect_contains("${out}" "${p}: PASS (6 ids)")
endforeach()
expect_contains("${out}" "launch: same as saved")
expect_contains("${out}" "model: stories260K.gguf, same as saved")
expect_contains("${out}" "strata gate: PASS: 4 of 4 prompts pass")

# No --model: the saved run's model; another context is reported, and the saved prompt cut is kept.
strata_run(0 OUT out ARGS gate --check ${REF} -n 4)
expect_contains("${out}" "runtime.context: saved 96, now 4096")
expect_contains("${out}" "n: saved 6, now 4: comparing the first 4 ids of each prompt")
expect_contains("${out}" "long: PASS (4 ids)")

# One generated id changed: that prompt fails at its position, the others pass, exit 1.
string(JSON id3 GET "${saved}" prompts 1 ids 3)
math(EXPR tampered_id "(${id3} + 1) % 512")
string(JSON tampered SET "${saved}" prompts 1 ids 3 ${tampered_id})
file(WRITE ${WORK}/tampered.json "${tampered}")
strata_run(1 OUT out ARGS gate ${LAUNCH} --check ${WORK}/tampered.json)
expect_contains("${out}" "code: FAIL: ids differ at position 3 (sequence position ")
expect_contains("${out}" "saved ${tampered_id} ")
expect_contains("${out}" "now ${id3} ")
expect_contains("${out}" "chat: PASS (6 ids)")
expect_contains("${out}" "strata gate: FAIL: 3 of 4 prompts pass")

# A changed prompt id: the tokenization no longer matches.
string(JSON pid2 GET "${saved}" prompts 0 prompt_ids 2)
math(EXPR other_pid "(${pid2} + 7) % 512")
string(JSON tampered SET "${saved}" prompts 0 prompt_ids 2 ${other_pid})
file(WRITE ${WORK}/prompt.json "${tampered}")
strata_run(1 OUT out ARGS gate ${LAUNCH} --check ${WORK}/prompt.json)
expect_contains("${out}" "chat: FAIL: prompt_ids differ at position 2: saved ${other_pid} ")

# Another file of the same vocabulary is reported and compared (the upcycled MoE gives the dense model's ids).
strata_run(0 OUT out ARGS gate --model ${SRC}/models/stories260K-moe.gguf -o runtime.context=96 --check ${REF})
expect_contains("${out}" "model differs from the saved run's (same vocabulary, so compared anyway):")
expect_contains("${out}" "file: saved stories260K.gguf, now stories260K-moe.gguf")
expect_contains("${out}" "model: saved ")

# A file of another vocabulary is refused: its ids mean other tokens.
string(JSON tampered SET "${saved}" model vocab_hash "\"0000000000000000\"")
file(WRITE ${WORK}/vocab.json "${tampered}")
strata_run(2 ERR err ARGS gate ${LAUNCH} --check ${WORK}/vocab.json)
expect_contains("${err}" "was saved with another vocabulary")
expect_contains("${err}" "save one with --save")

# --prompts: a JSON array of {name, text}.
file(WRITE ${WORK}/prompts.json "[{\"name\": \"story\", \"text\": \"Once upon a time\"}]")
strata_run(0 OUT out ARGS gate ${LAUNCH} -n 3 --prompts ${WORK}/prompts.json --save ${WORK}/story.json)
expect_contains("${out}" "story: 5 prompt ids, 3 ids (stop n_predict)")
strata_run(0 OUT out ARGS gate ${LAUNCH} --check ${WORK}/story.json)
expect_contains("${out}" "story: PASS (3 ids)")
file(WRITE ${WORK}/lines.txt "Once upon a time\nThe end\n")
strata_run(2 ERR err ARGS gate ${LAUNCH} --prompts ${WORK}/lines.txt --save ${WORK}/x.json)
expect_contains("${err}" "lines.txt: not valid JSON")
expect_contains("${err}" "a prompt file is a JSON array of")

# Bad input: exit 2, a message naming the problem and the fix.
strata_run(2 ERR err ARGS gate ${LAUNCH} --check ${WORK}/missing.json)
expect_contains("${err}" "cannot read the saved gate file '${WORK}/missing.json'")
file(WRITE ${WORK}/broken.json "{\"format\": \"strata gate\", ")
strata_run(2 ERR err ARGS gate ${LAUNCH} --check ${WORK}/broken.json)
expect_contains("${err}" "broken.json: not valid JSON (byte")
strata_run(2 ERR err ARGS gate ${LAUNCH} --check ${WORK}/prompts.json)
expect_contains("${err}" "the top level is not an object")
strata_run(2 ERR err ARGS gate ${LAUNCH})
expect_contains("${err}" "needs exactly one of --save FILE (write a reference) and --check FILE")
strata_run(2 ERR err ARGS gate ${LAUNCH} --save ${WORK}/a.json --check ${REF})
expect_contains("${err}" "needs exactly one of --save FILE")
strata_run(2 ERR err ARGS gate ${LAUNCH} --chek ${REF})
expect_contains("${err}" "unknown option '--chek' for 'strata gate' (did you mean '--check'?)")
strata_run(2 ERR err ARGS gate ${LAUNCH} --prompts ${WORK}/prompts.json --check ${REF})
expect_contains("${err}" "--prompts is for --save")
strata_run(2 ERR err ARGS gate ${LAUNCH} -n 96 --save ${WORK}/a.json)
expect_contains("${err}" "-n 96 leaves no room for a prompt in runtime.context 96")
strata_run(2 ERR err ARGS gate ${LAUNCH} --save ${WORK}/no/such/ref.json)
expect_contains("${err}" "cannot write '${WORK}/no/such/ref.json': the folder ${WORK}/no/such does not exist")
strata_run(2 ERR err ARGS gate ${LAUNCH} -n 0 --save ${WORK}/a.json)
expect_contains("${err}" "option --n-predict: 0 is out of range")
if(EXISTS ${WORK}/a.json)
  message(FATAL_ERROR "a refused gate wrote its file")
endif()
strata_run(0 OUT out ARGS gate --help)
expect_contains("${out}" "usage: strata gate")
