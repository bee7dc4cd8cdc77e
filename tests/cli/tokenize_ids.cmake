# `strata tokenize`: ids on one line, --file bytes exactly, --no-bos, --special, --pieces, and usage errors
# (exit 2). Run by ctest with -DSTRATA=<exe> -DSRC=<source dir> -DDATA=<tests/data> -DWORK=<scratch dir>.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(GPT2 ${DATA}/vocab/ggml-vocab-gpt-2.gguf)
set(STORIES ${SRC}/models/stories260K.gguf)

function(expect_run name expected_rc expected_out)
  execute_process(COMMAND ${STRATA} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expected_rc)
    message(FATAL_ERROR "${name}: exit ${rc}, expected ${expected_rc}\nstdout: ${out}\nstderr: ${err}")
  endif()
  if(NOT out STREQUAL expected_out)
    message(FATAL_ERROR "${name}: stdout is\n[${out}]\nexpected\n[${expected_out}]\nstderr: ${err}")
  endif()
  set(last_err "${err}" PARENT_SCOPE)
endfunction()

function(expect_error name pattern)
  expect_run(${name} 2 "" ${ARGN})
  if(NOT last_err MATCHES "${pattern}")
    message(FATAL_ERROR "${name}: stderr does not match '${pattern}':\n${last_err}")
  endif()
endfunction()

# llama.cpp's vector for "Hello world" (gpt-2 adds no BOS).
expect_run(text 0 "15496 995\n" tokenize --model ${GPT2} --text "Hello world")
# --file: the file's bytes exactly, its trailing newline included (198 is "\n").
file(WRITE ${WORK}/hello.txt "Hello world\n")
expect_run(file 0 "15496 995 198\n" tokenize --model ${GPT2} --file ${WORK}/hello.txt)
file(WRITE ${WORK}/empty.txt "")
expect_run(empty_file 0 "\n" tokenize --model ${GPT2} --file ${WORK}/empty.txt)
# SentencePiece: BOS and the dummy prefix, as llama2.c encodes its prompt.
expect_run(stories 0 "1 403 407 261 378\n" tokenize --model ${STORIES} --text "Once upon a time")
expect_run(no_bos 0 "403 407 261 378\n" tokenize -m ${STORIES} -t "Once upon a time" --no-bos)
# Control tokens only with --special.
expect_run(special 0 "50256\n" tokenize --model ${GPT2} --text "<|endoftext|>" --special)
expect_run(not_special 0 "27 91 437 1659 5239 91 29\n" tokenize --model ${GPT2} --text "<|endoftext|>")
expect_run(pieces 0 "15496 995\n 15496 'Hello'\n   995 ' world'\n" tokenize --model ${GPT2} --text "Hello world" --pieces)

expect_error(unknown_flag "unknown option '--bogus'" tokenize --model ${GPT2} --text x --bogus)
expect_error(both_inputs "exactly one of --text" tokenize --model ${GPT2} --text x --file ${WORK}/hello.txt)
expect_error(no_input "exactly one of --text" tokenize --model ${GPT2})
expect_error(no_model "needs --model" tokenize --text x)
expect_error(missing_model "nope.gguf" tokenize --model ${WORK}/nope.gguf --text x)
expect_error(missing_file "cannot read --file" tokenize --model ${GPT2} --file ${WORK}/nope.txt)
