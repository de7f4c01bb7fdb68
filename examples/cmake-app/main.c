/* main.c - classifies digits with a model that onnxc_add_model() compiled.
 *
 * Usage: digits_app test_digits.bin [COUNT]
 * test_digits.bin holds 8x8 float32 images (models/digits/README.md). For
 * each of the first COUNT images (default 8) it prints the predicted digit and
 * the ten class probabilities, one image per line:
 *   image 0: digit 6 probs 0.000012 ... 0.000103
 */
#include <stdio.h>
#include <stdlib.h>

#include "net.h"

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s test_digits.bin [COUNT]\n", argv[0]);
    return 2;
  }
  long count = argc == 3 ? strtol(argv[2], NULL, 10) : 8;
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  /* NET_ARENA_BYTES is a compile-time constant: the arena can be static. */
  static unsigned char arena[NET_ARENA_BYTES + 64];
  void *aligned = (void *)(((size_t)arena + 63) & ~(size_t)63);
  float image[NET_INPUT0_NUMEL], probs[NET_OUTPUT0_NUMEL];
  printf("net: %d inputs, %d outputs, arena %d bytes\n", NET_NUM_INPUTS, NET_NUM_OUTPUTS, NET_ARENA_BYTES);
  for (long i = 0; i < count && fread(image, sizeof image, 1, f) == 1; i++) {
    int rc = net_run(aligned, image, probs);
    if (rc != 0) {
      fprintf(stderr, "net_run failed with status %d\n", rc);
      return 1;
    }
    int best = 0;
    for (int k = 1; k < NET_OUTPUT0_NUMEL; k++)
      if (probs[k] > probs[best])
        best = k;
    printf("image %ld: digit %d probs", i, best);
    for (int k = 0; k < NET_OUTPUT0_NUMEL; k++)
      printf(" %.6f", probs[k]);
    printf("\n");
  }
  fclose(f);
  return 0;
}
