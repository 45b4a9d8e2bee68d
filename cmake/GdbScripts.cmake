# Embeds a gdb Python script in a program's .debug_gdb_scripts section, so gdb loads it from the
# program itself (https://sourceware.org/gdb/current/onlinedocs/gdb.html/dotdebug_005fgdb_005fscripts-section.html).
#
#   tessera_embed_gdb_script(<script.py> <output.inc> <name>)
#
# writes <output.inc>: top-level asm statements that append the script, inline (entry type
# 4, "python text"), named <name>, to the section. A source file that is always linked includes
# it (tessera: src/world.cpp, which defines World's constructors), so every program using a
# World carries the script, whether it links the static library or a shared object made from it.
# The script's bytes are written as .byte lines: no escaping, and ccache sees them in the
# preprocessed source. Regenerated (and the includer rebuilt) when the script changes.
include_guard(GLOBAL)
include(WriteIfChanged)

function(tessera_embed_gdb_script script output name)
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${script}")
    file(READ "${script}" hex HEX)
    # 24 bytes per line, each line one C string: "    .byte 0x..,0x..\n"
    string(LENGTH "${hex}" digits)
    # A new asm statement every 256 lines keeps each string literal far under the 65,536
    # characters C++ compilers must support (clang's -Woverlength-strings); top-level asm
    # statements are emitted in order, so the section's bytes stay contiguous.
    set(open_section "asm(\".pushsection \\\".debug_gdb_scripts\\\", \\\"MS\\\", %progbits, 1\\n\"\n")
    set(lines "")
    set(at 0)
    set(count 0)
    while(at LESS digits)
        math(EXPR count "${count} + 1")
        if(count GREATER 256)
            string(APPEND lines "    \".popsection\\n\");\n${open_section}")
            set(count 1)
        endif()
        string(SUBSTRING "${hex}" ${at} 48 chunk)
        string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," chunk "${chunk}")
        string(REGEX REPLACE ",$" "" chunk "${chunk}")
        string(APPEND lines "    \".byte ${chunk}\\n\"\n")
        math(EXPR at "${at} + 48")
    endwhile()
    file(RELATIVE_PATH shown "${PROJECT_SOURCE_DIR}" "${script}")
    string(CONCAT content
        "// Generated from ${shown} by cmake/GdbScripts.cmake: do not edit.\n"
        "// gdb's inline Python script entry: type 4, a name line, the text, a NUL.\n"
        "${open_section}"
        "    \".byte 4\\n\"\n"
        "    \".ascii \\\"${name}\\\\n\\\"\\n\"\n"
        "${lines}"
        "    \".byte 0\\n\"\n"
        "    \".popsection\\n\");\n")
    tessera_write_if_changed("${output}" "${content}")
endfunction()
