# Finds hiredis for swl, the same way in swl's own build and in the installed swlConfig.cmake:
#   - hiredis's own CMake package first (hiredis 1.x installed with CMake, vcpkg, conan: hiredis::hiredis
#     and, built with SSL, hiredis::hiredis_ssl), then pkg-config (Debian's libhiredis-dev, a `make install`);
#   - then a check that the hiredis/hiredis.h the compiler will see is the version of the library linked
#     (hiredis 1.0.x's hiredis.pc names only <prefix>/include/hiredis, so <hiredis/hiredis.h> would
#     otherwise come from another hiredis in /usr/include: it builds, and every connection fails).
#
# Sets swl_hiredis_target, swl_hiredis_ssl_target (empty without hiredis_ssl) and swl_hiredis_version;
# swl_hiredis_problem instead, saying what is wrong, when hiredis cannot be used. Never stops CMake:
# the caller decides whether a missing hiredis is fatal (swl's build) or a "not found" (find_package).

set(swl_hiredis_target "")
set(swl_hiredis_ssl_target "")
set(swl_hiredis_version "")
set(swl_hiredis_problem "")

find_package(hiredis CONFIG QUIET)
if(TARGET hiredis::hiredis)
  set(swl_hiredis_target hiredis::hiredis)
  set(swl_hiredis_version "${hiredis_VERSION}")
  find_package(hiredis_ssl CONFIG QUIET)
  if(TARGET hiredis::hiredis_ssl)
    set(swl_hiredis_ssl_target hiredis::hiredis_ssl)
  endif()
else()
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(hiredis QUIET IMPORTED_TARGET GLOBAL hiredis)
  endif()
  if(TARGET PkgConfig::hiredis)
    set(swl_hiredis_target PkgConfig::hiredis)
    set(swl_hiredis_version "${hiredis_VERSION}")
    # swl includes <hiredis/hiredis.h>: the directory above .../include/hiredis must come first.
    set(swl_hiredis_parents "")
    foreach(directory IN LISTS hiredis_INCLUDE_DIRS)
      if(directory MATCHES "/hiredis/?$")
        get_filename_component(parent "${directory}" DIRECTORY)
        list(APPEND swl_hiredis_parents "${parent}")
      endif()
    endforeach()
    if(swl_hiredis_parents)
      set_property(TARGET PkgConfig::hiredis APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${swl_hiredis_parents})
    endif()
    pkg_check_modules(hiredis_ssl QUIET IMPORTED_TARGET GLOBAL hiredis_ssl)
    if(TARGET PkgConfig::hiredis_ssl)
      set(swl_hiredis_ssl_target PkgConfig::hiredis_ssl)
    endif()
  else()
    set(swl_hiredis_problem "hiredis not found: neither hiredis's CMake package nor a hiredis.pc for pkg-config "
                            "(on Debian and Ubuntu: apt-get install libhiredis-dev)")
  endif()
endif()

# The version in the header the compiler will find, from the include directories the target gives.
if(swl_hiredis_target AND swl_hiredis_version)
  get_target_property(swl_hiredis_includes ${swl_hiredis_target} INTERFACE_INCLUDE_DIRECTORIES)
  set(swl_hiredis_header "")
  foreach(directory IN LISTS swl_hiredis_includes)
    if(NOT swl_hiredis_header AND EXISTS "${directory}/hiredis/hiredis.h")
      set(swl_hiredis_header "${directory}/hiredis/hiredis.h")
    endif()
  endforeach()
  if(NOT swl_hiredis_header)
    foreach(directory IN LISTS CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES CMAKE_SYSTEM_INCLUDE_PATH /usr/local/include /usr/include)
      if(NOT swl_hiredis_header AND EXISTS "${directory}/hiredis/hiredis.h")
        set(swl_hiredis_header "${directory}/hiredis/hiredis.h")
      endif()
    endforeach()
  endif()
  if(swl_hiredis_header)
    file(STRINGS "${swl_hiredis_header}" swl_hiredis_defines REGEX "^#define HIREDIS_(MAJOR|MINOR|PATCH) [0-9]+")
    set(swl_hiredis_header_version "")
    foreach(part MAJOR MINOR PATCH)
      string(REGEX MATCH "HIREDIS_${part} ([0-9]+)" ignored "${swl_hiredis_defines}")
      list(APPEND swl_hiredis_header_version "${CMAKE_MATCH_1}")
    endforeach()
    string(REPLACE ";" "." swl_hiredis_header_version "${swl_hiredis_header_version}")
    if(NOT swl_hiredis_header_version VERSION_EQUAL swl_hiredis_version)
      set(swl_hiredis_problem "the hiredis header ${swl_hiredis_header} is version ${swl_hiredis_header_version}, "
                              "but the hiredis library found is ${swl_hiredis_version}: the compiler would see "
                              "one hiredis and the program link another. Put the matching include directory first "
                              "(CMAKE_PREFIX_PATH, PKG_CONFIG_PATH) or remove the other hiredis")
    endif()
  else()
    set(swl_hiredis_problem "hiredis ${swl_hiredis_version} was found, but not its header hiredis/hiredis.h")
  endif()
endif()
