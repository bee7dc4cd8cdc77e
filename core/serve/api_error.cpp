#include "strata/serve/api_error.hpp"

#include <nlohmann/json.hpp>

namespace strata::serve {

std::string error_body(const ApiError& error) {
  const auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json() : nlohmann::json(s); };
  const nlohmann::json body = {{"error",
                                {{"message", error.message},
                                 {"type", error.type},
                                 {"param", or_null(error.param)},
                                 {"code", or_null(error.code)}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

ApiError invalid_request(std::string message, std::string param, std::string code) {
  return {400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

}  // namespace strata::serve
