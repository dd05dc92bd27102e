# Builds the Debian package (cpack -G DEB), checks what it declares and holds, unpacks it into a scratch
# root, and builds tests/package/consumer from there: through find_package, and through pkg-config alone.
# Invoked by ctest with -P: SWL_SOURCE_DIR, WORK_DIR, CXX, CPACK, EXPECT_ASIO.
include(${CMAKE_CURRENT_LIST_DIR}/run.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

run(${CMAKE_COMMAND} -S ${SWL_SOURCE_DIR} -B ${WORK_DIR}/swl -DSWL_BUILD_EXAMPLES=OFF -DCMAKE_INSTALL_PREFIX=/usr
    -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=TRUE)
run(${CPACK} -G DEB --config ${WORK_DIR}/swl/CPackConfig.cmake -B ${WORK_DIR}/out)
file(GLOB packages ${WORK_DIR}/out/libswl-dev_*_all.deb)
list(LENGTH packages count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "cpack made no libswl-dev_<version>_all.deb in ${WORK_DIR}/out")
endif()

run(dpkg-deb --field ${packages} Package Version Architecture Depends Suggests Section)
expect("${last_output}" "Package: libswl-dev\n" "is not named libswl-dev")
expect("${last_output}" "Architecture: all\n" "is not architecture-independent")
expect("${last_output}" "Depends: libhiredis-dev \\(>= 0.14\\)\n" "does not depend on hiredis's headers")
expect("${last_output}" "Suggests: [^\n]*libevent-dev[^\n]*libasio-dev[^\n]*libssl-dev[^\n]*libhowardhinnant-date-dev[^\n]*libgrpc\\+\\+-dev"
       "does not suggest what the optional components use")
message(STATUS "${last_output}")
run(dpkg-deb --contents ${packages})
foreach(path usr/include/swl/swl.hpp usr/include/swl/detail/io/hiredis.hpp usr/include/swl/asio/limiter.hpp
             usr/share/cmake/swl/swlConfig.cmake
             usr/share/cmake/swl/swlConfigVersion.cmake usr/share/cmake/swl/swlTargets.cmake
             usr/share/pkgconfig/swl.pc usr/share/doc/libswl-dev/copyright)
  expect("${last_output}" " \\./${path}\n" "does not hold /${path}")
endforeach()
if(last_output MATCHES " \\./usr/lib/")
  message(FATAL_ERROR "the package holds files under /usr/lib, which differs between architectures:\n${last_output}")
endif()

# Unpacked, as apt would install it, into a root of its own.
set(root ${WORK_DIR}/root)
run(dpkg-deb -x ${packages} ${root})
run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/consumer -B ${WORK_DIR}/consumer -DCMAKE_CXX_COMPILER=${CXX}
    -DCMAKE_PREFIX_PATH=${root}/usr)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer --target consumer)
run(${WORK_DIR}/consumer/consumer)
expect("${last_output}" "consumer ok: swl::Limit: max_requests 0" "built a consumer that does not report swl's error")
# The Asio component, where this machine has Asio: found through find_package(swl COMPONENTS asio).
if(EXPECT_ASIO)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer --target asio_consumer)
  run(${WORK_DIR}/consumer/asio_consumer)
  expect("${last_output}" "asio consumer ok: failed as expected" "built an Asio consumer that does not report the error")
endif()

# Without CMake: pkg-config finds swl.pc where it was unpacked, and places the prefix there.
set(ENV{PKG_CONFIG_PATH} ${root}/usr/share/pkgconfig)
run(pkg-config --define-prefix --cflags --libs swl)
string(STRIP "${last_output}" flags)
separate_arguments(flags UNIX_COMMAND "${flags}")
expect("${flags}" "-I${root}/usr/include" "gives pkg-config no include directory in the unpacked root")
run(${CXX} -std=c++17 ${CMAKE_CURRENT_LIST_DIR}/consumer/consumer.cpp ${flags} -o ${WORK_DIR}/pkg_config_consumer)
run(${WORK_DIR}/pkg_config_consumer)
expect("${last_output}" "consumer ok: swl::Limit: max_requests 0" "built a consumer through pkg-config that fails")
message(STATUS "${last_output}")
