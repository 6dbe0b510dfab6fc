# factum_target_options(<target>): warnings, sanitizers and the C++ standard, per target.
include(GNUInstallDirs)

function(factum_target_options target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow)
  if(FACTUM_THREAD_SAFETY)
    if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      message(FATAL_ERROR "FACTUM_THREAD_SAFETY needs clang (CXX=clang++)")
    endif()
    target_compile_options(${target} PRIVATE -Wthread-safety -Wthread-safety-beta)
  endif()
  if(FACTUM_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(FACTUM_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${FACTUM_SANITIZE} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    # PUBLIC: whatever links an instrumented (static) library needs the sanitizer runtime too.
    target_link_options(${target} PUBLIC -fsanitize=${FACTUM_SANITIZE})
  endif()
endfunction()

# factum_unity_build(<target>): with FACTUM_UNITY_BUILD, compiles the target's files in batches of
# up to 8 (see the option in CMakeLists.txt).
function(factum_unity_build target)
  if(FACTUM_UNITY_BUILD)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  endif()
endfunction()
