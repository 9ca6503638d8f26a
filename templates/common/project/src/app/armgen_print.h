/*
 * A tiny printf that never allocates: formats into a small stack buffer and hands complete chunks
 * to the platform console (armgen_console_write). Supports %s %c %d %i %u %x %ld %lu %lx %lld %llu
 * %llx %p %%, with an optional field width and '0' flag. No floating point.
 */
#ifndef ARMGEN_PRINT_H
#define ARMGEN_PRINT_H

#ifdef __cplusplus
extern "C" {
#endif

void armgen_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

#ifdef __cplusplus
}
#endif

#endif /* ARMGEN_PRINT_H */
