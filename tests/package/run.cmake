# run(COMMAND...): runs a command, stops the script saying what failed and what it printed, and leaves
# its output in `last_output`. Shared by the package checks, which ctest invokes with -P, as is expect().
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGV}\n${output}")
  endif()
  set(last_output "${output}" PARENT_SCOPE)
endfunction()

# expect(TEXT PATTERN WHAT): stops the script saying "the package WHAT", and TEXT, unless TEXT matches.
function(expect text pattern what)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "the package ${what}:\n${text}")
  endif()
endfunction()
