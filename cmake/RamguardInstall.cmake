# Install rules and the CMake package for C++ coordinators: find_package(ramguard) gives
# ramguard::client. Filled in by client/cpp.
