// What the CPU can run, detected at run time, and the kernel path chosen from it.
#pragma once

#include <cstdint>
#include <string>

namespace strata::cpu {

struct IsaFeatures {
  bool avx2 = false, fma = false, f16c = false;                  // the plugin's minimum
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false;
  bool avx512() const { return avx512f && avx512bw && avx512vl && avx512dq; }
  bool usable() const { return avx2 && fma && f16c; }
};

// The kernel paths. Both give the same bits for every op; Avx512 uses VNNI integer dot products.
enum class IsaPath { Avx2, Avx512 };

IsaFeatures detect_isa();

// The path a context uses: AVX-512 when the CPU has F, BW, VL, DQ and VNNI and force_avx2 is off.
IsaPath choose_path(const IsaFeatures& f, bool force_avx2);

// Whether gather instructions run at full speed here: false where Linux reports the microcode mitigation of Gather
// Data Sampling (Intel Skylake to Tiger Lake), which makes every gather several times slower.
bool gathers_fast();

// "x86-64-v3 (AVX2+FMA+F16C)", "x86-64-v4 (AVX-512 VNNI)" or "x86-64-v4 (AVX-512 VNNI, no gathers)": what
// device_info reports as arch.
const char* path_arch(IsaPath path, bool gathers = true);

// The CPU's model name from /proc/cpuinfo ("AMD EPYC 9654 96-Core Processor"), or "x86-64 CPU" when unknown.
std::string cpu_model_name();

// Physical memory: total and available bytes (from sysconf and /proc/meminfo).
uint64_t memory_total_bytes();
uint64_t memory_available_bytes();

}  // namespace strata::cpu
