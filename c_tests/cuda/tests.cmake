# CUDA backend tests. The mock driver (mock/mock_cuda.c) is a shared library
# that LEANRT_CUDA_LIBRARY points leanrt at, so the dlopen/callback/error
# paths run on machines without a GPU. Its build is defined once, in
# mock/CMakeLists.txt (tests/cuda_backend.rs builds the same directory).
add_subdirectory(${CMAKE_CURRENT_SOURCE_DIR}/cuda/mock ${CMAKE_CURRENT_BINARY_DIR}/cuda_mock)
set_target_properties(leanrt_mock_cuda PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
leanrt_test_flags(leanrt_mock_cuda)

# cuda.mock_backend links the mock for its control functions (mock_cuda_set/get).
target_link_libraries(c_cuda_mock_backend PRIVATE leanrt_mock_cuda)
# TIMEOUT 600: about 6 s natively, but 2-3 min under valgrind (scripts/valgrind.sh),
# where the tests' default of 300 s left too little margin on a loaded 2-core machine.
set_tests_properties(cuda.mock_backend PROPERTIES TIMEOUT 600
  ENVIRONMENT "LEANRT_CUDA_LIBRARY=$<TARGET_FILE:leanrt_mock_cuda>")

# cuda.gpu runs on the real driver and skips (77) without a device; the same
# program also runs over the mock so its code is exercised everywhere.
add_test(NAME cuda.gpu_on_mock COMMAND c_cuda_gpu)
set_tests_properties(cuda.gpu_on_mock PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "LEANRT_CUDA_LIBRARY=$<TARGET_FILE:leanrt_mock_cuda>")
add_dependencies(c_cuda_gpu leanrt_mock_cuda)

# cuda.mock_fork: CUDA in a forked child is refused cleanly (mock driver).
target_link_libraries(c_cuda_mock_fork PRIVATE leanrt_mock_cuda)
set_tests_properties(cuda.mock_fork PROPERTIES
  ENVIRONMENT "LEANRT_CUDA_LIBRARY=$<TARGET_FILE:leanrt_mock_cuda>")

# cuda.mock_fork_busy: forks while another thread is inside the CUDA registry;
# every child is answered at once (no lock inherited from the parent is taken).
target_link_libraries(c_cuda_mock_fork_busy PRIVATE leanrt_mock_cuda)
set_tests_properties(cuda.mock_fork_busy PROPERTIES
  ENVIRONMENT "LEANRT_CUDA_LIBRARY=$<TARGET_FILE:leanrt_mock_cuda>")
