# cmake -DINPUT=page.html -DOUTPUT=inspector_page.cpp -P embed_page.cmake
# Writes tessera::detail::inspector_page() returning INPUT's bytes.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" hex_length)
math(EXPR size "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
string(REGEX REPLACE "(('\\\\x[0-9a-f][0-9a-f]',){16})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT} by embed_page.cmake: do not edit.
#include <string_view>

namespace tessera::detail {
namespace {
constexpr char page[] = {
${bytes}};
}  // namespace
std::string_view inspector_page() noexcept { return {page, ${size}}; }
}  // namespace tessera::detail
")
