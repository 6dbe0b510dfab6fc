# Install rules and the package config that find_package(factum CONFIG) reads, both from an
# install prefix and straight from this build tree (-Dfactum_DIR=<build dir>, nothing installed).
include(CMakePackageConfigHelpers)

set(factum_installed_targets factum_eventstore factum_snapshots factum_aggregates factum_projections factum)
set(factum_installed_includes ${PROJECT_SOURCE_DIR}/eventstore/include/ ${PROJECT_SOURCE_DIR}/snapshots/include/
                              ${PROJECT_SOURCE_DIR}/aggregates/include/ ${PROJECT_SOURCE_DIR}/projections/include/
                              ${PROJECT_SOURCE_DIR}/include/)
# The Kafka bridge, when it was built: its package config then finds librdkafka first
# (FACTUM_HAVE_KAFKA in factum-config.cmake.in).
if(FACTUM_HAVE_KAFKA)
  list(APPEND factum_installed_targets factum_kafka)
  list(APPEND factum_installed_includes ${PROJECT_SOURCE_DIR}/kafka/include/)
endif()
install(TARGETS ${factum_installed_targets} EXPORT factumTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${factum_installed_includes}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT factumTargets NAMESPACE factum::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/factum)
# The same targets for the build tree, as fmt does: they point at the libraries built here and
# the headers of the source tree. Beside them sit the config and version files below, so the
# build directory is a package directory of its own.
export(EXPORT factumTargets NAMESPACE factum:: FILE ${PROJECT_BINARY_DIR}/factumTargets.cmake)
# One config file serves both: it finds factumTargets.cmake beside itself.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/factum-config.cmake.in
                              ${PROJECT_BINARY_DIR}/factum-config.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/factum)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/factum-config-version.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/factum-config.cmake
              ${PROJECT_BINARY_DIR}/factum-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/factum)
