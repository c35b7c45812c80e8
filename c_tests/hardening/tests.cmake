# Hardening tests: a hang is a failure, found fast (the default is 300 s).
foreach(_t staging_bad_input staging_faults pool_bad_input pool_threads pool_custom_create_fails)
  if(TEST hardening.${_t})
    set_tests_properties(hardening.${_t} PROPERTIES TIMEOUT 120 LABELS hardening)
  endif()
endforeach()
if(TEST hardening.pool_huge_batches)
  set_tests_properties(hardening.pool_huge_batches PROPERTIES TIMEOUT 30 LABELS hardening)
endif()
