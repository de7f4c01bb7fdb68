/* replay.c - runs files through the fuzz target without libFuzzer.
 *
 *   fuzz_replay [--every K] [--max-seconds S] [--max-rss-mb M] PATH...
 *
 * Each PATH is a file or a folder; folders are walked recursively, their
 * entries in name order, and every regular file is one input (in a folder,
 * only files named *.onnx or without a dot: the backend data's test_data_set
 * tensors are not models). --every K keeps every K-th input found (1: all).
 * Each input goes through LLVMFuzzerTestOneInput (fuzz_compile.c) as the
 * fuzzer would hand it over: so the regressions of tests/fuzz/regressions/
 * and a sample of the seeds run under the ordinary build and under the
 * ASan+UBSan build. An input that runs longer than --max-seconds (wall
 * clock; default 0: no limit) fails the run after all inputs ran, and so
 * does a peak resident size over --max-rss-mb (the fuzzer's -rss_limit_mb;
 * checked after each input, naming the first input past it). A crash or
 * a sanitizer report ends the process with the input's name on stderr.
 */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Run {
  long every, seen, ran;
  double max_seconds, slowest;
  long max_rss_mb;
  char slowest_path[4096];
  int slow, errors, fat;
} Run;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void run_file(Run *r, const char *path) {
  if (r->seen++ % r->every != 0)
    return;
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "fuzz_replay: cannot read %s\n", path);
    r->errors++;
    return;
  }
  uint8_t *data = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 1 << 16;
      uint8_t *nd = realloc(data, cap);
      if (!nd) {
        fprintf(stderr, "fuzz_replay: out of memory reading %s\n", path);
        exit(2);
      }
      data = nd;
    }
    size_t got = fread(data + n, 1, cap - n, f);
    n += got;
    if (got == 0)
      break;
  }
  fclose(f);
  fprintf(stderr, "fuzz_replay: %s (%zu bytes)\n", path, n);
  /* Exactly n bytes on the heap, so ASan sees a read past the input. */
  uint8_t *exact = malloc(n ? n : 1);
  if (!exact)
    exit(2);
  if (n)
    memcpy(exact, data, n);
  free(data);
  double t0 = now();
  LLVMFuzzerTestOneInput(exact, n);
  double dt = now() - t0;
  free(exact);
  r->ran++;
  if (dt > r->slowest) {
    r->slowest = dt;
    snprintf(r->slowest_path, sizeof r->slowest_path, "%s", path);
  }
  struct rusage ru;
  if (r->max_rss_mb > 0 && !r->fat && getrusage(RUSAGE_SELF, &ru) == 0 &&
      ru.ru_maxrss / 1024 > r->max_rss_mb) {
    fprintf(stderr, "fuzz_replay: %s: peak resident size %ld MB (limit %ld MB)\n", path,
            ru.ru_maxrss / 1024, r->max_rss_mb);
    r->fat = 1;
  }
  if (r->max_seconds > 0 && dt > r->max_seconds) {
    fprintf(stderr, "fuzz_replay: %s took %.2f s (limit %.2f s)\n", path, dt, r->max_seconds);
    r->slow++;
  }
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool model_like(const char *name) {
  const char *dot = strrchr(name, '.');
  return !dot || strcmp(dot, ".onnx") == 0;
}

static void run_path(Run *r, const char *path, bool top) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fprintf(stderr, "fuzz_replay: no such file or folder: %s\n", path);
    r->errors++;
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    if (top || model_like(path))
      run_file(r, path);
    return;
  }
  DIR *dir = opendir(path);
  if (!dir) {
    fprintf(stderr, "fuzz_replay: cannot list %s\n", path);
    r->errors++;
    return;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *e; (e = readdir(dir));) {
    if (e->d_name[0] == '.')
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      char **nn = realloc(names, cap * sizeof *names);
      if (!nn)
        exit(2);
      names = nn;
    }
    size_t len = strlen(path) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n])
      exit(2);
    snprintf(names[n++], len, "%s/%s", path, e->d_name);
  }
  closedir(dir);
  qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n; i++) {
    run_path(r, names[i], false);
    free(names[i]);
  }
  free(names);
}

int main(int argc, char **argv) {
  Run r;
  memset(&r, 0, sizeof r);
  r.every = 1;
  int first = 1;
  for (; first < argc && strncmp(argv[first], "--", 2) == 0; first++) {
    if (strcmp(argv[first], "--every") == 0 && first + 1 < argc) {
      r.every = strtol(argv[++first], NULL, 10);
    } else if (strcmp(argv[first], "--max-rss-mb") == 0 && first + 1 < argc) {
      r.max_rss_mb = strtol(argv[++first], NULL, 10);
    } else if (strcmp(argv[first], "--max-seconds") == 0 && first + 1 < argc) {
      r.max_seconds = strtod(argv[++first], NULL);
    } else {
      fprintf(stderr, "fuzz_replay: unknown option %s\n", argv[first]);
      return 2;
    }
  }
  if (first == argc || r.every < 1) {
    fprintf(stderr, "usage: fuzz_replay [--every K] [--max-seconds S] [--max-rss-mb M] PATH...\n");
    return 2;
  }
  for (int i = first; i < argc; i++)
    run_path(&r, argv[i], true);
  printf("fuzz_replay: %ld inputs run (of %ld found), slowest %.3f s (%s)\n", r.ran, r.seen,
         r.slowest, r.ran ? r.slowest_path : "-");
  if (r.ran == 0) {
    fprintf(stderr, "fuzz_replay: no input found\n");
    return 1;
  }
  return r.errors || r.slow || r.fat ? 1 : 0;
}
