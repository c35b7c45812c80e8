# Copies the static library IN to OUT with its functions' plain names.
#
# The crate's objects define each C function under its versioned name
# (lrt_pool_create@@LEANRT_0.2: src/ffi/symbol_versions.rs), which is what
# libleanrt.so exports. In an archive such names help nobody and hurt one
# user: a program links fine (the linker resolves lrt_pool_create to the
# default version), but a shared object of the user's own that takes the
# archive in fails with GNU ld ("version node not found"), since its version
# script has no LEANRT_* nodes. So the installed libleanrt.a defines plain
# names, as before symbol versioning.
#   cmake -DIN=... -DOUT=... -DOBJCOPY=... -DREADELF=... -P unversion-static.cmake
foreach(var IN ITEMS IN OUT OBJCOPY READELF)
  if(NOT ${var})
    message(FATAL_ERROR "unversion-static.cmake: ${var} is not set")
  endif()
endforeach()
execute_process(COMMAND "${READELF}" -W -s "${IN}" OUTPUT_VARIABLE syms RESULT_VARIABLE rc
                ERROR_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${READELF} could not read ${IN}")
endif()
string(REGEX MATCHALL "lrt_[A-Za-z0-9_]+@@?LEANRT_[0-9.]+" versioned "${syms}")
list(REMOVE_DUPLICATES versioned)
set(renames "")
foreach(name IN LISTS versioned)
  string(REGEX REPLACE "@.*$" "" plain "${name}")
  string(APPEND renames "${name} ${plain}\n")
endforeach()
set(list_file "${OUT}.renames")
file(WRITE "${list_file}" "${renames}")
execute_process(COMMAND "${OBJCOPY}" "--redefine-syms=${list_file}" "${IN}" "${OUT}.tmp"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${OBJCOPY} could not rename the versioned names in ${IN}:\n${err}")
endif()
file(RENAME "${OUT}.tmp" "${OUT}")
file(REMOVE "${list_file}")
list(LENGTH versioned n)
message(STATUS "libleanrt.a: ${n} functions under their plain names")
