/* semihost.c - console output and exit through Arm semihosting.
 *
 * A semihosting call on M-profile cores is `bkpt 0xAB` with the operation
 * number in r0 and its argument (a value or a pointer to a parameter block)
 * in r1; the result comes back in r0. QEMU serves the calls itself when run
 * with -semihosting-config enable=on,target=native. On a board without a
 * debugger attached the breakpoint faults instead: replace these functions
 * with a UART driver there.
 */
#include <stdint.h>

#include "board.h"

enum {
  SYS_WRITE0 = 0x04,                       /* r1: NUL-terminated string */
  SYS_EXIT = 0x18,                         /* r1: reason code (32-bit ABI) */
  SYS_EXIT_EXTENDED = 0x20,                /* r1: {reason, exit status} */
  ADP_STOPPED_APPLICATION_EXIT = 0x20026,  /* a normal exit */
  ADP_STOPPED_RUNTIME_ERROR = 0x20023,     /* "RunTimeErrorUnknown" */
};

static uintptr_t semihost(uintptr_t op, uintptr_t arg) {
  register uintptr_t r0 __asm__("r0") = op;
  register uintptr_t r1 __asm__("r1") = arg;
  /* "memory": the host reads the buffer r1 points at. */
  __asm__ volatile("bkpt 0xAB" : "+r"(r0) : "r"(r1) : "memory");
  return r0;
}

void board_puts(const char *s) { semihost(SYS_WRITE0, (uintptr_t)s); }

_Noreturn void board_exit(int status) {
  /* SYS_EXIT on 32-bit Arm only tells success from failure; the extended
   * call carries the exact status. A host without it gets the plain call. */
  uintptr_t block[2] = {ADP_STOPPED_APPLICATION_EXIT, (uintptr_t)(unsigned)status};
  semihost(SYS_EXIT_EXTENDED, (uintptr_t)block);
  semihost(SYS_EXIT, status == 0 ? ADP_STOPPED_APPLICATION_EXIT : ADP_STOPPED_RUNTIME_ERROR);
  for (;;)
    __asm__ volatile("wfi");
}
