# cmake -P install_factum.cmake -DBINARY_DIR=<factum build> -DPREFIX=<prefix> [-DBUILD_TYPE=..]
# Installs the factum build tree into PREFIX, emptied first, and checks the package files.
cmake_minimum_required(VERSION 3.25)

file(REMOVE_RECURSE "${PREFIX}")
set(args --install "${BINARY_DIR}" --prefix "${PREFIX}")
if(BUILD_TYPE)
  list(APPEND args --config "${BUILD_TYPE}")
endif()
execute_process(COMMAND "${CMAKE_COMMAND}" ${args} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BINARY_DIR} failed (${result})")
endif()

file(GLOB_RECURSE config "${PREFIX}/*/factum-config.cmake")
file(GLOB_RECURSE header "${PREFIX}/include/factum/factum.hpp")
if(NOT config OR NOT header)
  message(FATAL_ERROR "the install in ${PREFIX} lacks factum-config.cmake or factum/factum.hpp")
endif()
