# cmake -P check_compile_fails.cmake: does SOURCE fail to compile with a message matching
# EXPECTED? For a misuse the headers must refuse with a message that says what to do.
#
#   -DCXX=<compiler>  -DSTD_FLAG=<-std=c++20>  -DINCLUDE_DIRS=<;-list>  -DIMPLICIT_DIRS=<;-list, left out>  -DSOURCE=<file.cpp>
#   -DEXPECTED=<regex on the compiler's messages>
cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS CXX SOURCE EXPECTED)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_compile_fails.cmake: ${var} is not set")
  endif()
endforeach()

set(flags ${STD_FLAG})
foreach(dir IN LISTS INCLUDE_DIRS)
  if(NOT dir IN_LIST IMPLICIT_DIRS)  # as CMake does: -I/usr/include would upset #include_next
    list(APPEND flags "-I${dir}")
  endif()
endforeach()
execute_process(COMMAND "${CXX}" ${flags} -fsyntax-only "${SOURCE}"
                RESULT_VARIABLE result OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but must be refused")
endif()
if(NOT out MATCHES "${EXPECTED}")
  message(FATAL_ERROR "${SOURCE} was refused, but without '${EXPECTED}':\n${out}")
endif()
message(STATUS "${SOURCE} is refused with '${EXPECTED}'")
