// Reading the files `strata gate` takes (prompt files, saved runs) whole, with errors that name the file.
#pragma once

#include <string>

namespace strata::gate {

// The file's bytes. Throws strata::Error "cannot read <what> '<path>': <reason>" (a folder is refused too).
std::string read_text_file(const std::string& path, const std::string& what);

}  // namespace strata::gate
