# seedloader_add_test(NAME SOURCES s... LIBS l... [LABELS l...] [TIMEOUT s])
# One GoogleTest executable registered with CTest, one CTest entry per TEST so
# failures are named and tests run in parallel.
function(seedloader_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}")
endfunction()

# seedloader_add_mpi_test(NAME RANKS n COMMAND exe args...)
# Runs a program under mpirun with n ranks (as root when CI runs as root).
function(seedloader_add_mpi_test name)
  cmake_parse_arguments(ARG "" "RANKS;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 180)
  endif()
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe
            ${MPIEXEC_NUMPROC_FLAG} ${ARG_RANKS} ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS mpi
    ENVIRONMENT "OMPI_MCA_rmaps_base_oversubscribe=1;OMPI_MCA_btl_vader_single_copy_mechanism=none")
endfunction()
