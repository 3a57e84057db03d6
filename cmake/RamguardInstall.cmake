# Install rules and the CMake package for C++ coordinators:
#   find_package(ramguard REQUIRED)  ->  target_link_libraries(app PRIVATE ramguard::client)
# Component "client": libramguard (libramguard.a), the base it shares with the daemon
# (libramguard_base.a: units, socket path, protocol constants, verdict ranking; headers under
# include/ramguard/base/), the generated protocol library and header, the public headers
# and the ramguard CLI. Install it alone with
#   cmake --install BUILD --component client --prefix PREFIX
include(CMakePackageConfigHelpers)

if(TARGET ramguard_client AND TARGET ramguard_proto AND TARGET ramguard_base)
  set(RAMGUARD_CMAKE_INSTALL_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ramguard)
  set_target_properties(ramguard_proto PROPERTIES EXPORT_NAME proto)
  set_target_properties(ramguard_base PROPERTIES EXPORT_NAME base)

  install(TARGETS ramguard_client ramguard_base ramguard_proto EXPORT ramguardTargets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT client)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/client/cpp/include/ramguard
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT client)
  get_property(base_headers GLOBAL PROPERTY RAMGUARD_BASE_HEADERS)
  install(FILES ${base_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ramguard/base
          COMPONENT client)
  # The generated header (and its schema, for other languages) next to the client headers.
  install(FILES ${PROJECT_BINARY_DIR}/proto/ramguard.pb.h ${PROJECT_SOURCE_DIR}/proto/ramguard.proto
          DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ramguard/proto COMPONENT client)
  install(EXPORT ramguardTargets NAMESPACE ramguard:: DESTINATION ${RAMGUARD_CMAKE_INSTALL_DIR}
          COMPONENT client)

  # The generated code needs the same protobuf the library was built with.
  file(WRITE ${PROJECT_BINARY_DIR}/ramguardConfig.cmake.in [[
@PACKAGE_INIT@
include(CMakeFindDependencyMacro)
find_dependency(Protobuf)
include("${CMAKE_CURRENT_LIST_DIR}/ramguardTargets.cmake")
check_required_components(ramguard)
]])
  configure_package_config_file(${PROJECT_BINARY_DIR}/ramguardConfig.cmake.in
                                ${PROJECT_BINARY_DIR}/ramguardConfig.cmake
                                INSTALL_DESTINATION ${RAMGUARD_CMAKE_INSTALL_DIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/ramguardConfigVersion.cmake
                                   VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/ramguardConfig.cmake
                ${PROJECT_BINARY_DIR}/ramguardConfigVersion.cmake
          DESTINATION ${RAMGUARD_CMAKE_INSTALL_DIR} COMPONENT client)
endif()

if(TARGET ramguard)
  install(TARGETS ramguard RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT client)
endif()

# Component "daemon": ramguardd (daemon/CMakeLists.txt) and its configuration, the example that
# equals the embedded defaults, as /etc/ramguard/ramguard.yaml (with the /usr prefix,
# GNUInstallDirs makes the configuration directory /etc).
install(FILES ${PROJECT_SOURCE_DIR}/deploy/ramguard.example.yaml
        DESTINATION ${CMAKE_INSTALL_FULL_SYSCONFDIR}/ramguard RENAME ramguard.yaml COMPONENT daemon)
