# Runs a Lua test on a part of swl's Lua: PRINTER prints the part into PART, then LUA runs TEST on it,
# with ARGUMENTS after the part's path. Fails when either fails.
execute_process(COMMAND ${PRINTER} OUTPUT_FILE ${PART} RESULT_VARIABLE printed)
if(NOT printed EQUAL 0)
  message(FATAL_ERROR "${PRINTER} failed: ${printed}")
endif()
separate_arguments(arguments UNIX_COMMAND "${ARGUMENTS}")
execute_process(COMMAND ${LUA} ${TEST} ${PART} ${arguments} RESULT_VARIABLE tested)
if(NOT tested EQUAL 0)
  message(FATAL_ERROR "${TEST} failed")
endif()
