# seedloader_add_library(NAME [INSTALL] SOURCES s...)
# One module's library target, seedloader_<name>, with its seedloader::<name> alias
# and export name. Consumers see the public headers (include/, as "seedloader/...");
# inside this build they also see the source tree, where each module keeps its
# internal headers. INSTALL puts the target in the exported seedloader:: set.
function(seedloader_add_library name)
  cmake_parse_arguments(ARG "INSTALL" "" "SOURCES" ${ARGN})
  set(target seedloader_${name})
  add_library(${target} ${ARG_SOURCES})
  add_library(seedloader::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  if(ARG_INSTALL)
    set_property(GLOBAL APPEND PROPERTY SEEDLOADER_INSTALLED_TARGETS ${target})
  endif()
endfunction()

# seedloader_add_test(NAME SOURCES s... LIBS l... [LABELS l...] [TIMEOUT s])
# One GoogleTest executable registered with CTest, one CTest entry per TEST so
# failures are named and tests run in parallel. LABELS threads: the test, or the
# code it runs, starts threads; the target threads_tests builds every such test,
# and the tsan preset builds and runs only those (a race needs two threads).
function(seedloader_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  if("threads" IN_LIST ARG_LABELS)
    if(NOT TARGET threads_tests)
      add_custom_target(threads_tests)
    endif()
    add_dependencies(threads_tests ${name})
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 120)
  endif()
  gtest_discover_tests(${name}
    DISCOVERY_TIMEOUT 60
    PROPERTIES TIMEOUT ${ARG_TIMEOUT})
  # The labels are set by a file CTest includes after the discovered tests:
  # gtest_discover_tests passes PROPERTIES through a command line that splits a
  # list, so LABELS "a;b" there would give only label a.
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_labels.cmake")
  file(WRITE "${labels_file}"
    "if(DEFINED ${name}_TESTS)\n"
    "  set_tests_properties(\${${name}_TESTS} PROPERTIES LABELS \"${ARG_LABELS}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
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
