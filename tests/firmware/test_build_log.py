"""The one line a failed build puts in its error (armgen.firmware.build_log), read from logs of real builds
(the lines below are copied from arm-none-eabi-gcc 12.2 / ld logs of armgen projects)."""

from __future__ import annotations

from armgen.firmware.build_log import first_build_error

#: A team's src/app/dup.c that defines a second main (LTO: "symbol from plugin"); ld named no cause before.
DUPLICATE_MAIN = """\
[170/171] Linking CXX executable mlp.elf
FAILED: mlp.elf
: && /usr/bin/arm-none-eabi-g++ -mthumb -mcpu=cortex-m55 ... CMakeFiles/mlp.dir/src/main.cpp.obj CMakeFiles/mlp.dir/src/app/dup.c.obj -o mlp.elf
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld: CMakeFiles/mlp.dir/src/app/dup.c.obj (symbol from plugin): in function `main':
(.text+0x0): multiple definition of `main'; CMakeFiles/mlp.dir/src/main.cpp.obj (symbol from plugin):(.text+0x0): first defined here
collect2: error: ld returned 1 exit status
"""


def test_a_second_main_names_both_files(tmp_path):
    log = tmp_path / "armgen-build.log"
    log.write_text(DUPLICATE_MAIN)
    assert first_build_error(log) == "link failed: multiple definition of `main' (src/app/dup.c and src/main.cpp)"


def test_a_compile_error_names_its_file_and_line(tmp_path):
    log = tmp_path / "armgen-build.log"
    log.write_text("/p/src/main.cpp:12:3: error: 'this_is_not_cpp' was not declared in this scope\nFAILED: x\n")
    assert first_build_error(log) == "compile failed: /p/src/main.cpp:12: 'this_is_not_cpp' was not declared in this scope"


#: A Zephyr 4.1 image with CONFIG_LTO=y before ARMGEN_LTO_LIBC_SYMBOLS named fwrite (hal_ethos_u's fprintf of a
#: constant string), and one line of the same link naming a non-LTO object.
LTO_UNDEFINED = """\
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld.bfd: /tmp/ccAb3x.ltrans0.ltrans.o: in function `ethosu_release_power':
/ws/modules/hal/ethos_u/src/ethosu_driver.c:513: undefined reference to `fwrite'
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld.bfd: /tmp/ccAb3x.ltrans0.ltrans.o:/ws/zephyr/lib/heap/heap.c:527: undefined reference to `memset'
/usr/lib/gcc/arm-none-eabi/12.2.1/../../../arm-none-eabi/bin/ld.bfd: app/libapp.a(mine.c.obj): in function `mine':
/p/src/app/mine.c:3: undefined reference to `not_written_yet'
collect2: error: ld returned 1 exit status
"""


def test_undefined_references_of_lto_code_are_named_apart(tmp_path):
    """Only what link-time optimised code (an ltrans object) left undefined: the names `armgen build` puts in its
    hint (ARMGEN_LTO_LIBC_SYMBOLS); the team's own missing function is not one of them."""
    from armgen.firmware.build_log import lto_undefined_symbols

    log = tmp_path / "armgen-build.log"
    log.write_text(LTO_UNDEFINED)
    assert lto_undefined_symbols(log) == ["fwrite", "memset"]
    log.write_text("\n".join(LTO_UNDEFINED.splitlines()[3:]))  # the non-LTO object's lines only
    assert lto_undefined_symbols(log) == []
