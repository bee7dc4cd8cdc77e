// JSON in (the render context) and out (tojson), as Python's json module reads and writes it.
#pragma once

#include <nlohmann/json.hpp>

#include "value.hpp"

namespace strata::chat {

// Objects keep their key order (an ordered_json's insertion order; a json's sorted order).
Value from_json(const nlohmann::json& j);
Value from_json(const nlohmann::ordered_json& j);

}  // namespace strata::chat
