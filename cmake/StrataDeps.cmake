# Third-party packages, all from Debian (scripts/install-deps.sh installs them).
#
# The binaries are kept portable to the GPU machine, which has none of Debian's -dev packages: yaml-cpp is
# linked statically and Boost.DLL runs on std::filesystem (no Boost runtime library at all).

find_package(Boost 1.74 REQUIRED)                       # headers only: Boost.DLL
find_package(Threads REQUIRED)

find_library(STRATA_YAML_CPP_STATIC NAMES libyaml-cpp.a)
find_path(STRATA_YAML_CPP_INCLUDE yaml-cpp/yaml.h)
if(STRATA_YAML_CPP_STATIC AND STRATA_YAML_CPP_INCLUDE)
  add_library(strata_yaml STATIC IMPORTED GLOBAL)
  set_target_properties(strata_yaml PROPERTIES IMPORTED_LOCATION ${STRATA_YAML_CPP_STATIC}
                                               INTERFACE_INCLUDE_DIRECTORIES ${STRATA_YAML_CPP_INCLUDE})
  message(STATUS "yaml-cpp: static ${STRATA_YAML_CPP_STATIC}")
else()
  find_package(yaml-cpp REQUIRED)
  add_library(strata_yaml INTERFACE)
  if(TARGET yaml-cpp::yaml-cpp)
    target_link_libraries(strata_yaml INTERFACE yaml-cpp::yaml-cpp)
  else()
    target_link_libraries(strata_yaml INTERFACE yaml-cpp)
  endif()
  message(STATUS "yaml-cpp: shared")
endif()

find_package(nlohmann_json 3.10 REQUIRED)

if(STRATA_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()

# The HTTP server's library (`strata serve`). Debian's build is compiled (libcpp-httplib.so) and its pkg-config
# file carries the defines the header must be read with (OpenSSL, zlib, Brotli support).
find_package(PkgConfig REQUIRED)
pkg_check_modules(CPPHTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
