# The shared object exports only lrt_* and has SONAME libleanrt.so.0.
add_test(NAME abi.exports_and_soname
  COMMAND ${CMAKE_COMMAND} -DLIB=${LEANRT_SHARED_LIB} -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/exports.cmake)

# A program linked against cargo's own output (-L target/<profile> -lleanrt)
# starts: build.rs leaves libleanrt.so.0 (the SONAME) beside libleanrt.so.
add_test(NAME abi.cargo_link
  COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER} -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/abi/cargo_link/main.c
          -DINCLUDE=${LEANRT_INCLUDE_DIR} -DDIR=${_leanrt_cargo_out}
          -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cargo_link "-DEMULATOR=${LEANRT_TEST_EMULATOR}" -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/cargo_link.cmake)
