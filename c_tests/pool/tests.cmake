# The loop test again with the hybrid-CPU degree of parallelism forced (x4).
add_test(NAME pool.loops_forced_hybrid COMMAND c_pool_loops)
set_tests_properties(pool.loops_forced_hybrid PROPERTIES
  ENVIRONMENT LEANRT_POOL_FORCE_HYBRID=1 SKIP_RETURN_CODE 77 TIMEOUT 300)
