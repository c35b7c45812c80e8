# The reference runtime's adapter (integrations/simpler/leanrt_simpler.cpp),
# built against stand-ins of the two reference headers it includes.
target_sources(c_simpler_adapter PRIVATE ${PROJECT_SOURCE_DIR}/integrations/simpler/leanrt_simpler.cpp)
target_include_directories(c_simpler_adapter PRIVATE
  ${CMAKE_CURRENT_SOURCE_DIR}/simpler/stand_in ${PROJECT_SOURCE_DIR}/integrations/simpler)
