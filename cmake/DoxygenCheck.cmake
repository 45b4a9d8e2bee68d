# The `doxygen_api` test: runs doxygen with docs/Doxyfile on the public headers alone
# (include/tessera/*.hpp) and fails on any warning, so every public declaration keeps its doc
# comment. The guide pages (README.md, docs/*.md) are left to `make docs`.
#
#   cmake -DDOXYGEN=/usr/bin/doxygen -DSOURCE_DIR=<repository> -DWORK_DIR=<scratch directory>
#         -P cmake/DoxygenCheck.cmake
#
# Output (HTML, the warning log) goes to WORK_DIR, which is emptied first.
foreach(var IN ITEMS DOXYGEN SOURCE_DIR WORK_DIR)
    if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
        message(FATAL_ERROR "DoxygenCheck.cmake: pass -D${var}=...")
    endif()
endforeach()

file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(log "${WORK_DIR}/warnings.log")
# docs/Doxyfile's relative paths are relative to the repository root, where doxygen runs.
file(WRITE "${WORK_DIR}/Doxyfile"
    "@INCLUDE = \"${SOURCE_DIR}/docs/Doxyfile\"\n"
    "INPUT = include/tessera include/tessera/net\n"
    "USE_MDFILE_AS_MAINPAGE =\n"
    "OUTPUT_DIRECTORY = \"${WORK_DIR}\"\n"
    "WARN_IF_UNDOCUMENTED = YES\n"
    "WARN_AS_ERROR = NO\n"
    "WARN_LOGFILE = \"${log}\"\n")

execute_process(
    COMMAND "${DOXYGEN}" "${WORK_DIR}/Doxyfile"
    WORKING_DIRECTORY "${SOURCE_DIR}"
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "doxygen failed (exit ${rc}):\n${out}${err}")
endif()

file(READ "${log}" warnings)
string(STRIP "${warnings}" warnings)
if(NOT warnings STREQUAL "")
    string(REGEX MATCHALL "warning:" hits "${warnings}")
    list(LENGTH hits n)
    message(NOTICE "${warnings}")
    message(FATAL_ERROR
        "doxygen: ${n} warning(s) in the public headers (above): give each public declaration "
        "a doc comment (///) or fix the comment")
endif()
message(STATUS "doxygen: the public headers are documented (no warnings)")
