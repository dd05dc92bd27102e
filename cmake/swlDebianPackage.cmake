# libswl-dev, a Debian package of what `cmake --install` installs: configure with
# -DCMAKE_INSTALL_PREFIX=/usr, then `cpack -G DEB` in the build directory. swl is header-only, so the package
# is architecture-independent; it needs hiredis's headers, and names what the optional components use.
# Installing builds nothing (the headers are the library), so cpack need not build the tests first.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY TRUE)
install(FILES ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/libswl-dev
        RENAME copyright)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME libswl-dev)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION} (C++17 headers)")
set(CPACK_PACKAGE_CONTACT "The swl authors <swl@users.noreply.github.com>")
set(CPACK_RESOURCE_FILE_LICENSE ${CMAKE_CURRENT_SOURCE_DIR}/LICENSE)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libhiredis-dev (>= 0.14)")
# swl::async, swl::asio (or swl::boost_asio), swl::tls, swl::calendar, swl::prometheus and swl::grpc; a
# Redis to limit against.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
    "libevent-dev, libasio-dev | libboost1.81-dev, libssl-dev, libhowardhinnant-date-dev, prometheus-cpp-dev, libgrpc++-dev, redis-server | valkey-server")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "Exact distributed rate limiting on Redis for C++17 services.\n\
swl decides whether to serve a request with one atomic Lua script per call on a\n\
sliding window log (one sorted set per limited key), and says when to come back\n\
if not. Header-only; CMake package swl (find_package(swl)) and pkg-config swl.")
include(CPack)
