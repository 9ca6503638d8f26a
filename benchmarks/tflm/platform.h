/* Platform services of the TFLM benchmark runner (platform.c). */
#ifndef ARMGEN_BENCH_TFLM_PLATFORM_H
#define ARMGEN_BENCH_TFLM_PLATFORM_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
void bench_write(const char* s);
void bench_write_uint(unsigned long long v);
void bench_write_int(long v);
void bench_exit(int status) __attribute__((noreturn));
void bench_ticks_start(void);
uint64_t bench_ticks_now(void);
size_t bench_stack_reserved(void);
size_t bench_stack_used(void);
#ifdef __cplusplus
}
#endif
#endif
