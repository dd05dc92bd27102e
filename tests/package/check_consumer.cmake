# Builds tests/package/consumer against swl, either installed into a scratch prefix (find_package) or
# through add_subdirectory, and runs it. Invoked by ctest with -P: SWL_SOURCE_DIR, WORK_DIR, MODE, CXX,
# EXPECT_ASIO, ASIO_INCLUDE_DIR.
include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(consumer_args -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${WORK_DIR}/consumer -DCMAKE_CXX_COMPILER=${CXX})
# Asio's headers seen through a directory of their own, as where a user keeps them outside the compiler's
# paths: swl::asio must carry that directory (the consumer checks).
set(asio_args "")
if(ASIO_INCLUDE_DIR)  # where this build found them
  file(MAKE_DIRECTORY ${WORK_DIR}/asio-elsewhere)
  file(CREATE_LINK ${ASIO_INCLUDE_DIR}/asio.hpp ${WORK_DIR}/asio-elsewhere/asio.hpp SYMBOLIC)
  file(CREATE_LINK ${ASIO_INCLUDE_DIR}/asio ${WORK_DIR}/asio-elsewhere/asio SYMBOLIC)
  set(asio_args -DSWL_ASIO_INCLUDE_DIR=${WORK_DIR}/asio-elsewhere -DSWL_EXPECT_ASIO_AT=${WORK_DIR}/asio-elsewhere)
  list(APPEND consumer_args ${asio_args})
endif()
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} -S ${SWL_SOURCE_DIR} -B ${WORK_DIR}/swl -DSWL_BUILD_EXAMPLES=OFF ${asio_args}
      -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=TRUE  # as on a machine without Catch2: no flag needed
      -DCMAKE_INSTALL_PREFIX=${WORK_DIR}/prefix)
  run(${CMAKE_COMMAND} --install ${WORK_DIR}/swl)
  run(${CMAKE_COMMAND} ${consumer_args} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
else()
  run(${CMAKE_COMMAND} ${consumer_args} -DSWL_VIA=add_subdirectory -DSWL_SOURCE_DIR=${SWL_SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
# Runs a consumer program and checks that it printed `expected`, or fails saying what went wrong (`what`).
function(check_consumer program expected what)
  run(${WORK_DIR}/consumer/${program})
  if(NOT last_output MATCHES "${expected}")
    message(FATAL_ERROR "the ${program} did not ${what}:\n${last_output}")
  endif()
  message(STATUS "${last_output}")
endfunction()

check_consumer(consumer "consumer ok: swl::Limit: max_requests 0" "report swl's InvalidArgument")
if(EXISTS ${WORK_DIR}/consumer/async_consumer)
  check_consumer(async_consumer "async consumer ok: failed as expected" "report the unreachable server")
endif()
if(EXPECT_ASIO OR EXISTS ${WORK_DIR}/consumer/asio_consumer)  # built wherever this build has swl::asio
  check_consumer(asio_consumer "asio consumer ok: failed as expected" "report the unreachable server")
endif()
if(EXISTS ${WORK_DIR}/consumer/calendar_consumer)
  check_consumer(calendar_consumer "calendar consumer ok: a day of 23 hours" "compute Berlin's short day")
endif()
if(EXISTS ${WORK_DIR}/consumer/grpc_consumer)
  check_consumer(grpc_consumer "grpc consumer ok: swl: the gRPC method 'Checkout' is not a full method name"
                 "report the method name gRPC cannot route")
endif()
