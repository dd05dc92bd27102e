# Builds tests/package/consumer against swl, either installed into a scratch prefix (find_package) or
# through add_subdirectory, and runs it. Invoked by ctest with -P.
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE result OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "failed: ${ARGV}\n${output}")
  endif()
  set(last_output "${output}" PARENT_SCOPE)
endfunction()

set(consumer_args -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${WORK_DIR}/consumer -DCMAKE_CXX_COMPILER=${CXX})
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SWL_SOURCE_DIR} -B ${WORK_DIR}/swl -DSWL_BUILD_TESTS=OFF -DSWL_BUILD_EXAMPLES=OFF
      -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --install ${WORK_DIR}/swl)
  run(${CMAKE_COMMAND} ${consumer_args} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
else()
  run(${CMAKE_COMMAND} ${consumer_args} -DSWL_VIA=add_subdirectory -DSWL_SOURCE_DIR=${SWL_SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
run(${WORK_DIR}/consumer/consumer)
if(NOT last_output MATCHES "consumer ok: swl::Limit: max_requests 0")
  message(FATAL_ERROR "the consumer did not report swl's InvalidArgument:\n${last_output}")
endif()
message(STATUS "${last_output}")
