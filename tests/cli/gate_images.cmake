# `strata gate` with images (mkmodel's tiny qwen3vlmoe pair): with mmproj in the launch the built-in set gains its
# image prompt (the picture drawn by code), saved on cpu_avx2 and checked on its AVX2 path with another thread
# count (the image's encoder runs as cpu_avx2's ops too, so both halves change); a prompt file's image that changes
# after the save fails by name; a prompt with images and no projector exits 2 naming the fix. (Across backends the
# image rows differ in their last bits: each backend's encoder rounds its LayerNorm, GELU and attention its own way.)
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)

strata_run(0 ARGS mkmodel --arch qwen3vlmoe --layers 4 --vocab 1000 --threads 2 --out m.gguf --mmproj-out p.gguf)
set(LAUNCH --model m.gguf -o mmproj=p.gguf -o runtime.context=160)

strata_run(0 OUT out ARGS gate ${LAUNCH} -o backend=cpu_avx2 -n 6 --save ref.json)
expect_contains("${out}" "image: ")
expect_contains("${out}" "strata gate: saved 5 prompts, 6 ids each")
file(READ ${WORK}/ref.json saved)
string(JSON image0 GET "${saved}" prompts 4 images 0)
string(JSON sha0 GET "${saved}" prompts 4 image_sha256 0)
if(NOT image0 STREQUAL "builtin:gate-picture" OR NOT sha0 MATCHES "^[0-9a-f]+$")
  message(FATAL_ERROR "the image prompt was not saved with its image:\n${saved}")
endif()
strata_run(0 OUT out ARGS gate ${LAUNCH} -o backend=cpu_avx2 -o plugins.cpu_avx2.force_avx2=true
           -o runtime.threads=1 --check ref.json)
expect_contains("${out}" "image: PASS (6 ids)")
expect_contains("${out}" "strata gate: PASS: 5 of 5 prompts pass")

# A prompt file with an image file; the file changes after the save.
string(REPEAT "a~0" 1024 pixels_a)
file(WRITE ${WORK}/a.ppm "P6\n32 32\n255\n${pixels_a}")
file(WRITE ${WORK}/prompts.json "[{\"name\": \"look\", \"text\": \"look <__media__> here\", \"images\": [\"a.ppm\"]}]")
strata_run(0 ARGS gate ${LAUNCH} -o backend=reference -n 4 --prompts prompts.json --save file.json)
strata_run(0 OUT out ARGS gate ${LAUNCH} -o backend=reference --check file.json)
expect_contains("${out}" "look: PASS (4 ids)")
string(REPEAT "Zq5" 1024 pixels_b)
file(WRITE ${WORK}/a.ppm "P6\n32 32\n255\n${pixels_b}")
strata_run(1 OUT out ARGS gate ${LAUNCH} -o backend=reference --check file.json)
expect_contains("${out}" "look: FAIL: image 0 (${WORK}/a.ppm) differs")

# Images without a projector: the fix is named.
strata_run(2 ERR err ARGS gate --model m.gguf -o runtime.context=160 -n 4 --prompts prompts.json --save x.json)
expect_contains("${err}" "prompt 'look' has images: give the model's vision projector")
