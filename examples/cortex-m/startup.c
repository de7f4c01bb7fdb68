/* startup.c - reset and exception handling for a Cortex-M4F (ARMv7E-M), no C library.
 *
 * At reset the core loads SP from word 0 of the vector table and jumps to the
 * handler in word 1 (the table sits at address 0; mps2_an386.ld puts it there).
 * fw_reset turns the FPU on before anything else runs: code built with
 * -mfloat-abi=hard may touch FP registers in any function, and an FP
 * instruction while CP10/CP11 are off is a UsageFault. fw_start then copies
 * .data from its load image, zeroes .bss, paints the free stack so that
 * board_stack_used() can find the deepest write later, and calls main.
 * Every other exception and interrupt lands in fw_fault, which prints the
 * exception number, the fault status registers and the faulting PC and ends
 * the program with status 3, so a crash under QEMU never hangs a test.
 */
#include <stdint.h>

#include "board.h"

int main(void);
_Noreturn void fw_reset(void);
_Noreturn void fw_start(void);
void fw_fault(void);
_Noreturn void fw_fault_report(const uint32_t *frame);

/* Defined by mps2_an386.ld. */
extern uint32_t __data_start[], __data_end[], __data_load[];
extern uint32_t __bss_start[], __bss_end[];
extern uint32_t __stack_limit[], __stack_top[];

#define STACK_PAINT 0x57AC57ACu

/* System control block (ARMv7-M Architecture Reference Manual, B3.2). */
#define SCB_CFSR (*(volatile const uint32_t *)0xE000ED28u)  /* configurable fault status */
#define SCB_HFSR (*(volatile const uint32_t *)0xE000ED2Cu)  /* hard fault status */
#define SCB_BFAR (*(volatile const uint32_t *)0xE000ED38u)  /* bus fault address */

/* Word 0 is the initial stack pointer, the rest are handler addresses:
 * 16 system exceptions, then the 32 interrupts of the AN386 image. */
typedef union Vector {
  uint32_t *stack;
  void (*handler)(void);
} Vector;

__attribute__((section(".vectors"), used)) const Vector fw_vectors[16 + 32] = {
    [0] = {.stack = __stack_top},
    [1] = {.handler = fw_reset},
    [2] = {.handler = fw_fault},  /* NMI */
    [3] = {.handler = fw_fault},  /* HardFault */
    [4] = {.handler = fw_fault},  /* MemManage */
    [5] = {.handler = fw_fault},  /* BusFault */
    [6] = {.handler = fw_fault},  /* UsageFault */
    [11] = {.handler = fw_fault}, /* SVCall */
    [12] = {.handler = fw_fault}, /* DebugMonitor */
    [14] = {.handler = fw_fault}, /* PendSV */
    [15] = {.handler = fw_fault}, /* SysTick */
    [16 ... 47] = {.handler = fw_fault},
};

/* Naked: no compiler-generated code may run before the FPU is on. CPACR
 * (0xE000ED88) bits 20-23 give full access to CP10 and CP11, the FPU. */
__attribute__((naked)) _Noreturn void fw_reset(void) {
  __asm__ volatile("movw r0, #0xED88\n\t"
                   "movt r0, #0xE000\n\t"
                   "ldr  r1, [r0]\n\t"
                   "orr  r1, r1, #0x00F00000\n\t"
                   "str  r1, [r0]\n\t"
                   "dsb\n\t"
                   "isb\n\t"
                   "b    fw_start\n\t");
}

_Noreturn void fw_start(void) {
  const uint32_t *src = __data_load;
  for (uint32_t *dst = __data_start; dst < __data_end;)
    *dst++ = *src++;
  for (uint32_t *dst = __bss_start; dst < __bss_end;)
    *dst++ = 0;
  uint32_t *sp;
  __asm__ volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = __stack_limit; p < sp; p++)
    *p = STACK_PAINT;
  board_exit(main());
}

unsigned long board_stack_used(void) {
  const uint32_t *p = __stack_limit;
  while (p < __stack_top && *p == STACK_PAINT)
    p++;
  return (unsigned long)((const char *)__stack_top - (const char *)p);
}

unsigned long board_stack_size(void) {
  return (unsigned long)((const char *)__stack_top - (const char *)__stack_limit);
}

/* Bit 2 of EXC_RETURN in lr tells which stack the exception frame is on. */
__attribute__((naked)) void fw_fault(void) {
  __asm__ volatile("tst   lr, #4\n\t"
                   "ite   eq\n\t"
                   "mrseq r0, msp\n\t"
                   "mrsne r0, psp\n\t"
                   "b     fw_fault_report\n\t");
}

static char *hex32(char *out, uint32_t v) {
  for (int i = 7; i >= 0; i--, v >>= 4)
    out[i] = "0123456789abcdef"[v & 15];
  return out + 8;
}

static char *text(char *out, const char *s) {
  while (*s)
    *out++ = *s++;
  return out;
}

/* frame: r0-r3, r12, lr, pc, xpsr as stacked by the exception entry. */
_Noreturn void fw_fault_report(const uint32_t *frame) {
  uint32_t ipsr;
  __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
  char line[128], *p = line;
  p = text(p, "fault: exception ");
  p = hex32(p, ipsr & 0x1ff);
  p = text(p, " CFSR ");
  p = hex32(p, SCB_CFSR);
  p = text(p, " HFSR ");
  p = hex32(p, SCB_HFSR);
  p = text(p, " BFAR ");
  p = hex32(p, SCB_BFAR);
  p = text(p, " PC ");
  p = hex32(p, frame[6]);
  p = text(p, "\n");
  *p = 0;
  board_puts(line);
  board_exit(3);
}
