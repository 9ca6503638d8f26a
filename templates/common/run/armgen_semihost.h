/*
 * Arm semihosting: the one call every semihosting user of the firmware makes (the console, the
 * exit, armgen run's input file). Source: Arm, "Semihosting for AArch32 and AArch64", version 3.0:
 * on M-profile the trap is `BKPT 0xAB`, the operation number in r0, a pointer to its parameter
 * block in r1, the result back in r0; the operation numbers are those of its section 6.
 * A CPU with no debugger or emulator (QEMU: -semihosting-config enable=on) attached stops at the
 * trap: only projects whose console or exit is semihosting get this header.
 */
#ifndef ARMGEN_SEMIHOST_H
#define ARMGEN_SEMIHOST_H

#include <stdint.h>

#define ARMGEN_SYS_OPEN 0x01u          /* open a host file: {name, mode, name length} */
#define ARMGEN_SYS_CLOSE 0x02u         /* close it: {handle} */
#define ARMGEN_SYS_WRITE0 0x04u        /* write a NUL-terminated string to the debug console */
#define ARMGEN_SYS_READ 0x06u          /* read: {handle, buffer, length}; returns the bytes NOT read */
#define ARMGEN_SYS_FLEN 0x0Cu          /* a file's length: {handle} */
#define ARMGEN_SYS_EXIT_EXTENDED 0x20u /* stop: {reason, status}; the emulator exits with the status */
#define ARMGEN_ADP_STOPPED_APPLICATION_EXIT 0x20026u /* the reason of a normal stop (section 6.5) */

/* One semihosting call: operation `op` with parameter block (or string) `arg`; its result. */
static inline int32_t armgen_semihost(uint32_t op, const void* arg) {
  register uint32_t r0 __asm__("r0") = op;
  register const void* r1 __asm__("r1") = arg;
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return (int32_t)r0;
}

#endif /* ARMGEN_SEMIHOST_H */
