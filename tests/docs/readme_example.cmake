# Checks that README.md shows docs/examples/readme_example.cpp as it is: the ```cpp block after
# the line "<!-- docs/examples/readme_example.cpp -->" must equal the file from its first
# #include on. Run as: cmake -DSOURCE_DIR=<factum> -P readme_example.cmake
file(READ "${SOURCE_DIR}/README.md" readme)
file(READ "${SOURCE_DIR}/docs/examples/readme_example.cpp" example)
set(marker "<!-- docs/examples/readme_example.cpp -->\n```cpp\n")
string(FIND "${readme}" "${marker}" start)
if(start EQUAL -1)
  message(FATAL_ERROR "README.md has no block after '<!-- docs/examples/readme_example.cpp -->'")
endif()
string(LENGTH "${marker}" marker_length)
math(EXPR start "${start} + ${marker_length}")
string(SUBSTRING "${readme}" ${start} -1 block)
string(FIND "${block}" "```" end)
string(SUBSTRING "${block}" 0 ${end} block)
string(FIND "${example}" "#include" first_include)
string(SUBSTRING "${example}" ${first_include} -1 code)
if(NOT block STREQUAL code)
  message(FATAL_ERROR "README.md's example differs from docs/examples/readme_example.cpp: copy "
                      "the file (from its first #include) into the README's block")
endif()
message(STATUS "README.md shows docs/examples/readme_example.cpp as it is")
