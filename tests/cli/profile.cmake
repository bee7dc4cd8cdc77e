# `strata profile` on the reference backend writes the routing profile (beside the model without --out, or where
# --out says), a run fills from it (a file, or auto), each bad profile stops the start with exit 2 and its message,
# experts.record writes the run's counts, and run and bench print the startup line (bench --json: `startup`).
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)
set(MOE ${WORK}/moe.gguf)
file(COPY_FILE ${SRC}/models/stories260K-moe.gguf ${MOE})
set(DENSE ${SRC}/models/stories260K.gguf)

# The built-in prompts, written beside the model.
strata_run(0 ERR err ARGS profile --model ${MOE} --backend reference -n 4)
expect_contains("${err}" "strata profile: 8 prompts")
expect_contains("${err}" "on reference")
expect_contains("${err}" "wrote ${MOE}.profile.json")
file(READ ${MOE}.profile.json profile)
string(JSON format GET "${profile}" format)
string(JSON n_layer GET "${profile}" model n_layer)
string(JSON n_expert GET "${profile}" model n_expert)
string(JSON name GET "${profile}" model name)
string(JSON bytes GET "${profile}" model file_bytes)
string(JSON positions GET "${profile}" positions)
string(JSON prompts GET "${profile}" source prompts)
string(JSON rows LENGTH "${profile}" counts)
string(JSON row0 LENGTH "${profile}" counts 0)
file(SIZE ${MOE} moe_bytes)
if(NOT format STREQUAL "strata-expert-profile" OR NOT name STREQUAL "moe.gguf" OR NOT bytes EQUAL moe_bytes
   OR NOT rows EQUAL n_layer OR NOT row0 EQUAL n_expert OR NOT positions GREATER 40
   OR NOT prompts STREQUAL "built-in (8 prompts)")
  message(FATAL_ERROR "unexpected profile:\n${profile}")
endif()

# A prompt file (one a line, empty lines skipped) and --out.
file(WRITE ${WORK}/prompts.txt "Once upon a time\n\nThe cat sat on the mat.\\nThen it slept.\n")
strata_run(0 ERR err ARGS profile --model ${MOE} --backend reference --prompts ${WORK}/prompts.txt -n 2
           --out ${WORK}/two.json)
expect_contains("${err}" "strata profile: 2 prompts")
file(READ ${WORK}/two.json two)
string(JSON count GET "${two}" source prompt_count)
string(JSON decode GET "${two}" source decode_tokens)
if(NOT count EQUAL 2 OR NOT decode EQUAL 2)
  message(FATAL_ERROR "--prompts with 2 prompts and -n 2:\n${two}")
endif()
file(WRITE ${WORK}/empty.txt "\n\n")
strata_run(2 ERR err ARGS profile --model ${MOE} --prompts ${WORK}/empty.txt --out ${WORK}/x.json)
expect_contains("${err}" "has no prompts")
strata_run(2 ERR err ARGS profile --model ${MOE} --out ${WORK}/no/such/folder/x.json)
expect_contains("${err}" "does not exist")

# A run with the profile: a file, or auto (the one beside the model), named in the log.
strata_run(0 ERR err ARGS --log-level info run --model ${MOE} --backend reference --prompt "Once" -n 4
           -o experts.profile=${WORK}/two.json)
expect_contains("${err}" "experts.profile: ${WORK}/two.json")
expect_contains("${err}" "startup: ready in")
expect_contains("${err}" "first token at")
strata_run(0 ERR err ARGS --log-level info run --model ${MOE} --backend reference --prompt "Once" -n 4
           -o experts.profile=auto)
expect_contains("${err}" "experts.profile auto: ${MOE}.profile.json")
file(REMOVE ${MOE}.profile.json)
strata_run(0 ERR err ARGS --log-level info run --model ${MOE} --backend reference --prompt "Once" -n 4
           -o experts.profile=auto)
expect_contains("${err}" "no profile beside the model")

# Bad profiles: exit 2 with the problem and the fix, never a crash.
file(WRITE ${WORK}/bad.json "{\"format\": \"strata-expert-profile\", ")
strata_run(2 ERR err ARGS run --model ${MOE} --prompt "Once" -n 4 -o experts.profile=${WORK}/bad.json)
expect_contains("${err}" "not an expert profile: not valid JSON")
string(REGEX REPLACE "\\[([0-9]+), " "[" short "${two}")
file(WRITE ${WORK}/short.json "${short}")
strata_run(2 ERR err ARGS run --model ${MOE} --prompt "Once" -n 4 -o experts.profile=${WORK}/short.json)
expect_contains("${err}" "counts[0] has")
expect_contains("${err}" "experts per layer")
strata_run(2 ERR err ARGS run --model ${DENSE} --prompt "Once" -n 4 -o experts.profile=${WORK}/two.json)
expect_contains("${err}" "is a dense model")
strata_run(2 ERR err ARGS profile --model ${DENSE} --out ${WORK}/dense.json)
expect_contains("${err}" "dense model")

# experts.record: the run's counts, written at the end.
strata_run(0 ARGS run --model ${MOE} --prompt "Once upon a time" -n 8 -o experts.record=${WORK}/rec.json)
file(READ ${WORK}/rec.json rec)
string(JSON by GET "${rec}" source recorded_by)
string(JSON positions GET "${rec}" positions)
if(NOT by STREQUAL "experts.record" OR NOT positions EQUAL 12)
  message(FATAL_ERROR "experts.record after a 5-token prompt and 7 fed decode tokens:\n${rec}")
endif()
strata_run(2 ERR err ARGS run --model ${MOE} --prompt "Once" -o experts.record=${WORK}/no/such/rec.json)
expect_contains("${err}" "experts.record")

# bench: the startup line, and `startup` in each JSON entry.
strata_run(0 OUT out ERR err ARGS bench --model ${MOE} -p 8 -n 4 -r 1 --json)
expect_contains("${err}" "strata bench: startup: ready in")
string(JSON ready GET "${out}" 0 startup ready_s)
string(JSON first GET "${out}" 0 startup first_token_s)
if(NOT ready GREATER 0 OR first LESS ready)
  message(FATAL_ERROR "bench --json's startup: ready ${ready} s, first token ${first} s:\n${out}")
endif()
