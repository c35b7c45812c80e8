# Every way the README tells a user to take leanrt in, done as it says and
# each program then run:
#
# 1. the install recipe (`cmake -S . -B build -DLEANRT_BUILD_TESTS=OFF &&
#    cmake --build build && cmake --install build --prefix P`) into
#    WORK_DIR/prefix, checking that it built no test (it shares
#    CARGO_TARGET_DIR, so cargo has nothing left to build);
# 2. find_package (shared and static) and pkg-config through CMake: the
#    project SOURCE_DIR;
# 3. pkg-config by hand, the README's line `cc app.c $(pkg-config --cflags
#    --libs leanrt)`, whose ./a.out must start with no LD_LIBRARY_PATH;
# 4. the examples (LEANRT_SOURCE_DIR/examples) as a project of their own, and
#    each with the one-line command at its top;
# 5. add_subdirectory: SOURCE_DIR/subdir, a parent project that takes leanrt
#    in from LEANRT_SOURCE_DIR;
# 6. LD_PRELOAD of the installed libleanrt.so.0 over SWAP_PROGRAM, a program
#    linked against a plain-C stand-in (the swap test's check:
#    c_tests/swap/run_swap.cmake).
#
# With INSTALLED_PREFIX (the Debian packages: /usr), leanrt is already
# installed there and routes 2, 3, 4 and 6 run against it as a user of the
# packages would: no CMAKE_PREFIX_PATH, PKG_CONFIG_PATH or LD_LIBRARY_PATH,
# LD_PRELOAD by the SONAME alone; the package found must be the one under
# INSTALLED_PREFIX. Routes 1 and 5 build from the source tree and are left
# out (scripts/test.sh, "Debian packages").
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

include("${CMAKE_CURRENT_LIST_DIR}/../common/run.cmake")

# Runs a shell line in DIR with the installed package on PKG_CONFIG_PATH (none
# for a system prefix) and nothing on LD_LIBRARY_PATH, as a user's shell would.
function(shell dir line)
  run(${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH ${pc_env}
      sh -c "cd '${dir}' && ${line}")
endfunction()

if(INSTALLED_PREFIX)
  set(prefix "${INSTALLED_PREFIX}")
  set(prefix_args "")
  set(pc_env --unset=PKG_CONFIG_PATH)
  set(preload libleanrt.so.0)
else()
  # 1. The install recipe.
  set(prefix "${WORK_DIR}/prefix")
  set(ibuild "${WORK_DIR}/install-build")
  run(${CMAKE_COMMAND} -S "${LEANRT_SOURCE_DIR}" -B "${ibuild}" -G "${GENERATOR}"
      -DLEANRT_BUILD_TESTS=OFF -DLEANRT_CARGO_TARGET_DIR=${CARGO_TARGET_DIR}
      -DLEANRT_CARGO_PROFILE=${CARGO_PROFILE} -DCMAKE_BUILD_TYPE=Release)
  run(${CMAKE_COMMAND} --build "${ibuild}")
  if(EXISTS "${ibuild}/c_tests")
    message(FATAL_ERROR "-DLEANRT_BUILD_TESTS=OFF still configured the tests (${ibuild}/c_tests)")
  endif()
  run(${CMAKE_COMMAND} --install "${ibuild}" --prefix "${prefix}")
  file(GLOB_RECURSE pcfile "${prefix}/*/leanrt.pc")
  get_filename_component(pcdir "${pcfile}" DIRECTORY)
  get_filename_component(libdir "${pcdir}" DIRECTORY)
  set(prefix_args -DCMAKE_PREFIX_PATH=${prefix})
  set(pc_env PKG_CONFIG_PATH=${pcdir})
  set(preload ${libdir}/libleanrt.so.0)
endif()

# 2. find_package and pkg-config through CMake.
set(bdir "${WORK_DIR}/build")
execute_process(COMMAND ${CMAKE_COMMAND} -E env ${pc_env}
    ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${bdir}" -G "${GENERATOR}"
    ${prefix_args} -DCMAKE_BUILD_TYPE=Release
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer failed (${rc}):\n${out}\n${err}")
endif()
string(FIND "${out}" "leanrt found: ${prefix}/" found_at)
if(found_at EQUAL -1)
  message(FATAL_ERROR "find_package did not find leanrt under ${prefix}:\n${out}")
endif()
run(${CMAKE_COMMAND} --build "${bdir}")
foreach(prog consumer_shared consumer_static consumer_cxx consumer_pkgconfig)
  # The shared consumers find libleanrt.so.0 through their build RPATH.
  run("${bdir}/${prog}")
endforeach()

# 3. The README's pkg-config line, by hand.
set(hand "${WORK_DIR}/by-hand")
file(MAKE_DIRECTORY "${hand}")
configure_file("${SOURCE_DIR}/main.c" "${hand}/app.c" COPYONLY)
shell("${hand}" "cc app.c $(pkg-config --cflags --libs leanrt) && ./a.out")

# 4. The examples, as a project and one by one as their first lines say.
set(edir "${WORK_DIR}/examples")
run(${CMAKE_COMMAND} -S "${LEANRT_SOURCE_DIR}/examples" -B "${edir}" -G "${GENERATOR}"
    ${prefix_args} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${edir}")
file(GLOB examples "${LEANRT_SOURCE_DIR}/examples/*.c" "${LEANRT_SOURCE_DIR}/examples/*.cpp")
foreach(src IN LISTS examples)
  get_filename_component(name "${src}" NAME_WE)
  run("${edir}/${name}")
  # The build line in the example's comment: "cc ... && ./name" or "c++ ...".
  file(STRINGS "${src}" lines REGEX "^(//| \\*)   (cc|c\\+\\+) ")
  list(GET lines 0 line)
  string(REGEX REPLACE "^(//| \\*)   " "" line "${line}")
  file(COPY "${src}" DESTINATION "${hand}/${name}")
  if(NOT line MATCHES "&& \\./")
    set(line "${line} && ./${name}")
  endif()
  shell("${hand}/${name}" "${line}")
endforeach()

if(INSTALLED_PREFIX)
  # 6. LD_PRELOAD of the installed library, by its SONAME.
  run(${CMAKE_COMMAND} -DPROGRAM=${SWAP_PROGRAM} -DLEANRT=${preload}
      -P "${LEANRT_SOURCE_DIR}/c_tests/swap/run_swap.cmake")
  message(STATUS "routes 2, 3, 4, 6 passed against ${prefix}")
  return()
endif()

# 5. add_subdirectory.
set(pdir "${WORK_DIR}/parent")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/subdir" -B "${pdir}" -G "${GENERATOR}"
    -DLEANRT_SOURCE_DIR=${LEANRT_SOURCE_DIR} -DLEANRT_CARGO_TARGET_DIR=${CARGO_TARGET_DIR}
    -DLEANRT_CARGO_PROFILE=${CARGO_PROFILE} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${pdir}")
foreach(prog parent_shared parent_static)
  run("${pdir}/${prog}")
endforeach()

# 6. LD_PRELOAD of the installed library.
run(${CMAKE_COMMAND} -DPROGRAM=${SWAP_PROGRAM} -DLEANRT=${preload}
    -P "${LEANRT_SOURCE_DIR}/c_tests/swap/run_swap.cmake")
