/* app_cuda.c - links against the CUDA target's library (built, not run). */
#include <stddef.h>

#include "netcu.h"

int main(void) {
  netcu_ctx *ctx = 0;
  if (netcu_init(&ctx) != 0)
    return 1;
  netcu_free(ctx);
  return 0;
}
