# `cmake --install build --prefix DIR` gives a relocatable tree:
#
#   DIR/bin/ompsim                 the CLI (a relative link into share/ompsim)
#   DIR/lib/ompsim/{lib,bin}/      runtime, plugins, device runtime, pass plugin,
#                                  executor; laid out like the build folder
#   DIR/share/ompsim/              the CLI's Python code, the conformance programs
#                                  and harness; ompsim-install.txt marks the tree
#   DIR/include/ompsim/            the offload ABI and plugin C ABI headers
#   DIR/lib/cmake/ompsim/          find_package(ompsim): ompsim::plugin_api
include(CMakePackageConfigHelpers)
include(GNUInstallDirs)

set(OMPSIM_INSTALL_TREE lib/ompsim)

# The plugin C ABI for third-party plugins: headers only.
add_library(ompsim_plugin_api INTERFACE)
add_library(ompsim::plugin_api ALIAS ompsim_plugin_api)
set_target_properties(ompsim_plugin_api PROPERTIES EXPORT_NAME plugin_api)
target_include_directories(ompsim_plugin_api INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/runtime/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS ompsim_plugin_api EXPORT ompsimTargets)
install(FILES runtime/include/ompsim/offload_abi.h runtime/include/ompsim/plugin_api.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ompsim)
install(EXPORT ompsimTargets NAMESPACE ompsim:: DESTINATION lib/cmake/ompsim)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/ompsimConfig.cmake.in
  ${PROJECT_BINARY_DIR}/ompsimConfig.cmake INSTALL_DESTINATION lib/cmake/ompsim)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ompsimConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ompsimConfig.cmake ${PROJECT_BINARY_DIR}/ompsimConfigVersion.cmake
        DESTINATION lib/cmake/ompsim)

# Libraries and executables that exist in this configuration (OMPSIM_COMPONENTS).
foreach(target ompsim_support ompsim_trace ompsim_plugin_host ompsim_plugin_sim ompsim_device_runtime
               ompsim_device_api
               ompsim_indirect_pass ompsim_compile_server)
  if(TARGET ${target})
    install(TARGETS ${target} LIBRARY DESTINATION ${OMPSIM_INSTALL_TREE}/lib
                              ARCHIVE DESTINATION ${OMPSIM_INSTALL_TREE}/lib)
  endif()
endforeach()
if(TARGET ompsim_runtime)
  install(TARGETS ompsim_runtime LIBRARY DESTINATION ${OMPSIM_INSTALL_TREE}/lib/runtime NAMELINK_SKIP)
endif()
foreach(target ompsim-device ompsim-inspect ompsim_lookup_bench ompsim-cc-client)
  if(TARGET ${target})
    install(TARGETS ${target} RUNTIME DESTINATION ${OMPSIM_INSTALL_TREE}/bin)
  endif()
endforeach()

# The CLI and what its subcommands read (never the developer scripts or tests).
set(OMPSIM_INSTALL_SHARE share/ompsim)
install(PROGRAMS scripts/ompsim DESTINATION ${OMPSIM_INSTALL_SHARE}/scripts)
install(FILES scripts/packages.txt DESTINATION ${OMPSIM_INSTALL_SHARE}/scripts)
install(FILES scripts/lib/ompsim_command.py DESTINATION ${OMPSIM_INSTALL_SHARE}/scripts/lib)
install(DIRECTORY scripts/lib/ompsim_base scripts/lib/ompsim_cli DESTINATION ${OMPSIM_INSTALL_SHARE}/scripts/lib
        PATTERN tests EXCLUDE PATTERN __pycache__ EXCLUDE)
install(DIRECTORY conformance/ DESTINATION ${OMPSIM_INSTALL_SHARE}/conformance
        PATTERN out EXCLUDE PATTERN __pycache__ EXCLUDE PATTERN CMakeLists.txt EXCLUDE
        PATTERN harness/tests EXCLUDE)
install(FILES conftest.py pyproject.toml DESTINATION ${OMPSIM_INSTALL_SHARE})
# ompsim's <ompx.h>, where `ompsim cc` looks for it (paths.OMPX_INCLUDE).
install(DIRECTORY runtime/device/ompx/include/ DESTINATION ${OMPSIM_INSTALL_SHARE}/runtime/device/ompx/include)
# The device math header `ompsim cc` force-includes (paths.DEVICE_MATH_HEADER).
install(DIRECTORY runtime/device/math/include/ DESTINATION ${OMPSIM_INSTALL_SHARE}/runtime/device/math/include)
# The marker scripts/lib/ompsim_base/paths.py reads: the build-like tree, relative
# to share/ompsim, so the whole prefix can move.
file(WRITE ${PROJECT_BINARY_DIR}/ompsim-install.txt "../../${OMPSIM_INSTALL_TREE}\n")
install(FILES ${PROJECT_BINARY_DIR}/ompsim-install.txt DESTINATION ${OMPSIM_INSTALL_SHARE})
install(CODE "
  file(MAKE_DIRECTORY \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/bin\")
  file(CREATE_LINK ../${OMPSIM_INSTALL_SHARE}/scripts/ompsim
       \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/bin/ompsim\" SYMBOLIC)")
