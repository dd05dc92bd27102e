# Runs one libFuzzer target for RUNS inputs (at most MAX_SECONDS) over a fresh copy of its seed corpus
# in WORK_DIR. Invoked by ctest with -P.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR}/artifacts)
file(COPY ${SEEDS}/ DESTINATION ${WORK_DIR}/corpus)
execute_process(
  COMMAND ${FUZZER} -runs=${RUNS} -max_total_time=${MAX_SECONDS} -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
          -artifact_prefix=${WORK_DIR}/artifacts/ ${WORK_DIR}/corpus
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  file(GLOB found ${WORK_DIR}/artifacts/*)
  message(FATAL_ERROR "${FUZZER} failed (${result}); the input that broke it: ${found}")
endif()
