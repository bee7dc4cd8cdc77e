// One opened plugin library and its two entry points. Boost.DLL is only the opener.
#pragma once

#include <boost/dll/shared_library.hpp>
#include <filesystem>

#include "strata/plugin_api.h"

namespace strata {

class LoadedLibrary {
 public:
  // Opens with RTLD_NOW | RTLD_LOCAL so unresolved symbols fail here, not at a first call. Throws strata::Error
  // with the loader's message.
  explicit LoadedLibrary(const std::filesystem::path& file);

  const std::filesystem::path& file() const { return file_; }
  strata_plugin_query_fn query() const { return query_; }  // nullptr when the symbol is missing
  strata_plugin_init_fn init() const { return init_; }     // nullptr when the symbol is missing

 private:
  std::filesystem::path file_;
  boost::dll::shared_library lib_;
  strata_plugin_query_fn query_ = nullptr;
  strata_plugin_init_fn init_ = nullptr;
};

}  // namespace strata
