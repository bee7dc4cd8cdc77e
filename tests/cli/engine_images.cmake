# `strata engine` with images (a Qwen3-VL model and its projector: mkmodel's tiny qwen3vlmoe pair): a request's
# "images" at the prompt's <__media__> marker gives `strata run --image`'s ids; the same request again reuses the
# held image (the slot's prompt is keyed by the image's bytes); another image (a data URL) is fed again; -1 in
# prompt_ids places an image there; mismatched marks, unreadable images and an engine without --mmproj answer an
# error line by name while the process goes on.
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)

strata_run(0 ARGS mkmodel --arch qwen3vlmoe --layers 3 --vocab 1000 --threads 2 --out m.gguf --mmproj-out p.gguf)
# Two 32 x 32 PPMs whose bytes are printable text; the second as a data URL (base64 of "P6\n1 1\n255\n" + 3 bytes
# would be too small a picture: the projector takes at least 8 tokens, so it is resized; both decode).
string(REPEAT "a~0" 1024 pixels_a)
file(WRITE ${WORK}/a.ppm "P6\n32 32\n255\n${pixels_a}")
string(REPEAT "Zq5" 1024 pixels_b)
file(WRITE ${WORK}/b.ppm "P6\n32 32\n255\n${pixels_b}")
file(READ ${WORK}/b.ppm b_hex HEX)
# CMake has no base64: the data URL carries the bytes percent-encoded.
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "%\\1" b_percent "${b_hex}")

strata_run(0 OUT want ARGS run --model m.gguf --mmproj p.gguf --image a.ppm --prompt "look <__media__> here"
           -n 6 --temperature 0 --backend reference --json)
string(REGEX MATCH "\"generated_ids\":\\[[0-9,]*\\]" want_ids "${want}")
string(REGEX MATCH "\"prompt_ids\":\\[[0-9,]*\\]" run_prompt "${want}")

file(WRITE ${WORK}/engine_in.txt
"{\"id\": 1, \"prompt\": \"look <__media__> here\", \"images\": [\"a.ppm\"], \"max_tokens\": 6, \"temperature\": 0, \"stream\": false}
{\"id\": 2, \"prompt\": \"look <__media__> here\", \"images\": [\"a.ppm\"], \"max_tokens\": 6, \"temperature\": 0, \"stream\": false}
{\"id\": 3, \"prompt\": \"look <__media__> here\", \"images\": [\"data:image/x-portable-pixmap,${b_percent}\"], \"max_tokens\": 6, \"temperature\": 0, \"stream\": false}
{\"id\": 4, \"prompt_ids\": [5, -1, 7], \"images\": [\"a.ppm\"], \"max_tokens\": 2, \"temperature\": 0, \"stream\": false}
{\"id\": 5, \"prompt_ids\": [5, -1, 7], \"max_tokens\": 2}
{\"id\": 6, \"prompt\": \"x\", \"images\": [\"missing.png\"], \"max_tokens\": 2}
{\"id\": 7, \"prompt\": \"<__media__> and <__media__>\", \"images\": [\"a.ppm\"], \"max_tokens\": 2}
{\"id\": 8, \"prompt\": \"x\", \"images\": [\"https://example.com/a.png\"], \"max_tokens\": 2}
")
execute_process(COMMAND ${STRATA} engine --model m.gguf --mmproj p.gguf -o backend=reference
                INPUT_FILE ${WORK}/engine_in.txt WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "strata engine exited ${rc}\n${out}\n${err}")
endif()
# Request 1 gives run's ids; request 2, the same image again, reuses all but the last prompt token.
expect_contains("${out}" "\"finish_reason\":\"length\",${want_ids},\"id\":1,\"images\":1,")
string(REGEX MATCH "\"id\":1,[^\n]*\"prompt_tokens\":([0-9]+)" m1 "${out}")
set(prompt_tokens ${CMAKE_MATCH_1})
math(EXPR held "${prompt_tokens} - 1")
expect_contains("${out}" "\"finish_reason\":\"length\",${want_ids},\"id\":2,")
if(NOT out MATCHES "\"id\":2,[^\n]*\"reused_tokens\":${held},")
  message(FATAL_ERROR "the same image again did not reuse the held prompt (${held} tokens):\n${out}")
endif()
# Request 3, another image at the same place: the prefix stops before the image (an image is at least 8 tokens,
# and <|vision_end|> and " here" follow it).
string(REGEX MATCH "\"id\":3,[^\n]*\"reused_tokens\":([0-9]+)" m3 "${out}")
math(EXPR before_image "${held} - 10")
if(NOT m3 OR CMAKE_MATCH_1 GREATER before_image)
  message(FATAL_ERROR "another image reused the held image's positions:\n${out}")
endif()
expect_contains("${out}" "\"id\":4,\"images\":1,")
expect_contains("${out}" "{\"error\":\"\\\"prompt_ids\\\" holds 1 image marks (-1) and \\\"images\\\" 0 images: give one image per mark\",\"id\":5}")
expect_contains("${out}" "{\"error\":\"\\\"images\\\"[0]: cannot open image missing.png")
expect_contains("${out}" "the prompt has 2 <__media__> markers and 1 images")
expect_contains("${out}" "fetches nothing from the network")

# An engine without a projector answers a request with images by name, and goes on.
file(WRITE ${WORK}/plain_in.txt
"{\"id\": 1, \"prompt\": \"look\", \"images\": [\"a.ppm\"], \"max_tokens\": 2}
{\"id\": 2, \"prompt\": \"look\", \"max_tokens\": 2, \"stream\": false}
")
execute_process(COMMAND ${STRATA} engine --model m.gguf -o backend=reference
                INPUT_FILE ${WORK}/plain_in.txt WORKING_DIRECTORY ${WORK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT 120)
expect_contains("${out}" "this engine has no vision projector; start it with --mmproj FILE")
expect_contains("${out}" "\"done\":true")
