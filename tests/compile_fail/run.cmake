# Compiles one file that must fail, and checks that the compiler output carries the expected
# diagnostic (the "// expect: <text>" line of the file), so the test fails if the file compiles
# or fails for another reason.
file(STRINGS "${SOURCE}" expect_line REGEX "^// expect: ")
string(REGEX REPLACE "^// expect: " "" expected "${expect_line}")
execute_process(
    COMMAND "${CXX}" -std=c++20 -fsyntax-only "-I${INCLUDE_DIR}" "${SOURCE}"
    RESULT_VARIABLE result
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
if(result EQUAL 0)
    message(FATAL_ERROR "${SOURCE} compiled, but it must not")
endif()
string(FIND "${err}${out}" "${expected}" found)
if(found EQUAL -1)
    message(FATAL_ERROR "${SOURCE} failed without the expected diagnostic '${expected}':\n${err}")
endif()
message(STATUS "failed to compile as expected: ${expected}")
