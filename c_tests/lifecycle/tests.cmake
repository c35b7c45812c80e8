# The dlopen tests are not linked against leanrt (so dlclose can unload it):
# they find the shared library through LEANRT_LIB.
foreach(_name dl_cycles dl_close_live)
  add_executable(c_lifecycle_${_name} ${CMAKE_CURRENT_SOURCE_DIR}/lifecycle/dl/${_name}.c)
  target_include_directories(c_lifecycle_${_name} PRIVATE ${LEANRT_INCLUDE_DIR})
  target_link_libraries(c_lifecycle_${_name} PRIVATE ${CMAKE_DL_LIBS})
  leanrt_test_flags(c_lifecycle_${_name})
  add_dependencies(c_lifecycle_${_name} leanrt_cargo)
  add_test(NAME lifecycle.${_name} COMMAND c_lifecycle_${_name})
  set_tests_properties(lifecycle.${_name} PROPERTIES
    ENVIRONMENT "LEANRT_LIB=${LEANRT_SHARED_LIB}" TIMEOUT 300)
endforeach()
