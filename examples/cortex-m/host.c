/* host.c - board.h on an ordinary operating system, so that main.c, the model
 * and its embedded inputs can also run natively and print the reference
 * output the firmware's is compared with. */
#include <stdio.h>
#include <stdlib.h>

#include "board.h"

void board_puts(const char *s) { fputs(s, stdout); }

_Noreturn void board_exit(int status) {
  fflush(stdout);
  exit(status);
}

unsigned long board_stack_used(void) { return 0; }

unsigned long board_stack_size(void) { return 0; }
