/* app.c - links against the model of the contract_form case. */
#include <stddef.h>

#include "digits.h"

int main(void) {
  static unsigned char arena[DIGITS_ARENA_BYTES + 64];
  float in[DIGITS_INPUT0_NUMEL] = {0}, out[DIGITS_OUTPUT0_NUMEL];
  return digits_run((void *)(((size_t)arena + 63) & ~(size_t)63), in, out);
}
