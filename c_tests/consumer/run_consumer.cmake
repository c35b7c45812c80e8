# Installs the leanrt build BUILD_DIR into WORK_DIR/prefix, configures the
# consumer project SOURCE_DIR against it (find_package and pkg-config),
# builds it and runs every program. Then builds SOURCE_DIR/subdir, a parent
# project that takes leanrt in with add_subdirectory(LEANRT_SOURCE_DIR)
# (sharing CARGO_TARGET_DIR, so cargo has nothing left to build), and runs it.
set(prefix "${WORK_DIR}/prefix")
set(bdir "${WORK_DIR}/build")
file(REMOVE_RECURSE "${WORK_DIR}")

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
file(GLOB_RECURSE pcfile "${prefix}/*/leanrt.pc")
get_filename_component(pcdir "${pcfile}" DIRECTORY)
run(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir}
    ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${bdir}" -G "${GENERATOR}"
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${bdir}")
get_filename_component(libdir "${pcdir}" DIRECTORY)
foreach(prog consumer_shared consumer_static consumer_cxx consumer_pkgconfig)
  # The shared consumers find libleanrt.so.0 through their build RPATH.
  run("${bdir}/${prog}")
endforeach()

set(pdir "${WORK_DIR}/parent")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/subdir" -B "${pdir}" -G "${GENERATOR}"
    -DLEANRT_SOURCE_DIR=${LEANRT_SOURCE_DIR} -DLEANRT_CARGO_TARGET_DIR=${CARGO_TARGET_DIR}
    -DLEANRT_CARGO_PROFILE=${CARGO_PROFILE} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${pdir}")
foreach(prog parent_shared parent_static)
  run("${pdir}/${prog}")
endforeach()
