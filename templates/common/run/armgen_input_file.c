/* Read `input.bin` through Arm semihosting (SYS_OPEN, SYS_FLEN, SYS_READ, SYS_CLOSE); see
 * armgen_input_file.h. Plain semihosting calls (armgen_semihost.h), so it works with or without
 * newlib's rdimon. */
#include "armgen_input_file.h"

#include <stdint.h>

#include "armgen_semihost.h"

enum armgen_input_file_status armgen_input_file_read(void *dst, size_t len) {
    static const char name[] = ARMGEN_INPUT_FILE_NAME;
    uintptr_t open_args[3] = {(uintptr_t)name, 1 /* mode "rb" */, sizeof name - 1};
    int fd = armgen_semihost(ARMGEN_SYS_OPEN, open_args);
    if (fd < 0) {
        return ARMGEN_INPUT_FILE_ABSENT;
    }
    uintptr_t fd_args[1] = {(uintptr_t)fd};
    enum armgen_input_file_status status = ARMGEN_INPUT_FILE_READ;
    int flen = armgen_semihost(ARMGEN_SYS_FLEN, fd_args);
    if (flen < 0) {
        status = ARMGEN_INPUT_FILE_IO_ERROR;
    } else if ((size_t)flen != len) {
        status = ARMGEN_INPUT_FILE_BAD_SIZE;
    } else {
        uintptr_t read_args[3] = {(uintptr_t)fd, (uintptr_t)dst, (uintptr_t)len};
        /* SYS_READ returns the number of bytes NOT read. */
        if (armgen_semihost(ARMGEN_SYS_READ, read_args) != 0) {
            status = ARMGEN_INPUT_FILE_IO_ERROR;
        }
    }
    armgen_semihost(ARMGEN_SYS_CLOSE, fd_args);
    return status;
}

int armgen_input_stream_open(size_t *len) {
    static const char name[] = ARMGEN_INPUT_FILE_NAME;
    uintptr_t open_args[3] = {(uintptr_t)name, 1 /* mode "rb" */, sizeof name - 1};
    int fd = armgen_semihost(ARMGEN_SYS_OPEN, open_args);
    if (fd < 0) {
        return -1;
    }
    uintptr_t fd_args[1] = {(uintptr_t)fd};
    int flen = armgen_semihost(ARMGEN_SYS_FLEN, fd_args);
    *len = flen < 0 ? 0 : (size_t)flen;
    return fd;
}

size_t armgen_input_stream_read(int fd, void *dst, size_t len) {
    uintptr_t read_args[3] = {(uintptr_t)fd, (uintptr_t)dst, (uintptr_t)len};
    /* SYS_READ returns the number of bytes NOT read. */
    int left = armgen_semihost(ARMGEN_SYS_READ, read_args);
    return left < 0 || (size_t)left > len ? 0 : len - (size_t)left;
}

void armgen_input_stream_close(int fd) {
    uintptr_t fd_args[1] = {(uintptr_t)fd};
    armgen_semihost(ARMGEN_SYS_CLOSE, fd_args);
}
