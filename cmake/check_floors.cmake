# Folders are floors: a folder's sources include only headers of folders on lower floors (and of their own
# folder). Run at build time by the `check_floors` target, which every library depends on, so an include that
# runs back up fails the build with the file, the line and the rule it breaks.
#
#   cmake -DSOURCE_DIR=<repo> [-DSTAMP=<file>] -P cmake/check_floors.cmake
#
# The floors (keep in step with the README's Design section):
set(LOCKCHECK_FLOORS
  "core:1"
  "sys:2"
  "cluster:3" "locks:3" "checkers:3"
  "servers:4" "docker:4" "report:4"
  "nemesis:5" "workloads:5"
  "harness:6"
  "bench:7" "fuzz:7"
  "tests:8")

if(NOT SOURCE_DIR)
  message(FATAL_ERROR "check_floors: pass -DSOURCE_DIR=<the repository>")
endif()

foreach(entry IN LISTS LOCKCHECK_FLOORS)
  string(REPLACE ":" ";" pair "${entry}")
  list(GET pair 0 folder)
  list(GET pair 1 floor)
  set(floor_of_${folder} ${floor})
  list(APPEND folders ${folder})
endforeach()

set(violations "")
foreach(folder IN LISTS folders)
  file(GLOB_RECURSE sources RELATIVE "${SOURCE_DIR}"
       "${SOURCE_DIR}/${folder}/*.h" "${SOURCE_DIR}/${folder}/*.cc" "${SOURCE_DIR}/${folder}/*.c")
  foreach(src IN LISTS sources)
    file(STRINGS "${SOURCE_DIR}/${src}" includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
    set(line_no 0)
    foreach(inc IN LISTS includes)
      string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]+\"([^\"]+)\".*" "\\1" path "${inc}")
      string(FIND "${path}" "/" slash)
      if(slash LESS 1)
        continue()  # a header of the same folder, named without it ("history_builder.h")
      endif()
      string(SUBSTRING "${path}" 0 ${slash} target)
      if(target STREQUAL folder)
        continue()
      endif()
      if(NOT DEFINED floor_of_${target})
        continue()  # a system or third-party header with a slash (nlohmann/json.hpp is in <>, but be lenient)
      endif()
      if(NOT floor_of_${target} LESS floor_of_${folder})
        string(APPEND violations
               "  ${src}: includes \"${path}\" (${target}/ is floor ${floor_of_${target}}, ${folder}/ is floor ${floor_of_${folder}})\n")
      endif()
    endforeach()
  endforeach()
endforeach()

if(violations)
  message(FATAL_ERROR "Folders are floors: a folder includes only folders on lower floors.\n${violations}")
endif()
if(STAMP)
  file(WRITE "${STAMP}" "floors ok\n")
endif()
