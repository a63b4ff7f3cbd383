# `cmake --install` places the library, public headers and a package config so that
# find_package(flashband) then target_link_libraries(app flashband::flashband) works.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)
install(TARGETS flashband EXPORT flashbandTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/flashband DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT flashbandTargets NAMESPACE flashband:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flashband)
configure_package_config_file(cmake/flashbandConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/flashbandConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flashband)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/flashbandConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/flashbandConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/flashbandConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/flashband)
