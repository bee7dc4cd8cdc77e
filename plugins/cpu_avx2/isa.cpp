#include "isa.hpp"

#include <cpuid.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

namespace strata::cpu {

IsaFeatures detect_isa() {
  __builtin_cpu_init();
  IsaFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  // F16C from CPUID leaf 1, ECX bit 29: clang's __builtin_cpu_supports does not know "f16c".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  f.f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && ((ecx >> 29) & 1u) != 0;
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  return f;
}

IsaPath choose_path(const IsaFeatures& f, bool force_avx2) {
  return (!force_avx2 && f.avx512() && f.avx512vnni) ? IsaPath::Avx512 : IsaPath::Avx2;
}

bool gathers_fast() {
  std::ifstream in("/sys/devices/system/cpu/vulnerabilities/gather_data_sampling");
  std::string state;
  std::getline(in, state);
  return state.rfind("Mitigation", 0) != 0;  // "Not affected", "Vulnerable...", or no such file
}

const char* path_arch(IsaPath path, bool gathers) {
  if (path != IsaPath::Avx512) return "x86-64-v3 (AVX2+FMA+F16C)";
  return gathers ? "x86-64-v4 (AVX-512 VNNI)" : "x86-64-v4 (AVX-512 VNNI, no gathers)";
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t start = line.find_first_not_of(" \t", colon + 1);
    if (start != std::string::npos) return line.substr(start);
  }
  return "x86-64 CPU";
}

uint64_t memory_total_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

uint64_t memory_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) != 0) continue;
    std::istringstream fields(line.substr(13));
    uint64_t kib = 0;
    if (fields >> kib) return kib * 1024;
  }
  const long pages = sysconf(_SC_AVPHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

}  // namespace strata::cpu
