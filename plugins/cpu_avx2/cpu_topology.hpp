// How many physical cores this process may run on, for the pool's default worker count: SMT siblings share a
// core's execution units, so a second worker on a sibling mostly waits for the first.
#pragma once

#include <string>
#include <vector>

namespace strata::cpu {

struct CpuTopology {
  unsigned cpus = 1;   // CPUs this process may run on
  unsigned cores = 1;  // distinct physical cores among them
};

// The CPUs in this process's affinity mask (sched_getaffinity), ascending.
std::vector<int> affinity_cpus();

// Counts the distinct cores of `cpus` from <sysfs>/devices/system/cpu/cpuN/topology/core_cpus_list (or the older
// thread_siblings_list): CPUs with the same sibling list share a core. A CPU without either file counts as a core
// of its own. `sysfs` is the sysfs mount ("/sys"; a test passes a tree of its own).
CpuTopology read_topology(const std::vector<int>& cpus, const std::string& sysfs = "/sys");

}  // namespace strata::cpu
