# `strata mkmodel`'s vision pair: --mmproj-out is required with a vision shape and refused with any other, a cut that
# leaves no room for the deepstack parts is refused, and the tiny qwen3vlmoe pair, once written, runs an image
# through `strata run --model M --mmproj P --image I` (the command the full-size qwen3-vl-30b-a3b pair is timed with).
include(${CMAKE_CURRENT_LIST_DIR}/common.inc)

strata_run(2 ERR err ARGS mkmodel --shape qwen3-30b-a3b --out m.gguf --mmproj-out p.gguf)
expect_contains("${err}" "--mmproj-out is for a vision shape (--shape qwen3-vl-30b-a3b, or --shape tiny --arch qwen3vlmoe); --shape qwen3-30b-a3b (--arch qwen3moe) has no projector")
strata_run(2 ERR err ARGS mkmodel --shape qwen3-vl-30b-a3b --out m.gguf)
expect_contains("${err}" "--shape qwen3-vl-30b-a3b (--arch qwen3vlmoe) is a text model and its vision projector: give --mmproj-out FILE")
strata_run(2 ERR err ARGS mkmodel --shape qwen3-vl-30b-a3b --arch qwen3moe --dry-run)
expect_contains("${err}" "--shape qwen3-vl-30b-a3b is a qwen3vlmoe shape")
strata_run(2 ERR err ARGS mkmodel --shape qwen3-vl-30b-a3b --layers 3 --out m.gguf --mmproj-out p.gguf)
expect_contains("${err}" "--layers 3: qwen3vlmoe adds an image's 3 deepstack parts after blocks 0..2, so it needs at least 4 blocks")
strata_run(2 ERR err ARGS mkmodel --shape qwen3-vl-30b-a3b --out m.gguf --mmproj-out m.gguf)
expect_contains("${err}" "--mmproj-out and --out name the same file")
if(EXISTS ${WORK}/m.gguf OR EXISTS ${WORK}/p.gguf)
  message(FATAL_ERROR "a refused mkmodel wrote a file")
endif()

# --dry-run plans both files.
strata_run(0 OUT out ARGS mkmodel --shape qwen3-vl-30b-a3b --dry-run)
expect_contains("${out}" "text model (qwen3vlmoe):")
expect_contains("${out}" "18,555,118,752 bytes, 579 tensors")
expect_contains("${out}" "vision projector (clip, qwen3vl_merger):")
expect_contains("${out}" "1,083,499,488 bytes, 352 tensors")

# The tiny pair, and an image through it (a 32 x 32 PPM whose bytes are printable text).
strata_run(0 OUT out ARGS mkmodel --arch qwen3vlmoe --layers 3 --vocab 1000 --threads 2 --out m.gguf --mmproj-out p.gguf)
expect_contains("${out}" "wrote m.gguf")
expect_contains("${out}" "wrote p.gguf")
string(REPEAT "a~0" 1024 pixels)
file(WRITE ${WORK}/image.ppm "P6\n32 32\n255\n${pixels}")
strata_run(0 OUT out ERR err ARGS run --model m.gguf --mmproj p.gguf --image image.ppm --prompt "look <__media__> here"
           -n 4 --temperature 0 --backend reference)
expect_contains("${err}" "generated 4")

# --profile-image: the encoder's ops, op by op, where a backend runs them; the reference takes the CPU encoder.
strata_run(0 OUT out ERR err ARGS run --model m.gguf --mmproj p.gguf --image image.ppm --prompt "look <__media__> here"
           -n 1 --temperature 0 --backend cpu_avx2 --profile-image)
expect_contains("${err}" "encoded on cpu_avx2")
expect_contains("${err}" "| ATTENTION |")
expect_contains("${err}" "| all ops |")
strata_run(0 OUT out ERR err ARGS run --model m.gguf --mmproj p.gguf --image image.ppm --prompt "look <__media__> here"
           -n 1 --temperature 0 --backend reference --profile-image)
expect_contains("${err}" "the CPU encoder ran it (no backend ops to time)")
strata_run(2 ERR err ARGS run --model m.gguf --prompt hi --profile-image)
expect_contains("${err}" "--profile-image goes with --image")
