# Compile (and run, as ctest tests) the C++ samples of a Markdown page, so documentation code
# cannot rot.
#
#   tessera_add_doc_samples(<markdown file> [PREFIX <name>] [REQUIRE_FIRST])
#
# Every ```cpp fenced block of the page that contains `int main` becomes its own executable,
# linked to tessera::tessera and built with our warning flags, and a ctest test (label "docs")
# that runs it and expects exit code 0. Blocks without `int main` are fragments and are skipped.
# A program that includes <tessera/net/enet.hpp> also links tessera::net_enet, and is skipped
# where that target is not built (ENet not installed).
#
# Names: the first ```cpp block of the page is `<PREFIX>`, the n-th (1-based) is `<PREFIX>_<n>`.
# PREFIX defaults to `doc_<file stem>` with non-identifier characters replaced by `_`
# (docs/getting-started.md -> doc_getting_started).
# REQUIRE_FIRST: the first ```cpp block must contain `int main` (used for the README quick start).
# TESSERA_DOC_SAMPLES_MATCH (a variable, optional): a regex; a program whose code does not match
# it is not built (the tsan preset builds only the samples that start threads).
#
# The sources are generated at configure time under <binary dir>/doc_samples/, with a #line
# directive so compiler errors point into the Markdown file; editing the page re-runs configure.
include_guard(GLOBAL)
include(WriteIfChanged)

function(tessera_add_doc_samples markdown)
    cmake_parse_arguments(PARSE_ARGV 1 arg "REQUIRE_FIRST" "PREFIX" "")
    get_filename_component(md "${markdown}" ABSOLUTE)
    if(NOT EXISTS "${md}")
        message(FATAL_ERROR "tessera_add_doc_samples: ${md} does not exist")
    endif()
    if(NOT arg_PREFIX)
        get_filename_component(stem "${md}" NAME_WE)
        string(MAKE_C_IDENTIFIER "doc_${stem}" arg_PREFIX)
    endif()
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${md}")

    # The content is handled only with string(FIND/SUBSTRING), never as a list, so `;` and
    # brackets in the code survive.
    file(READ "${md}" text)
    string(REPLACE "\r\n" "\n" text "${text}")
    set(text "\n${text}") # so a fence on the first line is found like the others
    set(out_dir "${CMAKE_CURRENT_BINARY_DIR}/doc_samples")
    set(open_fence "\n```cpp\n")
    string(LENGTH "${open_fence}" open_len)
    set(consumed_lines 0) # lines of the file before `text`
    set(index 0)
    while(TRUE)
        string(FIND "${text}" "${open_fence}" open_at)
        if(open_at EQUAL -1)
            break()
        endif()
        math(EXPR index "${index} + 1")
        math(EXPR body_at "${open_at} + ${open_len}")
        string(SUBSTRING "${text}" 0 ${body_at} head)
        string(SUBSTRING "${text}" ${body_at} -1 text)
        # Line number (1-based) of the block's first code line. `head` starts with the
        # newline we prepended (or the previous block's closing fence tail), so counting its
        # newlines gives the number of lines before the body.
        string(REGEX MATCHALL "\n" newlines "${head}")
        list(LENGTH newlines head_lines)
        math(EXPR first_line "${consumed_lines} + ${head_lines}")
        string(FIND "${text}" "\n```" close_at)
        if(close_at EQUAL -1)
            message(FATAL_ERROR "${md}: ```cpp block ${index} (line ${first_line}) is not closed")
        endif()
        math(EXPR body_len "${close_at} + 1")
        string(SUBSTRING "${text}" 0 ${body_len} body)
        string(SUBSTRING "${text}" ${close_at} -1 text)
        string(REGEX MATCHALL "\n" newlines "${body}")
        list(LENGTH newlines body_lines)
        math(EXPR consumed_lines "${first_line} + ${body_lines} - 1")

        string(FIND "${body}" "int main" main_at)
        if(main_at EQUAL -1)
            if(index EQUAL 1 AND arg_REQUIRE_FIRST)
                message(FATAL_ERROR "${md}: the first ```cpp block (line ${first_line}) must be a "
                                    "complete program with `int main`")
            endif()
            continue()
        endif()

        if(DEFINED TESSERA_DOC_SAMPLES_MATCH AND NOT body MATCHES "${TESSERA_DOC_SAMPLES_MATCH}")
            continue()
        endif()
        # A program of the ENet transport's page needs its library: without ENet, no sample.
        string(FIND "${body}" "<tessera/net/enet.hpp>" enet_at)
        if(NOT enet_at EQUAL -1 AND NOT TARGET tessera_net_enet)
            continue()
        endif()

        if(index EQUAL 1)
            set(name "${arg_PREFIX}")
        else()
            set(name "${arg_PREFIX}_${index}")
        endif()
        set(source "${out_dir}/${name}.cpp")
        tessera_write_if_changed("${source}"
            "// Generated from ${md} (```cpp block ${index}) by tessera_add_doc_samples.\n// Do not edit: edit the Markdown file.\n#line ${first_line} \"${md}\"\n${body}")
        add_executable(${name} "${source}")
        target_link_libraries(${name} PRIVATE tessera::tessera tessera_warnings)
        if(TARGET tessera_gpu)  # docs/gpu.md's samples
            target_link_libraries(${name} PRIVATE tessera::gpu)
        endif()
        if(NOT enet_at EQUAL -1)  # docs/networking-enet.md's samples
            target_link_libraries(${name} PRIVATE tessera::net_enet)
        endif()
        # Samples check themselves with assert(): keep it on in every build type.
        target_compile_options(${name} PRIVATE -UNDEBUG)
        set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${out_dir}")
        add_test(NAME ${name} COMMAND ${name})
        set_tests_properties(${name} PROPERTIES LABELS "docs")
    endwhile()
endfunction()
