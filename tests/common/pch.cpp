// The translation unit that builds the test executables' precompiled header (tests/CMakeLists.txt,
// tessera_test_pch); it has no code of its own.
