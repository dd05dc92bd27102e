# Makes the swl-ratelimit package from the build under test (its server already built), checks what it
# declares and holds, unpacks it into a scratch root and runs the server from there.
# Invoked by ctest with -P: BUILD_DIR, WORK_DIR, CPACK.
include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run(${CPACK} --config ${BUILD_DIR}/CPackRatelimitConfig.cmake -B ${WORK_DIR}/out)
file(GLOB packages ${WORK_DIR}/out/swl-ratelimit_*.deb)
list(LENGTH packages count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "cpack made no swl-ratelimit_<version>_<arch>.deb in ${WORK_DIR}/out")
endif()

run(dpkg-deb --field ${packages} Package Architecture Depends Section)
expect("${last_output}" "Package: swl-ratelimit\n" "is not named swl-ratelimit")
expect("${last_output}" "Architecture: (amd64|arm64|[a-z0-9]+)\n" "names no architecture")
# dpkg-shlibdeps found the libraries the server links.
foreach(library libgrpc\\+\\+ libprotobuf libyaml-0-2 libprometheus-cpp-pull libhiredis)
  expect("${last_output}" "Depends: [^\n]*${library}" "does not depend on ${library}")
endforeach()
message(STATUS "${last_output}")
run(dpkg-deb --contents ${packages})
foreach(path usr/bin/swl-ratelimit usr/bin/swl-ratelimit-probe usr/lib/systemd/system/swl-ratelimit.service
             usr/share/doc/swl-ratelimit/copyright usr/share/doc/swl-ratelimit/ratelimit.md
             usr/share/doc/swl-ratelimit/examples/config.yaml)
  expect("${last_output}" " \\./${path}\n" "does not hold /${path}")
endforeach()
if(last_output MATCHES " \\./usr/include/")
  message(FATAL_ERROR "the swl-ratelimit package holds headers, which are libswl-dev's:\n${last_output}")
endif()

# Unpacked, as apt would install it: the server runs from there (its libraries found).
set(root ${WORK_DIR}/root)
run(dpkg-deb -x ${packages} ${root})
run(${root}/usr/bin/swl-ratelimit --help)
expect("${last_output}" "usage: swl-ratelimit --config PATH" "holds a server that prints no usage")
# A wrong flag stops it at once, with status 2 and the flag named.
execute_process(COMMAND ${root}/usr/bin/swl-ratelimit --config ${root}/usr/share/doc/swl-ratelimit/examples/config.yaml
                        --redis-tls maybe RESULT_VARIABLE status OUTPUT_QUIET ERROR_VARIABLE errors)
expect("${status}:${errors}" "^2:swl-ratelimit: --redis-tls maybe: expected yes or no" "refuses no wrong flag")
