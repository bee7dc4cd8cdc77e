// The web page `strata serve` answers at `/`: chat with the model and watch the engine live (/live). One
// self-contained HTML file, core/serve/page/index.html, embedded at build time (core/serve/page/embed_page.cmake)
// into the strata_serve_page library.
#pragma once

#include <string_view>

namespace strata::serve {

// The page's bytes: UTF-8 HTML with its CSS and script inline, to be sent as text/html; charset=utf-8. Static
// storage: valid for the whole program.
std::string_view page_html() noexcept;

}  // namespace strata::serve
