# Links the static library into a shared object of a user's own (plugin.c,
# with GNU ld and no version script of leanrt's), then a program against that
# shared object, and runs it. The crate's objects carry versioned names
# (lrt_version@@LEANRT_0.2), which GNU ld refuses in a shared object whose
# version script lacks the node; the installed libleanrt.a has them renamed
# back (cmake/unversion-static.cmake).
# Arguments: CC, STATIC (libleanrt.a), INCLUDE, SRC (this folder), WORK, EMULATOR.
separate_arguments(emulator UNIX_COMMAND "${EMULATOR}")
file(MAKE_DIRECTORY "${WORK}")
include("${CMAKE_CURRENT_LIST_DIR}/../common/run.cmake")
run("${CC}" -std=c11 -Wall -Wextra -Werror -shared -fPIC -I "${INCLUDE}" "${SRC}/plugin.c"
     "${STATIC}" -lpthread -ldl -lm -lrt -o "${WORK}/libplugin.so")
run("${CC}" -std=c11 -Wall -Wextra -Werror "${SRC}/main.c" -L "${WORK}" -lplugin
     "-Wl,-rpath,${WORK}" -o "${WORK}/main")
run(${emulator} "${WORK}/main")
