# Installing lockcheck (`cmake --install build`, default prefix /usr/local) and its Debian package (`cpack` in build/,
# prefix /usr). The files go where the Filesystem Hierarchy Standard puts a program's own files:
#   PREFIX/bin/lockcheck
#   PREFIX/lib/lockcheck/        the clock and power shims (LD_PRELOAD into the nodes), clients/ (the lock-library
#                                adapters scripts/build-clients built into build/clients/), servers/ (the project's
#                                server builds, build/servers/: etcd 3.4.3)
#   PREFIX/share/lockcheck/matrix/   the shipped matrices (harness/matrix/*.json)
#   PREFIX/share/bash-completion/completions/lockcheck   made by `lockcheck completion bash` at build time
#   PREFIX/share/doc/lockcheck/  README.md, CHANGELOG.md, docs/ and copyright (the LICENSE)
# The binary finds them from its own location (harness/install_layout.h): PREFIX/bin/lockcheck beside
# PREFIX/lib/lockcheck/ is an installed lockcheck; anything else is a build tree. The folder is lib/lockcheck, not
# CMAKE_INSTALL_LIBDIR (lib/x86_64-linux-gnu on Debian): it holds the program's own files, found at a fixed place
# relative to bin/.
include(GNUInstallDirs)

set(LOCKCHECK_COMPLETION ${CMAKE_BINARY_DIR}/completion/lockcheck)
add_custom_command(OUTPUT ${LOCKCHECK_COMPLETION}
  COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:lockcheck> -DOUT=${LOCKCHECK_COMPLETION}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/write_completion.cmake
  DEPENDS lockcheck ${CMAKE_CURRENT_SOURCE_DIR}/cmake/write_completion.cmake
  COMMENT "Writing the bash completion (lockcheck completion bash)"
  VERBATIM)
add_custom_target(lockcheck_completion ALL DEPENDS ${LOCKCHECK_COMPLETION})

install(TARGETS lockcheck RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS lockcheck_clockshim lockcheck_powershim LIBRARY DESTINATION lib/lockcheck)
# What scripts/build-clients built (absent adapters are simply not installed: `lockcheck version` says which are).
install(DIRECTORY ${CMAKE_BINARY_DIR}/clients/ DESTINATION lib/lockcheck/clients USE_SOURCE_PERMISSIONS OPTIONAL)
install(DIRECTORY ${CMAKE_BINARY_DIR}/servers/ DESTINATION lib/lockcheck/servers USE_SOURCE_PERMISSIONS OPTIONAL
        PATTERN ".stamp" EXCLUDE)
install(DIRECTORY harness/matrix/ DESTINATION ${CMAKE_INSTALL_DATADIR}/lockcheck/matrix FILES_MATCHING PATTERN "*.json")
install(FILES ${LOCKCHECK_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
# The README beside its docs/ folder, as in a clone, so that its links and the pages' ../ links hold; the licence as
# Debian's copyright file.
install(FILES README.md CHANGELOG.md DESTINATION ${CMAKE_INSTALL_DOCDIR} OPTIONAL)
install(DIRECTORY docs DESTINATION ${CMAKE_INSTALL_DOCDIR} OPTIONAL)
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright OPTIONAL)

# The Debian package: lockcheck_<version>_amd64.deb. Depends: the shared libraries the binary links (found by
# dpkg-shlibdeps: libhiredis, libevent, Boost.Filesystem and Boost.ProgramOptions, libsimdjson, libstdc++, libc)
# and what a default run needs: redis-server (the nodes) and redis-sentinel (--topology replicated).
# Recommends (installed by default, light): etcd-server and etcd-client (--server etcd and the etcd adapter),
# python3 and python3-redis (the redis-py adapter, and the Python "your own lock" examples).
# Suggests (heavy, or for one backend or adapter only): ZooKeeper on a JVM (--server zookeeper) and its adapters'
# libraries (kazoo, Curator), PHP and its Redis lock libraries (the PHP adapters), docker.io (--cluster docker),
# openssh-client and iptables (--cluster ssh).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME lockcheck)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "lockcheck developers <lockcheck@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Jepsen-style correctness tests of distributed locks on Redis, etcd, ZooKeeper")
string(CONCAT CPACK_DEBIAN_PACKAGE_DESCRIPTION
       "lockcheck runs a lock algorithm or lock library against real Redis, etcd or ZooKeeper nodes while it injects\n"
       "faults (partitions, pauses, kills, clock jumps, power loss), records every operation and checks the history\n"
       "for mutual exclusion, lease and fencing violations. It writes an HTML report of each run.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# Stripped, as Debian ships binaries (the build tree keeps its debug information): the package is a third the size.
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "redis-server, redis-sentinel")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "etcd-server, etcd-client, python3, python3-redis")
string(CONCAT CPACK_DEBIAN_PACKAGE_SUGGESTS
       "zookeeper, default-jre-headless, python3-kazoo, libcurator-recipes-java, libslf4j-java, php-cli, php-redis, "
       "php-symfony-lock, php-illuminate-cache, php-illuminate-redis, docker.io, openssh-client, iptables")
include(CPack)
