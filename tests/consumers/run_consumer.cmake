# cmake -P run_consumer.cmake: configure, build and run one consumer project from scratch.
#
#   -DSOURCE_DIR=<consumer project>  -DBINARY_DIR=<its build dir (wiped first)>
#   -DGENERATOR=<generator>  -DMAKE_PROGRAM=<ninja/make>  -DCXX_COMPILER=<compiler>
#   -DBUILD_TYPE=<config>  -DCONFIGURE_ARGS=<;-list of extra -D arguments>
#
# Fails when a step fails, when configuring prints a CMake warning (factum must configure
# cleanly inside a consumer), or when the consumer program exits non-zero.
cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS SOURCE_DIR BINARY_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer.cmake: ${var} is not set")
  endif()
endforeach()

# run(<step> <command...>): runs a command, echoes its output, fails the test when it fails.
function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("---- ${step}: ${ARGN}\n${out}")
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "consumer ${step} failed (${result})")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE "${BINARY_DIR}")
set(args -S "${SOURCE_DIR}" -B "${BINARY_DIR}" -G "${GENERATOR}"
         "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}")
if(MAKE_PROGRAM)
  list(APPEND args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
run(configure "${CMAKE_COMMAND}" ${args} ${CONFIGURE_ARGS})
if(step_output MATCHES "CMake (Deprecation )?Warning")
  message(FATAL_ERROR "configuring the consumer printed a CMake warning (see above)")
endif()

set(build_args --build "${BINARY_DIR}")
if(BUILD_TYPE)
  list(APPEND build_args --config "${BUILD_TYPE}")
endif()
run(build "${CMAKE_COMMAND}" ${build_args})

file(GLOB_RECURSE programs "${BINARY_DIR}/consumer" "${BINARY_DIR}/consumer.exe")
list(FILTER programs EXCLUDE REGEX "/CMakeFiles/")
if(NOT programs)
  message(FATAL_ERROR "the consumer program was not built in ${BINARY_DIR}")
endif()
list(GET programs 0 program)
run(run "${program}")
