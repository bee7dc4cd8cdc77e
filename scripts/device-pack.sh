#!/usr/bin/env bash
# Builds here what the GPU machine runs, and puts it in .device/ (ignored by git; the device call carries it).
#
# The GPU machine has CMake, ninja and nvcc but none of Debian's -dev packages, so everything is built here:
# yaml-cpp is static, Boost.DLL runs on std::filesystem and the CUDA runtime is static. The binaries then need
# only libc, libstdc++, libgcc_s and libm. Plugins sit beside `strata` (the executable's folder is searched).
#
# Usage: scripts/device-pack.sh            then, in the device call: carry [".device"], run scripts/gpu-check.sh
#        STRATA_PACK_XZ=1 scripts/device-pack.sh   carry [".device-pack"] instead (compressed; see the end)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build-device"
pack="$root/.device"

STRATA_BUILD_DIR="$build" "$root/scripts/build.sh" -DCMAKE_BUILD_TYPE=Release -DSTRATA_HIP=OFF \
  -DCMAKE_CUDA_ARCHITECTURES=90

rm -rf "$pack"
mkdir -p "$pack/bin"
cp "$build/strata" "$pack/bin/"
cp "$build"/plugins/*.so "$pack/bin/" 2>/dev/null || true
cp "$build/tests/strata_tests" "$pack/bin/"
[ -x "$build/tests/gpu/strata_gpu_tests" ] && cp "$build/tests/gpu/strata_gpu_tests" "$pack/bin/"
# The tests look for plugins, data and the executable where they were built (gpu-check.sh links them there).
# The plugin loader's tests load the fake plugins from their build folder: they travel too.
mkdir -p "$pack/fake_plugins"
(cd "$build/tests/fake_plugins" && find . -type f ! -path '*/CMakeFiles/*' ! -name '*.cmake' -exec cp --parents {} "$pack/fake_plugins/" \;)
echo "$build" > "$pack/build-root"
for tool in "$build"/bench/*; do
  if [ -f "$tool" ] && [ -x "$tool" ]; then cp "$tool" "$pack/bin/"; fi
done
# The peer, when it was built here (see docs/PERFORMANCE.md: never committed, built from a fetched copy).
if [ -x "$root/.peer/build-cpu/bin/llama-bench" ]; then
  mkdir -p "$pack/peer-cpu"
  cp "$root/.peer/build-cpu/bin/llama-bench" "$pack/peer-cpu/"
  # Its OpenMP runtime travels with it (gpu-check puts the folder on LD_LIBRARY_PATH).
  cp "$(ldd "$root/.peer/build-cpu/bin/llama-bench" | awk '/libgomp/ {print $3}')" "$pack/peer-cpu/"
fi
if [ -x "$root/.peer/build-cuda/bin/llama-bench" ]; then
  # Its CUDA build (sm_90, ggml linked in): libcudart and libcublas are the GPU machine's own (/usr/local/cuda/lib64).
  # llama-completion, when built, gives the peer's load time (gpu-check's hostcopy step).
  mkdir -p "$pack/peer-cuda"
  for tool in llama-bench llama-completion; do
    [ -x "$root/.peer/build-cuda/bin/$tool" ] || continue
    cp "$root/.peer/build-cuda/bin/$tool" "$pack/peer-cuda/"
    strip --strip-unneeded "$pack/peer-cuda/$tool" 2>/dev/null || true
  done
  cp "$(ldd "$root/.peer/build-cuda/bin/llama-bench" | awk '/libgomp/ {print $3}')" "$pack/peer-cuda/" 2>/dev/null || true
fi

# Anything beyond the base libraries may not be on the GPU machine (the server's cpp-httplib and what it links:
# OpenSSL, zlib, brotli): those travel in lib/, which gpu-check.sh puts on LD_LIBRARY_PATH.
mkdir -p "$pack/lib"
for f in "$pack"/bin/* "$pack"/peer-*/* ; do
  [ -f "$f" ] || continue
  ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    grep -vE '^(linux-vdso|ld-linux|libcuda\.so|libcudart\.so|libcublas|libnvidia|libc\.so|libm\.so|libstdc\+\+\.so|libgcc_s\.so|libgomp\.so|libdl\.so|libpthread\.so|librt\.so)' |
    while read -r name path; do
      [ -e "$pack/lib/$name" ] || cp -L "$path" "$pack/lib/$name"
    done || true  # grep finds nothing for most files
done
# STRATA_PACK_NONCANONICAL=1: also the cuda and cpu_avx2 plugins built without the canonical float rules
# (build-device-nc/, -DSTRATA_NONCANONICAL=ON), for gpu-check's canon-cost step only.
if [ "${STRATA_PACK_NONCANONICAL:-0}" = 1 ]; then
  STRATA_BUILD_DIR="$root/build-device-nc" STRATA_BUILD_TARGETS="strata-cuda strata-cpu_avx2" "$root/scripts/build.sh" \
    -DCMAKE_BUILD_TYPE=Release -DSTRATA_HIP=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DSTRATA_NONCANONICAL=ON -DSTRATA_TESTS=OFF
  mkdir -p "$pack/noncanonical"
  cp "$root/build-device-nc/plugins/libstrata-cuda.so" "$root/build-device-nc/plugins/libstrata-cpu_avx2.so" "$pack/noncanonical/"
fi
# STRATA_PACK_BASELINE=FILE: a cuda plugin built at another commit (sm_90), carried in .device/baseline for
# gpu-check's forms step (its item "baseline"), which measures this build against it in the same lease.
if [ -n "${STRATA_PACK_BASELINE:-}" ]; then
  mkdir -p "$pack/baseline"
  cp "$STRATA_PACK_BASELINE" "$pack/baseline/libstrata-cuda.so"
fi
# The device call carries at most 64 MiB with the tree: symbols stay here (build-device/ has them).
strip --strip-unneeded "$pack"/bin/* "$pack"/noncanonical/* "$pack"/baseline/* 2>/dev/null || true
# llama.cpp's outputs on tiny models (../shared/data/arch and vision), which the arch step's tests read.
shared_data="$root/../shared/data"
if [ -d "$shared_data/arch" ]; then
  mkdir -p "$pack/shared-data"
  cp -r "$shared_data/arch" "$pack/shared-data/"
  [ -d "$shared_data/vision" ] && cp -r "$shared_data/vision" "$pack/shared-data/"
  chmod -R u+w "$pack/shared-data"
fi
# STRATA_PACK_XZ=1: the whole bundle as one xz archive in .device-pack/ (about 31 MB instead of 90), for a call
# that carries the peer too; gpu-check.sh unpacks it when .device is not there.
if [ "${STRATA_PACK_XZ:-0}" = 1 ]; then
  mkdir -p "$root/.device-pack"
  tar -cf - -C "$root" .device | xz -T0 -6 > "$root/.device-pack/strata.tar.xz"
  du -h "$root/.device-pack/strata.tar.xz"
fi
[ -n "$(ls -A "$pack/lib")" ] && echo "device-pack: libraries carried in .device/lib: $(ls "$pack/lib" | tr '\n' ' ')"
du -sh "$pack"
