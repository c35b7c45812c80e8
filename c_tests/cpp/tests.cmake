# C++ wrapper tests. Every c_tests/cpp/<name>.cpp is registered by
# c_tests/CMakeLists.txt as test cpp.<name>; this file adds the programs
# made of several translation units.

# ORT's forward declarations in both include orders, across translation
# units of one program (the pool pointer types must be one class).
file(GLOB _fwd_srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/cpp/forward_decl/*.cpp)
add_executable(c_cpp_forward_decl ${_fwd_srcs})
target_link_libraries(c_cpp_forward_decl PRIVATE leanrt::leanrt Threads::Threads)
leanrt_test_flags(c_cpp_forward_decl)
add_test(NAME cpp.forward_decl COMMAND c_cpp_forward_decl)
set_tests_properties(cpp.forward_decl PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)

# A hang is a failure, found fast (sections runs ~1 min under valgrind).
foreach(_t forward_decl sections batch profiling raii)
  if(TEST cpp.${_t})
    set_tests_properties(cpp.${_t} PROPERTIES TIMEOUT 120 LABELS cpp)
  endif()
endforeach()
if(TEST cpp.sections)
  set_tests_properties(cpp.sections PROPERTIES TIMEOUT 300)
endif()
