/*
 * Bare-metal platform for the TFLM benchmark runner on QEMU mps3-an547 / mps2-an386:
 * vector table, reset handler, SysTick-based tick counter, semihosting console and exit,
 * stack painting for the high-water mark. No OS, no heap, no printf.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "armgen_semihost.h"
#include "platform.h"

extern uint32_t __data_start__, __data_end__, __data_load__, __bss_start__, __bss_end__;
extern uint32_t __StackLimit, __StackTop;
extern void __libc_init_array(void);
extern int main(void);

void Reset_Handler(void);
static void Fault_Handler(void);
void SysTick_Handler(void);

/* newlib's __libc_init_array calls _init/_fini; -nostartfiles drops crti/crtn. */
void _init(void) {}
void _fini(void) {}
void* __dso_handle = 0;

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(&__StackTop), Reset_Handler, Fault_Handler, Fault_Handler, Fault_Handler,
    Fault_Handler, Fault_Handler, 0, 0, 0, 0, Fault_Handler, Fault_Handler, 0, Fault_Handler,
    SysTick_Handler,
};

/* --- semihosting: armgen's one call (templates/common/run/armgen_semihost.h) --- */
void bench_write(const char* s) { armgen_semihost(ARMGEN_SYS_WRITE0, s); }

/* SYS_EXIT_EXTENDED, as armgen's firmware exits: the emulator exits with `status` (AArch32's SYS_EXIT
 * takes no status). */
void bench_exit(int status) {
  uint32_t block[2] = {ARMGEN_ADP_STOPPED_APPLICATION_EXIT, (uint32_t)status};
  armgen_semihost(ARMGEN_SYS_EXIT_EXTENDED, block);
  for (;;) {
  }
}

void bench_write_uint(unsigned long long v) {
  char buf[24];
  int n = 23;
  buf[n] = 0;
  do {
    buf[--n] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  bench_write(&buf[n]);
}

void bench_write_int(long v) {
  if (v < 0) {
    bench_write("-");
    bench_write_uint((unsigned long long)(-(long long)v));
  } else {
    bench_write_uint((unsigned long long)v);
  }
}

/* --- SysTick: 24-bit down-counter on the processor clock; wraps counted in the handler --- */
#define SYST_CSR (*(volatile uint32_t*)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t*)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t*)0xE000E018u)
#define SCB_CPACR (*(volatile uint32_t*)0xE000ED88u)
#define SYST_RELOAD 0x00FFFFFFu

static volatile uint32_t systick_wraps;

void SysTick_Handler(void) { systick_wraps++; }

void bench_ticks_start(void) {
  SYST_CSR = 0;
  SYST_RVR = SYST_RELOAD;
  SYST_CVR = 0;
  systick_wraps = 0;
  SYST_CSR = 7; /* CLKSOURCE=processor, TICKINT, ENABLE */
  while (SYST_CVR == 0) {
    /* the first tick after enabling loads RELOAD into the cleared counter (not a wrap) */
  }
}

uint64_t bench_ticks_now(void) {
  uint32_t w1, v, w2;
  do {
    w1 = systick_wraps;
    v = SYST_CVR;
    w2 = systick_wraps;
  } while (w1 != w2);
  return (uint64_t)w1 * (SYST_RELOAD + 1u) + (SYST_RELOAD - v);
}

/* --- stack high-water --- */
#define STACK_PAINT 0xA5A5A5A5u

static void paint_stack(void) {
  uint32_t* p = &__StackLimit;
  uint32_t* sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  while (p < sp - 16) {
    *p++ = STACK_PAINT;
  }
}

size_t bench_stack_reserved(void) { return (size_t)((char*)&__StackTop - (char*)&__StackLimit); }

size_t bench_stack_used(void) {
  const uint32_t* p = &__StackLimit;
  while (p < &__StackTop && *p == STACK_PAINT) {
    p++;
  }
  return (size_t)((const char*)&__StackTop - (const char*)p);
}

static void Fault_Handler(void) {
  bench_write("ARMGEN error Fault hardfault\n");
  bench_exit(3);
}

void Reset_Handler(void) {
  SCB_CPACR |= (0xFu << 20); /* CP10/CP11: FPU (and MVE on the M55) */
  __asm__ volatile("dsb\n isb" ::: "memory");
  memcpy(&__data_start__, &__data_load__, (size_t)((char*)&__data_end__ - (char*)&__data_start__));
  memset(&__bss_start__, 0, (size_t)((char*)&__bss_end__ - (char*)&__bss_start__));
  paint_stack();
  __libc_init_array();
  bench_exit(main());
}
