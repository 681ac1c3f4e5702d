// The precompiled header of the test suite (tests/CMakeLists.txt) is built with this file.
