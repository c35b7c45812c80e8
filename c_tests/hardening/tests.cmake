# Hardening tests: a hang is a failure, found fast (the default is 300 s).
foreach(_t staging_bad_input staging_faults pool_bad_input pool_threads pool_custom_create_fails
           huge_inputs huge_totals thread_limits memlock_limit destroy_race maker_misuse)
  if(TEST hardening.${_t})
    set_tests_properties(hardening.${_t} PROPERTIES TIMEOUT 120 LABELS hardening)
  endif()
endforeach()
if(TEST hardening.pool_huge_batches)
  set_tests_properties(hardening.pool_huge_batches PROPERTIES TIMEOUT 30 LABELS hardening)
endif()

# The failing allocator (failmalloc/): a shared library linked into the
# resource-exhaustion programs so that its malloc family interposes glibc's
# for the whole process, libleanrt included (it works through LD_PRELOAD
# too). Not under a sanitizer: their runtimes replace malloc first, so the
# programs would see no failure (they check and fail); scripts/sanitize.sh
# and scripts/valgrind.sh leave them out.
add_library(leanrt_failmalloc SHARED ${CMAKE_CURRENT_SOURCE_DIR}/hardening/failmalloc/failmalloc.c)
leanrt_test_flags(leanrt_failmalloc)
foreach(_t oom_sweep)
  if(TARGET c_hardening_${_t})
    target_link_libraries(c_hardening_${_t} PRIVATE leanrt_failmalloc)
    set_tests_properties(hardening.${_t} PROPERTIES TIMEOUT 600 LABELS "hardening;failmalloc")
  endif()
endforeach()
