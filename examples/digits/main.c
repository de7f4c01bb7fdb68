/* main.c - runs the onnxc-compiled digit classifier on held-back digits.
 *
 * Build (scripts/demo.sh does this):
 *   onnxc models/digits/digits.onnx --name digits -o libdigits.so
 *   onnxc models/digits/digits.onnx --name digits -S -o src   (for digits.h)
 *   cc -Isrc main.c libdigits.so -o digits_demo
 * Usage: digits_demo test_digits.bin test_labels.bin
 * test_digits.bin holds N images of 8x8 float32 pixels scaled to [0,1];
 * test_labels.bin holds N uint8 labels.
 */
#include <stdio.h>
#include <stdlib.h>

#include "digits.h"

static void *read_all(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    exit(1);
  }
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(*size > 0 ? (size_t)*size : 1);
  if (!p || fread(p, 1, (size_t)*size, f) != (size_t)*size) {
    fprintf(stderr, "%s: read error\n", path);
    exit(1);
  }
  fclose(f);
  return p;
}

/* A digit drawn in characters, darkest pixels densest. */
static void draw(const float *img) {
  static const char shades[] = " .:-=+*#%@";
  for (int y = 0; y < 8; y++) {
    printf("    ");
    for (int x = 0; x < 8; x++) {
      int k = (int)(img[y * 8 + x] * 9.0f + 0.5f);
      putchar(shades[k < 0 ? 0 : k > 9 ? 9 : k]);
      putchar(shades[k < 0 ? 0 : k > 9 ? 9 : k]);
    }
    putchar('\n');
  }
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s test_digits.bin test_labels.bin\n", argv[0]);
    return 2;
  }
  long img_bytes, lab_bytes;
  float *images = read_all(argv[1], &img_bytes);
  unsigned char *labels = read_all(argv[2], &lab_bytes);
  long n = lab_bytes;
  if (img_bytes != n * DIGITS_INPUT0_NUMEL * (long)sizeof(float)) {
    fprintf(stderr, "%s: expected %ld images of %d floats\n", argv[1], n, DIGITS_INPUT0_NUMEL);
    return 1;
  }
  /* The arena: every intermediate tensor of the model, sized at compile time. */
  static unsigned char arena[DIGITS_ARENA_BYTES + 64];
  void *aligned = (void *)(((size_t)arena + 63) & ~(size_t)63);
  printf("digit classifier compiled by onnxc: arena %d bytes, %ld test images\n",
         DIGITS_ARENA_BYTES, n);
  long correct = 0;
  for (long i = 0; i < n; i++) {
    float probs[DIGITS_OUTPUT0_NUMEL];
    int rc = digits_run(aligned, images + i * DIGITS_INPUT0_NUMEL, probs);
    if (rc != 0) {
      fprintf(stderr, "digits_run failed with status %d\n", rc);
      return 1;
    }
    int best = 0;
    for (int k = 1; k < DIGITS_OUTPUT0_NUMEL; k++)
      if (probs[k] > probs[best])
        best = k;
    correct += best == labels[i];
    if (i < 3) {
      printf("\n  image %ld: predicted %d (p=%.3f), label %d\n", i, best, probs[best], labels[i]);
      draw(images + i * DIGITS_INPUT0_NUMEL);
    }
  }
  printf("\npredictions (predicted/label, * marks an error):\n");
  for (long i = 0; i < n; i++) {
    float probs[DIGITS_OUTPUT0_NUMEL];
    digits_run(aligned, images + i * DIGITS_INPUT0_NUMEL, probs);
    int best = 0;
    for (int k = 1; k < DIGITS_OUTPUT0_NUMEL; k++)
      if (probs[k] > probs[best])
        best = k;
    printf("%d/%d%c%s", best, labels[i], best == labels[i] ? ' ' : '*', (i + 1) % 16 ? " " : "\n");
  }
  printf("\naccuracy: %ld/%ld = %.2f%%\n", correct, n, 100.0 * (double)correct / (double)n);
  free(images);
  free(labels);
  return 0;
}
