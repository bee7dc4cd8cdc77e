# `strata engine` as a real process over pipes: a ready line; requests answered token by token and with a done
# line whose ids are `strata run`'s; control lines answered with one CTL line each (refused here: the CPU engine has
# no peer card and no link); bad lines and bad requests answered by name while the process goes on; exit 0 at the
# end of input.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)
set(STORIES ${SRC}/models/stories260K.gguf)
strata_run(0 OUT want ARGS run --model ${STORIES} --backend cpu_avx2 --prompt "Once upon a time" -n 8 --temperature 0 --json)
string(REGEX MATCH "\"generated_ids\":\\[[0-9,]*\\]" want_ids "${want}")

file(WRITE ${WORK}/engine_in.txt
"{\"id\": 1, \"prompt\": \"Once upon a time\", \"max_tokens\": 8, \"temperature\": 0}
PEER_DETACH
POOL_HOLD two
POOL_HOLD 2
LINK_SERVE 1
hello
{\"id\": 2, \"bogus\": 1}
{\"id\": \"s\", \"prompt\": \"Once upon a time\", \"max_tokens\": 8, \"temperature\": 0, \"stream\": false}
{\"id\": \"c\", \"prompt_ids\": [1, 300], \"max_tokens\": -1, \"temperature\": 0, \"stream\": false}
CANCEL \"c\"
")
execute_process(COMMAND ${STRATA} engine --model ${STORIES} -o backend=cpu_avx2 INPUT_FILE ${WORK}/engine_in.txt
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "strata engine exited ${rc}\n${out}\n${err}")
endif()
expect_contains("${out}" "\"event\":\"ready\"")
expect_contains("${out}" "CTL PEER_DETACH refused: this engine has no peer card: runtime.peer_device is -1")
expect_contains("${out}" "CTL ERR POOL_HOLD: 'two' is not a count")
expect_contains("${out}" "CTL POOL_HOLD 2 refused: this engine has no CPU expert pool")
expect_contains("${out}" "CTL LINK_SERVE 1 refused:")
expect_contains("${out}" "CTL ERR unknown line 'hello'")
expect_contains("${out}" "{\"error\":\"unknown field \\\"bogus\\\"")
expect_contains("${out}" "{\"id\":1,\"text\":\",\",\"token\":432}")
# Both requests' done lines carry run's ids; the unstreamed one has no token lines.
expect_contains("${out}" "\"finish_reason\":\"length\",${want_ids},\"id\":1,")
expect_contains("${out}" "\"finish_reason\":\"length\",${want_ids},\"id\":\"s\",")
# "s" repeats request 1: the engine kept that conversation, so all but the prompt's last token are not fed again.
if(NOT out MATCHES "\"id\":\"s\",[^\n]*\"reused_tokens\":[1-9]")
  message(FATAL_ERROR "the repeated request reused nothing of the conversation the engine held:\n${out}")
endif()
# CANCEL "c" came before "c" started (the reader takes control lines while request 1 runs): "c" does not start.
expect_contains("${out}" "CTL CANCEL \"c\" done: request \"c\" is not running; it will not start")
expect_contains("${out}" "{\"decode_seconds\":0.0,\"done\":true,\"finish_reason\":\"cancelled\",\"generated_ids\":[],\"id\":\"c\"")
if(out MATCHES "\"id\":\"s\",\"text\"")
  message(FATAL_ERROR "a request with stream false had token lines:\n${out}")
endif()
string(REGEX MATCHALL "\n" lines "${out}")
list(LENGTH lines n_lines)
# 1 ready, 6 control answers, 1 error, 8 tokens, 3 done = 19 lines.
if(NOT n_lines EQUAL 19)
  message(FATAL_ERROR "expected 19 lines, got ${n_lines}:\n${out}")
endif()
