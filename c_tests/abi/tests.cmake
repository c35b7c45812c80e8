# The shared object exports only lrt_* and has SONAME libleanrt.so.0.
add_test(NAME abi.exports_and_soname
  COMMAND ${CMAKE_COMMAND} -DLIB=${LEANRT_SHARED_LIB} -P ${CMAKE_CURRENT_SOURCE_DIR}/abi/exports.cmake)
