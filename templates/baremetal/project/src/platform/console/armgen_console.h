/*
 * The bare-metal console driver: one file in this folder, the one for the board's console (armgen
 * writes only that one). armgen_platform_init() (src/platform/platform.c) calls
 * armgen_console_init() after board_init(); armgen_console_write() is declared in armgen_platform.h.
 * For a UART armgen has no driver for, replace the file with one of your own that defines both.
 */
#ifndef ARMGEN_CONSOLE_H
#define ARMGEN_CONSOLE_H

#ifdef __cplusplus
extern "C" {
#endif

/* Set the console up (a UART's transmitter; nothing for semihosting). */
void armgen_console_init(void);

#ifdef __cplusplus
}
#endif

#endif /* ARMGEN_CONSOLE_H */
