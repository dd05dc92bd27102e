# A contract test: SOURCE must fail to compile, and the compiler must say what its first line expects
# ("// expect: <words>"), so that a user who breaks a contract reads a sentence, not a template backtrace.
# Invoked by ctest with -P, with CXX, SOURCE and INCLUDES (a ;-list of include directories).
file(STRINGS ${SOURCE} first_line LIMIT_COUNT 1)
string(REGEX REPLACE "^// expect: " "" expected "${first_line}")
set(include_flags)
foreach(directory ${INCLUDES})
  list(APPEND include_flags -I${directory})
endforeach()
execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only ${include_flags} ${SOURCE}
                RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
if(result EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it breaks a contract and must not")
endif()
string(FIND "${output}" "${expected}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SOURCE} failed to compile without saying \"${expected}\":\n${output}")
endif()
message(STATUS "refused as expected: ${expected}")
