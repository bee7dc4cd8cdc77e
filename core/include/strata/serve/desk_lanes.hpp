// The elastic desk's two lanes as command lines: `strata engine` with the launch the server was given, the lead with
// the launch as it is and the helper on the second card. With runtime.peer_device (a second card) the two share a
// peer link file; without one both run the launch as it is and there is no link.
#pragma once

#include <string>
#include <vector>

#include "strata/config.hpp"
#include "strata/serve/engine_lane.hpp"

namespace strata::serve {

struct DeskLanes {
  LaneCommand lead, helper;
  std::string link_file;  // the pair's peer link (empty: none)
};

// `executable`: what runs a lane (desk_engine_executable()). `launch_arguments`: what makes `strata engine` load
// the server's launch (--config FILE, -o KEY=VALUE ..., --model FILE). `link_file`: where the link goes when the
// launch has a second card.
DeskLanes desk_lanes(const config::Launch& launch, const std::string& executable,
                     const std::vector<std::string>& launch_arguments, const std::string& link_file);

// The running strata executable (/proc/self/exe), or the test hook STRATA_DESK_ENGINE: an executable run instead
// of `strata engine` with the same arguments (the desk's tests run a fake engine this way).
std::string desk_engine_executable();

// Where the pair's link file goes: /dev/shm/strata-desk-<pid>.link.
std::string desk_link_file();

}  // namespace strata::serve
