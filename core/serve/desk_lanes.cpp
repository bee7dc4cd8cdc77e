#include "strata/serve/desk_lanes.hpp"

#include <unistd.h>

#include <cstdlib>

namespace strata::serve {

DeskLanes desk_lanes(const config::Launch& launch, const std::string& executable,
                     const std::vector<std::string>& launch_arguments, const std::string& link_file) {
  DeskLanes lanes;
  std::vector<std::string> base = {"engine"};
  base.insert(base.end(), launch_arguments.begin(), launch_arguments.end());
  lanes.lead = {executable, base};
  lanes.helper = {executable, base};
  const int peer = launch.runtime.peer_device;
  if (peer < 0) return lanes;
  // The helper's card is the lead's peer card: the same backend plugin on that device, with no peer of its own.
  // These -o come last, so they win over the launch's.
  const bool names_plugin = !launch.backend.empty() && launch.backend != "auto" && launch.backend != "reference";
  const std::string backend = names_plugin ? launch.backend : "cuda";
  lanes.link_file = link_file;
  lanes.lead.arguments.insert(lanes.lead.arguments.end(), {"--peer-link", link_file, "--peer-link-role", "0"});
  lanes.helper.arguments.insert(lanes.helper.arguments.end(),
                                {"--peer-link", link_file, "--peer-link-role", "1", "-o", "runtime.peer_device=-1",
                                 "-o", "plugins." + backend + ".device=" + std::to_string(peer)});
  return lanes;
}

std::string desk_engine_executable() {
  const char* hook = std::getenv("STRATA_DESK_ENGINE");
  if (hook != nullptr && *hook != '\0') return hook;
  return "/proc/self/exe";  // the inode this process runs, even when the file has been replaced since
}

std::string desk_link_file() { return "/dev/shm/strata-desk-" + std::to_string(::getpid()) + ".link"; }

}  // namespace strata::serve
