# The floors of include/swl, checked from the #include lines (issue 52):
# - the shared include/swl/detail/ is the floor every package stands on: its headers include only the floor
#   itself, the value headers (errors, decision, options, observer, access list, policies, periods, the
#   algorithm contract) and the connection types. A package's own internals live in its folder's detail/
#   (algorithms/detail/sliding_window_log/, composites/detail/, asio/detail/, integrations/detail/);
# - nothing climbs: no header includes one that includes it back, however far down.
#
#   cmake -DINCLUDE_DIR=<repository>/include -P check_floor.cmake
cmake_minimum_required(VERSION 3.16)
set(floor_may_include
  "swl/detail/.+"
  "swl/(error|decision|options|connection_options|observer|access_list|periods|algorithm)[.]hpp"
  "swl/policies/[a-z_]+[.]hpp"
  "swl/redis/(client|connection|connection_pool|hash_slot)[.]hpp")

file(GLOB_RECURSE headers RELATIVE ${INCLUDE_DIR} ${INCLUDE_DIR}/swl/*.hpp)
set(problems "")
foreach(header ${headers})
  file(STRINGS ${INCLUDE_DIR}/${header} lines REGEX "^#include <swl/")
  set(included "")
  foreach(line ${lines})
    string(REGEX REPLACE "^#include <([^>]+)>.*" "\\1" target "${line}")
    list(APPEND included ${target})
    if(header MATCHES "^swl/detail/")
      set(allowed FALSE)
      foreach(pattern ${floor_may_include})
        if(target MATCHES "^${pattern}$")
          set(allowed TRUE)
        endif()
      endforeach()
      if(NOT allowed)
        list(APPEND problems "${header} is on the shared floor, and includes ${target}, which stands above it")
      endif()
    endif()
  endforeach()
  set("direct_${header}" ${included})
endforeach()

# Every header's includes, however far down: a walk from each header, each header visited once.
function(reachable_from header result)
  set(seen "")
  set(pending ${direct_${header}})
  while(pending)
    list(POP_FRONT pending next)
    if(NOT next IN_LIST seen)
      list(APPEND seen ${next})
      list(APPEND pending ${direct_${next}})
    endif()
  endwhile()
  set(${result} ${seen} PARENT_SCOPE)
endfunction()

foreach(header ${headers})
  foreach(target ${direct_${header}})
    reachable_from(${target} below)
    if(header IN_LIST below)
      list(APPEND problems "${header} includes ${target}, which includes ${header} back: a climb")
    endif()
  endforeach()
endforeach()

list(LENGTH headers count)
if(problems)
  list(JOIN problems "\n  " listed)
  message(FATAL_ERROR "The floors of include/swl are broken:\n  ${listed}")
endif()
message(STATUS "${count} headers: the shared detail/ includes only the floor, and no include climbs")
