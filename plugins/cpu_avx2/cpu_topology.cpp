#include "cpu_topology.hpp"

#include <sched.h>

#include <fstream>
#include <set>

namespace strata::cpu {
namespace {

// The first line of a file, or "" when it cannot be read.
std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
    }
  }
  return cpus;
}

CpuTopology read_topology(const std::vector<int>& cpus, const std::string& sysfs) {
  std::set<std::string> cores;
  for (int c : cpus) {
    const std::string dir = sysfs + "/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::string siblings = first_line(dir + "core_cpus_list");
    if (siblings.empty()) siblings = first_line(dir + "thread_siblings_list");
    // An unreadable topology: the CPU is its own core (named so that it cannot match a sibling list).
    cores.insert(siblings.empty() ? "cpu " + std::to_string(c) : siblings);
  }
  CpuTopology t;
  t.cpus = cpus.empty() ? 1u : static_cast<unsigned>(cpus.size());
  t.cores = cores.empty() ? 1u : static_cast<unsigned>(cores.size());
  return t;
}

}  // namespace strata::cpu
