// An error answered the OpenAI way: an HTTP status and {"error": {"message", "type", "param", "code"}}.
#pragma once

#include <string>

namespace strata::serve {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the request field at fault; empty = null
  std::string code;   // a short machine-readable reason; empty = null
};

// The response body.
std::string error_body(const ApiError& error);

// 400 invalid_request_error about `param`.
ApiError invalid_request(std::string message, std::string param = {}, std::string code = {});

}  // namespace strata::serve
