# Warnings for everything we compile ourselves; -Werror when STRATA_WERROR is on (CI).
add_library(strata_warnings INTERFACE)
target_compile_options(strata_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wnon-virtual-dtor -Wcast-align -Wunused
                              -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough>
  $<$<AND:$<COMPILE_LANGUAGE:C,CXX>,$<CXX_COMPILER_ID:GNU>>:-Wshadow=local>
  # GCC 12 at -O2/-O3 reports std::string concatenations as overlapping memcpy (GCC bug 105329, a false positive).
  $<$<AND:$<COMPILE_LANGUAGE:C,CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-restrict>
  $<$<BOOL:${STRATA_WERROR}>:$<$<COMPILE_LANGUAGE:C,CXX>:-Werror>>)

if(STRATA_SANITIZE)
  # Applied to the host, the CPU plugins and the tests; the GPU plugins opt out (their runtimes do not mix with ASan).
  add_compile_options(-fsanitize=${STRATA_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=${STRATA_SANITIZE})
endif()
