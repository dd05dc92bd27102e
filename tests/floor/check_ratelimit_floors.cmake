# The floors of ratelimit/, checked from the #include lines: each folder includes only itself and the
# folders below it, so that the tree says which part stands on which, and a part never reaches up.
#
#   config < decide < telemetry < reload < serve < settings < app
#
# config/ holds the rules and where they come from (its yaml/ reader private to it); decide/ plans and
# decides a request; telemetry/ logs and counts; reload/ holds the configuration in force and replaces
# it; serve/ answers the protocols; settings/ reads how the server is run into each part's options; app/
# wires the parts into programs.
#
#   cmake -DRATELIMIT_DIR=<repository>/ratelimit -P check_ratelimit_floors.cmake
cmake_minimum_required(VERSION 3.16)
set(floors config decide telemetry reload serve settings app)

file(GLOB_RECURSE sources RELATIVE ${RATELIMIT_DIR} ${RATELIMIT_DIR}/*.hpp ${RATELIMIT_DIR}/*.cpp)
set(problems "")
set(unplaced "")
foreach(source ${sources})
  string(REGEX REPLACE "/.*" "" folder "${source}")
  list(FIND floors ${folder} floor)
  if(floor EQUAL -1)
    list(APPEND unplaced ${source})
    continue()
  endif()
  file(STRINGS ${RATELIMIT_DIR}/${source} lines REGEX "^#include <ratelimit/")
  foreach(line ${lines})
    string(REGEX REPLACE "^#include <ratelimit/([^/>]+)/.*" "\\1" target "${line}")
    list(FIND floors ${target} target_floor)
    if(target_floor GREATER floor)
      string(REGEX REPLACE "^#include <([^>]+)>.*" "\\1" included "${line}")
      list(APPEND problems "${source} includes ${included}: ${target}/ stands above ${folder}/")
    endif()
  endforeach()
endforeach()
if(unplaced)
  list(APPEND problems "on no floor (a folder of its own belongs in this script's list): ${unplaced}")
endif()

list(LENGTH sources count)
if(problems)
  list(JOIN problems "\n  " listed)
  message(FATAL_ERROR "The floors of ratelimit/ are broken:\n  ${listed}")
endif()
list(JOIN floors " < " order)
message(STATUS "${count} sources of ratelimit/ on their floors: ${order}")
