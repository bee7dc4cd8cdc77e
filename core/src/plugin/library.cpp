#include "library.hpp"

#include <system_error>

#include "strata/error.hpp"

namespace strata {

LoadedLibrary::LoadedLibrary(const std::filesystem::path& file) : file_(file) {
  try {
    lib_.load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::system_error& e) {
    // The throwing overload carries dlerror()'s text (which names the missing dependency, if any).
    throw Error(std::string("cannot open: ") + e.what());
  }
  if (lib_.has(STRATA_PLUGIN_QUERY_SYMBOL)) query_ = lib_.get<const strata_plugin_descriptor*()>(STRATA_PLUGIN_QUERY_SYMBOL);
  if (lib_.has(STRATA_PLUGIN_INIT_SYMBOL)) {
    init_ = lib_.get<strata_status*(const strata_host_api*, const char* const*, size_t, strata_plugin_instance*)>(
        STRATA_PLUGIN_INIT_SYMBOL);
  }
}

}  // namespace strata
