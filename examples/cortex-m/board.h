/* board.h - the little main.c needs from the platform it runs on.
 *
 * Two implementations: startup.c + semihost.c for the Cortex-M4 under QEMU
 * (output and exit through Arm semihosting), host.c for the same program built
 * natively (stdio), whose output the test compares with the firmware's.
 */
#ifndef BOARD_H
#define BOARD_H

/* Writes a NUL-terminated string to the console. */
void board_puts(const char *s);

/* Ends the program with `status` (QEMU exits with it). */
_Noreturn void board_exit(int status);

/* Deepest stack use so far in bytes (the stack is painted at reset), and the
 * size of the stack; both 0 where unknown (host). */
unsigned long board_stack_used(void);
unsigned long board_stack_size(void);

#endif
