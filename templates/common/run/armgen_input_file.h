/* Run input handed over by `armgen run` (generator/run.py), read through Arm semihosting.
 *
 * `armgen run` writes the file `input.bin` into QEMU's working directory: every method input, in
 * index order, in the tensor's dtype and dim order (channels_last inputs are stored NHWC),
 * little-endian, concatenated; its size is the sum of the inputs' nbytes. Without the file the
 * firmware runs its embedded sample input.
 *
 * Only for semihosting consoles (QEMU, FVP, a debugger attached): on a board without a debugger
 * the `bkpt 0xAB` of a semihosting call stops the CPU.
 */
#ifndef ARMGEN_INPUT_FILE_H
#define ARMGEN_INPUT_FILE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Result of armgen_input_file_read(). */
enum armgen_input_file_status {
    ARMGEN_INPUT_FILE_READ = 0,      /* dst holds the file's `len` bytes */
    ARMGEN_INPUT_FILE_ABSENT = 1,    /* no input.bin: keep the embedded input */
    ARMGEN_INPUT_FILE_BAD_SIZE = 2,  /* input.bin exists but is not `len` bytes: an error */
    ARMGEN_INPUT_FILE_IO_ERROR = 3,  /* the host could not read it: an error */
};

/* Name of the file, relative to the emulator's working directory. */
#define ARMGEN_INPUT_FILE_NAME "input.bin"

/* Read input.bin into dst (len bytes, the sum of the inputs' nbytes). */
enum armgen_input_file_status armgen_input_file_read(void *dst, size_t len);

/* A stream (armgen new --stream): input.bin read block by block, any length. Open it (its size in bytes
 * into *len); returns a handle, or -1 without the file. */
int armgen_input_stream_open(size_t *len);
/* Read up to len bytes into dst; returns the bytes read (0 at the end). */
size_t armgen_input_stream_read(int fd, void *dst, size_t len);
void armgen_input_stream_close(int fd);

#ifdef __cplusplus
}
#endif

#endif /* ARMGEN_INPUT_FILE_H */
