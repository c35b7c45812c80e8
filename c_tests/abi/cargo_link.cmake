# Builds c_tests/abi/cargo_link/main.c against cargo's own output directory
# with `-L DIR -lleanrt -Wl,-rpath,DIR` (what a cargo user does), then runs it.
# Arguments: CC, SRC, INCLUDE, DIR (cargo's target/<profile>), WORK, and
# EMULATOR (optional, a command line that runs a cross-built program).
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
file(MAKE_DIRECTORY "${WORK}")
set(_exe "${WORK}/cargo_link")
execute_process(
  COMMAND "${CC}" -std=c11 -Wall -Wextra -Werror "${SRC}" -I "${INCLUDE}"
          -L "${DIR}" -lleanrt "-Wl,-rpath,${DIR}" -o "${_exe}"
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "linking against ${DIR} failed:\n${_out}${_err}")
endif()
execute_process(COMMAND ${emulator} "${_exe}" RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(NOT _rc EQUAL 0)
  message(FATAL_ERROR "the program linked against ${DIR} did not run (${_rc}):\n${_out}${_err}")
endif()
message(STATUS "ran: ${_out}")
