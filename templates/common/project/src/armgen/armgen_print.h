/*
 * A tiny printf that never allocates: formats into a small stack buffer and hands complete chunks
 * to the platform console (armgen_console_write). Supports %s %c %d %i %u %x %X %p %%, the length
 * modifiers h l ll z t, an optional field width and the '0' flag. No floating point: %f and other
 * conversions are echoed as written.
 *
 * The bare-metal link routes the C library's snprintf and vsnprintf here (-Wl,--wrap=snprintf
 * -Wl,--wrap=vsnprintf): ExecuTorch's runtime formats only operator names ("%s%s%s",
 * runtime/executor/method.cpp) and log lines with them, and newlib-nano's formatter brings its
 * buffer-growing helpers into flash. Return value and truncation follow C99: the
 * length the full text would have, at most size-1 characters written, always NUL-terminated.
 */
#ifndef ARMGEN_PRINT_H
#define ARMGEN_PRINT_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

void armgen_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

/* C99 vsnprintf with the conversions above: returns the untruncated length. */
int armgen_vsnprintf(char* buf, size_t size, const char* fmt, va_list ap);

#ifdef __cplusplus
}
#endif

#endif /* ARMGEN_PRINT_H */
