# Runs the tool under a series of address-space caps (ulimit -v) and checks that each run ends
# with exit 0, or exit 1 and one line on stderr, never a signal; that some cap made the tool say
# EXPECT_REGEX (by default the reader's "not enough memory to read"); and that the largest cap let
# the run succeed.
# Arguments (-D): TOOL, ARGS (separated by "|"), LIMITS_MIB (ascending, separated by "|"),
# optional EXPECT_REGEX, and PROGRESS_REGEX: leading stderr lines that start with a match are the
# command's progress (suite-run's), not part of the error.
string(REPLACE "|" " " args "${ARGS}")
string(REPLACE "|" ";" limits "${LIMITS_MIB}")
if(NOT DEFINED EXPECT_REGEX)
  set(EXPECT_REGEX "not enough memory to read '.*' \\([0-9.]+ MiB\\)")
endif()
set(reported OFF)
set(last_rc "")
foreach(mib IN LISTS limits)
  math(EXPR kib "${mib} * 1024")
  execute_process(COMMAND sh -c "ulimit -v ${kib} && exec ${TOOL} ${args}"
    RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
  message(STATUS "${mib} MiB: exit ${rc}: ${err}")
  if(NOT (rc STREQUAL "0" OR rc STREQUAL "1"))
    message(FATAL_ERROR "under ${mib} MiB the tool ended with '${rc}' (a crash?): ${err}")
  endif()
  set(error_lines "${err}")
  while(DEFINED PROGRESS_REGEX AND error_lines MATCHES "^(${PROGRESS_REGEX})[^\n]*\n")
    string(LENGTH "${CMAKE_MATCH_0}" progress_length)
    string(SUBSTRING "${error_lines}" ${progress_length} -1 error_lines)
  endwhile()
  if(rc STREQUAL "1" AND NOT error_lines MATCHES "^[^\n]*\n$")
    message(FATAL_ERROR "under ${mib} MiB: expected one line on stderr, got: ${err}")
  endif()
  if(err MATCHES "${EXPECT_REGEX}")
    set(reported ON)
  endif()
  set(last_rc "${rc}")
endforeach()
if(NOT reported)
  message(FATAL_ERROR "no cap made the tool say '${EXPECT_REGEX}'")
endif()
if(NOT last_rc STREQUAL "0")
  message(FATAL_ERROR "the largest cap should let the run succeed, got exit ${last_rc}")
endif()
