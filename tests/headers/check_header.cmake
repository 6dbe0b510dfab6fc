# cmake -P check_header.cmake: does a public header, included alone, read a file whose path
# matches PATTERN?
#
#   -DCXX=<compiler (GCC or Clang)>  -DSTD_FLAG=<-std=c++20>  -DINCLUDE_DIRS=<;-list>  -DIMPLICIT_DIRS=<;-list, left out>
#   -DHEADER=<factum/...hpp>  -DPATTERN=<regex on include paths>  -DWORK_DIR=<scratch dir>
#   -DEXPECT=absent|present
#
# Preprocesses "#include <HEADER>" with -H, which prints every file read, one per line, its
# depth in dots. With EXPECT=absent it fails when a file matches PATTERN, naming the chain of
# includes from HEADER to it; with EXPECT=present it fails when none does. It also fails when
# the header does not preprocess on its own.
cmake_minimum_required(VERSION 3.25)

foreach(var IN ITEMS CXX HEADER PATTERN WORK_DIR EXPECT)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_header.cmake: ${var} is not set")
  endif()
endforeach()

string(MAKE_C_IDENTIFIER "${HEADER}" id)
set(source "${WORK_DIR}/${id}.cpp")
file(WRITE "${source}" "#include <${HEADER}>\n")
set(flags ${STD_FLAG})
foreach(dir IN LISTS INCLUDE_DIRS)
  if(NOT dir IN_LIST IMPLICIT_DIRS)  # as CMake does: -I/usr/include would upset #include_next
    list(APPEND flags "-I${dir}")
  endif()
endforeach()
execute_process(COMMAND "${CXX}" ${flags} -H -E -o "${WORK_DIR}/${id}.ii" "${source}"
                RESULT_VARIABLE result ERROR_VARIABLE tree)
file(REMOVE "${WORK_DIR}/${id}.ii")
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${HEADER} does not preprocess on its own:\n${tree}")
endif()

# Walk the tree, keeping the chain of includes (by depth) that leads to each file.
string(REPLACE "\n" ";" lines "${tree}")
set(found "")
foreach(line IN LISTS lines)
  if(NOT line MATCHES "^(\\.+) (.*)$")
    continue()  # "Multiple include guards may be useful for:" and its list
  endif()
  string(LENGTH "${CMAKE_MATCH_1}" depth)
  set(file "${CMAKE_MATCH_2}")
  set(chain_${depth} "${file}")
  if(file MATCHES "${PATTERN}")
    set(found "")
    foreach(level RANGE 1 ${depth})
      string(APPEND found "\n  ${chain_${level}}")
    endforeach()
    break()
  endif()
endforeach()

if(EXPECT STREQUAL "absent" AND found)
  message(FATAL_ERROR "${HEADER} reads a file matching '${PATTERN}'; each line includes the next:"
                      "${found}")
elseif(EXPECT STREQUAL "present" AND NOT found)
  message(FATAL_ERROR "${HEADER} reads no file matching '${PATTERN}': the check cannot see it")
endif()
message(STATUS "${HEADER}: a file matching '${PATTERN}' is ${EXPECT}")
