/* if_branch_driver.c - runs a model compiled from make_if_models.py (with
 * --name m) once per sample rate and checks the status of each run: 0 for
 * the rate whose branch compiled (its state output must be state * SCALE),
 * ONNXC_ERR_BRANCH for the other. Usage: driver GOOD_SR BAD_SR SCALE */
#include "m.h"
#include "onnxc_rt.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int run(void *arena, int64_t sr, float *y, float *s, const float *state) {
  float x[8];
  for (int i = 0; i < 8; i++)
    x[i] = (float)i / 4 - 1;
  const void *in[3] = {x, state, &sr};
  void *out[2] = {y, s};
  return m_run_v(arena, in, out);
}

int main(int argc, char **argv) {
  if (argc != 4)
    return 2;
  int64_t good = atoll(argv[1]), bad = atoll(argv[2]);
  float scale = (float)atof(argv[3]);
  unsigned char *raw = malloc(M_ARENA_BYTES + 64);
  void *arena = raw + (64 - (uintptr_t)raw % 64) % 64;
  float y[4], s[3], state[3] = {0.5f, -1.0f, 2.0f};
  int fails = 0;
  int rc = run(arena, good, y, s, state);
  if (rc != ONNXC_OK) {
    printf("FAIL sr=%lld: status %d, expected 0\n", (long long)good, rc);
    fails++;
  }
  for (int i = 0; i < 3 && rc == ONNXC_OK; i++)
    if (s[i] != state[i] * scale) {
      printf("FAIL sr=%lld: s[%d] = %g, expected %g\n", (long long)good, i, s[i], state[i] * scale);
      fails++;
    }
  rc = run(arena, bad, y, s, state);
  if (rc != ONNXC_ERR_BRANCH) {
    printf("FAIL sr=%lld: status %d, expected ONNXC_ERR_BRANCH (%d)\n", (long long)bad, rc, ONNXC_ERR_BRANCH);
    fails++;
  }
  free(raw);
  if (!fails)
    printf("ok   sr=%lld runs, sr=%lld returns ONNXC_ERR_BRANCH\n", (long long)good, (long long)bad);
  return fails != 0;
}
