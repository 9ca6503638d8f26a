/*
 * The thin platform layer the example main and the model code use: console, timer, stack
 * statistics, heap lock and exit. Each flavour (bare metal, Zephyr) implements it in
 * src/platform/.
 */
#ifndef ARMGEN_PLATFORM_H
#define ARMGEN_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

#include "armgen_exit_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bring up the board (clocks, console, timer). Calls board_init() on real boards. */
void armgen_platform_init(void);

/* Write a NUL-terminated string to the console without allocating. */
void armgen_console_write(const char* s);

/* Free-running timer ticks and their rate (ticks per second). */
uint64_t armgen_ticks(void);
uint32_t armgen_ticks_hz(void);

/* Bytes reserved for the main stack and the most ever used (painted at reset). */
void armgen_stack_usage(size_t* reserved, size_t* used);

/* After this, any heap allocation stops the firmware with `ARMGEN error HeapUseAfterInit`. */
void armgen_platform_lock_heap(void);

/* Stop with a status (ARMGEN_EXIT_OK or another of armgen_exit_codes.h). Semihosting: the emulator
 * exits with it. */
void armgen_exit(int status) __attribute__((noreturn));

/* Bare metal: print " sp=0x... stack_limit=0x... stack_size=N stack_limit_reached=0|1" (no newline)
 * at the end of an error line, so that `armgen run` can tell a stack overflow from other faults. */
void armgen_print_stack_state(uintptr_t sp);

/* Board hook for real boards: clocks, pins, console UART. Weak default does nothing. */
void board_init(void);

#ifdef __cplusplus
}
#endif

#endif /* ARMGEN_PLATFORM_H */
