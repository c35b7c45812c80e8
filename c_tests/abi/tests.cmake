# The shared object exports only lrt_* functions, each with its version
# node, and has SONAME libleanrt.so.0.
add_test(NAME abi.exports_and_soname
  COMMAND ${CMAKE_COMMAND} -DLIB=${LEANRT_SHARED_LIB} -DREADELF=${CMAKE_READELF}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/exports.cmake)

# The C ABI against the baseline in abi/ with libabigail (scripts/abi-check.sh),
# and that check failing where it must (abi_can_fail.sh). The probe is
# compiled for the host, so a cross build leaves these to the host's build.
if(NOT CMAKE_CROSSCOMPILING)
  add_test(NAME abi.libabigail
    COMMAND bash ${PROJECT_SOURCE_DIR}/scripts/abi-check.sh --lib ${LEANRT_SHARED_LIB})
  add_test(NAME abi.libabigail_can_fail COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/abi/abi_can_fail.sh)
  set_tests_properties(abi.libabigail abi.libabigail_can_fail PROPERTIES
    SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT "ABI_CC=${CMAKE_C_COMPILER}")
endif()

# A program linked against cargo's own output (-L target/<profile> -lleanrt)
# starts: build.rs leaves libleanrt.so.0 (the SONAME) beside libleanrt.so.
add_test(NAME abi.cargo_link
  COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER} -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/abi/cargo_link/main.c
          -DINCLUDE=${LEANRT_INCLUDE_DIR} -DDIR=${_leanrt_cargo_out}
          -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cargo_link "-DEMULATOR=${LEANRT_TEST_EMULATOR}" -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/cargo_link.cmake)

# The static library serves a shared object of a user's own too.
add_test(NAME abi.static_in_shared
  COMMAND ${CMAKE_COMMAND} -DCC=${CMAKE_C_COMPILER} -DSTATIC=${LEANRT_STATIC_LIB}
          -DINCLUDE=${LEANRT_INCLUDE_DIR} -DSRC=${CMAKE_CURRENT_SOURCE_DIR}/abi/static_in_shared
          -DWORK=${CMAKE_CURRENT_BINARY_DIR}/static_in_shared "-DEMULATOR=${LEANRT_TEST_EMULATOR}"
          -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/static_in_shared.cmake)
