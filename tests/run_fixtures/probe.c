/* A tiny bare-metal program that speaks armgen's firmware protocol (`ARMGEN ...` lines over
 * Arm semihosting, exit status through SYS_EXIT_EXTENDED). Used by tests/firmware/test_run.py to check
 * armgen.run's QEMU wrapper and parser without an ExecuTorch build. One behaviour per PROBE_MODE:
 *   1 ok:        pools, stack, outputs, ticks around a busy loop of PROBE_LOOP iterations, done
 *   2 fault:     reads an unmapped address -> HardFault handler prints `ARMGEN error HardFault ...`
 *   3 hang:      spins forever (timeout)
 *   4 et_error:  `ARMGEN error MemoryAllocationFailed load_method`, exit status 1
 *   5 lockup:    executes `udf` with no usable HardFault handler (vector 0) -> CPU lockup
 *   6 input:     reads input.bin with templates/common/run/armgen_input_file.c (embedded input
 *                when absent) and echoes it as output 0 (an identity "model"), with pool, stack
 *                and ticks lines (-DPROBE_IGNORE_INPUT: a firmware without input.bin support)
 */
#include <stdint.h>

#include "armgen_input_file.h" /* templates/common/run */
#include "armgen_semihost.h"   /* templates/common/run: the one semihosting call */

#ifndef PROBE_MODE
#define PROBE_MODE 1
#endif
#ifndef PROBE_INPUT_LEN
#define PROBE_INPUT_LEN 4
#endif
#ifndef PROBE_LOOP
#define PROBE_LOOP 1000000
#endif

extern uint32_t __StackTop, __StackLimit, __data_start, __data_end, __data_load, __bss_start, __bss_end;
void Reset_Handler(void);
void HardFault_Handler(void);
void Default_Handler(void);

__attribute__((section(".vectors"), used)) const void *const vectors[16] = {
    &__StackTop, Reset_Handler, Default_Handler,
#if PROBE_MODE == 5
    0,
#else
    HardFault_Handler,
#endif
    Default_Handler, Default_Handler, Default_Handler, 0, 0, 0, 0,
    Default_Handler, Default_Handler, 0, Default_Handler, Default_Handler,
};

static void put(const char *s) { armgen_semihost(ARMGEN_SYS_WRITE0, s); }

static void put_uint(uint32_t v) {
    char buf[12];
    int i = 11;
    buf[i] = 0;
    do { buf[--i] = (char)('0' + v % 10); v /= 10; } while (v);
    put(&buf[i]);
}

static void put_int(int32_t v) {
    if (v < 0) { put("-"); put_uint((uint32_t)(-v)); } else { put_uint((uint32_t)v); }
}

static void put_hex(uint32_t v) {
    char buf[11] = "0x";
    for (int i = 0; i < 8; ++i) buf[2 + i] = "0123456789abcdef"[(v >> (28 - 4 * i)) & 0xf];
    buf[10] = 0;
    put(buf);
}

static void sh_exit(int status) {
    uint32_t block[2] = {ARMGEN_ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
    armgen_semihost(ARMGEN_SYS_EXIT_EXTENDED, block);
    for (;;) {}
}

static void pool(const char *name, uint32_t reserved, uint32_t used) {
    put("ARMGEN pool "); put(name); put(" reserved="); put_uint(reserved); put(" used="); put_uint(used); put("\n");
}

static void output(int index, const int8_t *v, int n) {
    put("ARMGEN output "); put_uint((uint32_t)index); put(" ");
    for (int i = 0; i < n; ++i) { if (i) put(","); put_int(v[i]); }
    put("\n");
}

#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)

static uint32_t busy_loop_ticks(uint32_t n) {
    SYST_RVR = 0x00FFFFFFu;
    SYST_CVR = 0;
    SYST_CSR = 5; /* enable, processor clock, no interrupt */
    uint32_t start = SYST_CVR;
    __asm__ volatile("1: subs %0, %0, #1\n bne 1b\n" : "+r"(n) : : "cc");
    uint32_t end = SYST_CVR;
    return (start - end) & 0x00FFFFFFu;
}

static int8_t out0[4] = {-3, 0, 17, 127};
static int8_t out1[2] = {-128, 5};

static int main_probe(void) {
#if PROBE_MODE == 1
    uint32_t ticks = busy_loop_ticks(PROBE_LOOP);
    pool("planned_1", 20464, 20464);
    pool("method", 12288, 11552);
    put("ARMGEN stack reserved=8192 used=1904\n");
    output(0, out0, 4);
    output(1, out1, 2);
    put("ARMGEN ticks "); put_uint(ticks); put("\n");
    put("ARMGEN done\n");
    return 0;
#elif PROBE_MODE == 2
    put("ARMGEN pool method reserved=64 used=0\n");
    return (int)*(volatile uint32_t *)0xF0000000u;
#elif PROBE_MODE == 3
    for (;;) { __asm__ volatile("nop"); }
#elif PROBE_MODE == 4
    put("ARMGEN pool method reserved=64 used=64\n");
    put("ARMGEN error MemoryAllocationFailed load_method\n");
    return 1;
#elif PROBE_MODE == 5
    __asm__ volatile("udf #0");
    return 0;
#elif PROBE_MODE == 6
    static int8_t buf[PROBE_INPUT_LEN] = {9, 8, 7, 6};  /* the "embedded sample input" */
#ifdef PROBE_IGNORE_INPUT
    enum armgen_input_file_status st = ARMGEN_INPUT_FILE_ABSENT;
#else
    enum armgen_input_file_status st = armgen_input_file_read(buf, sizeof buf);
#endif
    if (st == ARMGEN_INPUT_FILE_BAD_SIZE || st == ARMGEN_INPUT_FILE_IO_ERROR) {
        put("ARMGEN error InvalidArgument read_input\n");
        return 1;
    }
    put(st == ARMGEN_INPUT_FILE_READ ? "ARMGEN input file\n" : "ARMGEN input embedded\n");
    int len = sizeof buf, left = 0;
    uint32_t ticks = busy_loop_ticks(1000);
    pool("planned_1", 16, 16);
    pool("method", 256, 200);
    put("ARMGEN stack reserved=4096 used=96\n");
    output(0, buf, len - left);
    put("ARMGEN ticks "); put_uint(ticks); put("\n");
    put("ARMGEN done\n");
    return 0;
#endif
}

__attribute__((used)) static void hard_fault_report(const uint32_t *frame) {
    uint32_t cfsr = *(volatile uint32_t *)0xE000ED28u;
    uint32_t hfsr = *(volatile uint32_t *)0xE000ED2Cu;
    put("ARMGEN error HardFault pc="); put_hex(frame[6]);
    put(" cfsr="); put_hex(cfsr); put(" hfsr="); put_hex(hfsr); put("\n");
    sh_exit(3);
}

/* The exception frame is on the main stack: hand its address over before the C code pushes. */
__attribute__((naked)) void HardFault_Handler(void) {
    __asm__ volatile("mrs r0, msp\n b hard_fault_report\n");
}

void Default_Handler(void) {
    put("ARMGEN error UnexpectedException\n");
    sh_exit(3);
}

void Reset_Handler(void) {
    uint32_t *src = &__data_load, *dst = &__data_start;
    while (dst < &__data_end) *dst++ = *src++;
    for (dst = &__bss_start; dst < &__bss_end; ++dst) *dst = 0;
    sh_exit(main_probe());
}
