# Finds the third-party libraries every module may use. Each is a Debian package
# (scripts/setup.sh installs them); pcg-cpp and CLI11 are header-only.
find_path(PCG_INCLUDE_DIR pcg_random.hpp REQUIRED)
add_library(seedloader_pcg INTERFACE)
set_target_properties(seedloader_pcg PROPERTIES EXPORT_NAME pcg)
target_include_directories(seedloader_pcg SYSTEM INTERFACE ${PCG_INCLUDE_DIR})

find_package(CLI11 CONFIG QUIET)
if(NOT TARGET CLI11::CLI11)
  find_path(CLI11_INCLUDE_DIR CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${CLI11_INCLUDE_DIR})
endif()
find_package(nlohmann_json 3 REQUIRED)
find_package(Threads REQUIRED)
find_package(Eigen3 3.3 REQUIRED NO_MODULE)  # ddp's CPU kernels

if(SEEDLOADER_BUILD_TESTS)
  find_package(GTest REQUIRED)
  include(GoogleTest)
endif()
if(SEEDLOADER_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
