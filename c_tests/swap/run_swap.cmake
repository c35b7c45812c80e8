# Runs PROGRAM twice: as linked (the plain-C stand-in serves lrt_*), then with
# LD_PRELOAD=LEANRT. Passes when the first line names the server ("served-by:
# ..."), the stand-in served the first run, leanrt the second, and every other
# line is identical. EMULATOR (optional, a command line) runs a cross-built
# PROGRAM (c_tests/CMakeLists.txt passes CMAKE_CROSSCOMPILING_EMULATOR).
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
execute_process(COMMAND ${emulator} ${PROGRAM} OUTPUT_VARIABLE plain RESULT_VARIABLE plain_rc)
execute_process(COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=${LEANRT} ${emulator} ${PROGRAM}
                OUTPUT_VARIABLE swapped RESULT_VARIABLE swapped_rc)
if(NOT plain_rc EQUAL 0 OR NOT swapped_rc EQUAL 0)
  message(FATAL_ERROR "exit codes: plain ${plain_rc}, LD_PRELOAD ${swapped_rc}\n--- plain\n${plain}\n--- LD_PRELOAD\n${swapped}")
endif()
string(REGEX MATCH "^served-by: ([^\n]*)\n" _m1 "${plain}")
set(plain_server "${CMAKE_MATCH_1}")
string(REGEX MATCH "^served-by: ([^\n]*)\n" _m2 "${swapped}")
set(swapped_server "${CMAKE_MATCH_1}")
if(NOT plain_server MATCHES "^standin")
  message(FATAL_ERROR "plain run not served by the stand-in: '${plain_server}'")
endif()
if(NOT swapped_server MATCHES "^leanrt [0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "LD_PRELOAD run not served by leanrt: '${swapped_server}'")
endif()
string(REGEX REPLACE "^served-by: [^\n]*\n" "" plain_rest "${plain}")
string(REGEX REPLACE "^served-by: [^\n]*\n" "" swapped_rest "${swapped}")
if(plain_rest STREQUAL "")
  message(FATAL_ERROR "the program printed no results")
endif()
if(NOT plain_rest STREQUAL swapped_rest)
  message(FATAL_ERROR "results differ\n--- stand-in (${plain_server})\n${plain_rest}\n--- leanrt (${swapped_server})\n${swapped_rest}")
endif()
string(REGEX MATCHALL "\n" _lines "${plain_rest}")
list(LENGTH _lines n)
message(STATUS "swap ok: ${n} result lines identical; '${plain_server}' -> '${swapped_server}'")
