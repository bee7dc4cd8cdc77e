// Byte counts for people: "5.1 GiB", "768.0 KiB", "512 B" (powers of 1024, one decimal).
#pragma once

#include <cstdint>
#include <string>

namespace strata::experts {

std::string human_bytes(uint64_t bytes);
std::string human_bytes(double bytes);

}  // namespace strata::experts
