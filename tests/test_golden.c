/* test_golden.c - golden IR tests for passes.
 *
 * Each file in tests/golden/ holds a pass list, an input graph and either the
 * expected graph or an expected error:
 *     # passes: infer simplify dce
 *     # input
 *     graph g opset 13
 *     ...
 *     # expect            (or: # expect-error: some text of the message)
 *     graph g opset 13
 *     ...
 * The input is parsed, the passes run in order with the verifier after each,
 * and the printed result must equal the expected text (re-printed, so spacing
 * in the file does not matter; graph attributes, such as fused bodies, as
 * `subgraph NAME ... end` blocks, ir_print_blocks). Run with UPDATE_GOLDEN=1 to rewrite expectations.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "target_util.h"
#include "passes.h"

static bool run_pass(const char *name, Graph *g, Diag *d) {
  Plan plan;
  if (strcmp(name, "check-ops") == 0) return pass_check_ops(g, d);
  if (strcmp(name, "topo-order") == 0) return ir_toposort(g, d);
  if (strcmp(name, "canonicalize") == 0) return pass_canonicalize(g, d);
  if (strcmp(name, "lower-control") == 0) return pass_lower_control(g, d);
  if (strcmp(name, "lower-gradient") == 0) return pass_lower_gradient(g, d);
  if (strcmp(name, "infer") == 0) return pass_infer(g, d);
  if (strcmp(name, "simplify") == 0) return pass_simplify(g, d);
  if (strcmp(name, "fuse-bn") == 0) return pass_fuse_bn(g, d);
  if (strcmp(name, "fuse-epilogue") == 0) return pass_fuse_epilogue(g, d, true);
  if (strcmp(name, "cse") == 0) return pass_cse(g, d);
  if (strcmp(name, "fuse-norm") == 0) return pass_fuse_norm(g, d);
  if (strcmp(name, "fuse-layout") == 0) return pass_fuse_layout(g, d);
  if (strcmp(name, "fuse-siblings") == 0) return pass_fuse_siblings(g, d);
  if (strcmp(name, "rnn-project") == 0) return pass_rnn_project(g, d);
  if (strcmp(name, "fuse-elementwise") == 0) return pass_fuse_elementwise(g, true, d);
  if (strcmp(name, "dce") == 0) return pass_dce(g, d);
  if (strcmp(name, "require-static") == 0) return pass_require_static(g, d);
  if (strcmp(name, "schedule") == 0) {
    int64_t bound;
    return pass_schedule(g, onnxc_test_target(), &bound, d);
  }
  if (strcmp(name, "memplan") == 0) return pass_memplan(g, &plan, onnxc_test_target(), d) && plan_validate(g, &plan, d);
  return diag_error(d, NULL, "test: unknown pass '%s'", name);
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  Buf b;
  buf_init(&b);
  char tmp[4096];
  size_t k;
  while ((k = fread(tmp, 1, sizeof tmp, f)) > 0)
    buf_write(&b, tmp, k);
  fclose(f);
  if (!b.s)
    buf_puts(&b, "");
  return b.s;
}

/* Returns 0 on pass, 1 on failure (printed). */
static int run_file(const char *path) {
  char *text = slurp(path);
  if (!text) {
    printf("FAIL %s: cannot read\n", path);
    return 1;
  }
  char *passes = strstr(text, "# passes:");
  char *input = strstr(text, "# input\n");
  char *expect = strstr(text, "# expect\n");
  char *expect_err = strstr(text, "# expect-error:");
  if (!passes || !input || (!expect && !expect_err)) {
    printf("FAIL %s: needs '# passes:', '# input' and '# expect' or '# expect-error:'\n", path);
    free(text);
    return 1;
  }
  char *end_input = expect ? expect : expect_err;
  *end_input = 0;
  char *pass_line = passes + strlen("# passes:");
  char *nl = strchr(pass_line, '\n');
  *nl = 0;
  Diag d;
  diag_init(&d, path, NULL);
  int failed = 0;
  Graph *g = ir_parse(input + strlen("# input\n"), path, &d);
  if (!g) {
    printf("FAIL %s: input does not parse: %s\n", path, diag_last(&d));
    failed = 1;
  }
  bool ok = g != NULL;
  char *names = malloc(strlen(pass_line) + 1); /* strtok cuts its string: keep pass_line whole */
  strcpy(names, pass_line);
  for (char *p = strtok(names, " \t"); ok && p; p = strtok(NULL, " \t"))
    ok = run_pass(p, g, &d) && ir_verify(g, false, &d);
  free(names);
  if (g && expect_err) {
    char *want = expect_err + strlen("# expect-error:");
    while (*want == ' ')
      want++;
    char *wnl = strchr(want, '\n');
    if (wnl)
      *wnl = 0;
    bool found = false;
    for (int i = 0; i < d.n_msgs; i++)
      found |= strstr(d.msgs[i], want) != NULL;
    if (ok || !found) {
      printf("FAIL %s: expected an error containing '%s', got: %s\n", path, want, ok ? "(success)" : diag_last(&d));
      failed = 1;
    }
  } else if (g) {
    if (!ok) {
      printf("FAIL %s: %s\n", path, diag_last(&d));
      failed = 1;
    } else {
      Buf got, want;
      buf_init(&got);
      buf_init(&want);
      ir_print_blocks(g, &got);
      Graph *eg = ir_parse(expect + strlen("# expect\n"), path, &d);
      if (!eg) {
        printf("FAIL %s: expectation does not parse: %s\n", path, diag_last(&d));
        failed = 1;
      } else {
        ir_print_blocks(eg, &want);
        ir_graph_free(eg);
        if (strcmp(got.s, want.s) != 0) {
          if (getenv("UPDATE_GOLDEN")) {
            FILE *f = fopen(path, "wb");
            fprintf(f, "# passes:%s\n# input\n%s# expect\n%s", pass_line, input + strlen("# input\n"), got.s);
            fclose(f);
            printf("UPDATED %s\n", path);
          } else {
            printf("FAIL %s: result differs\n--- expected\n%s--- got\n%s", path, want.s, got.s);
            failed = 1;
          }
        }
      }
      buf_free(&got);
      buf_free(&want);
    }
  }
  if (!failed)
    printf("ok   %s\n", path);
  ir_graph_free(g);
  diag_free(&d);
  free(text);
  return failed;
}

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_golden DIR\n");
    return 2;
  }
  DIR *dp = opendir(argv[1]);
  if (!dp) {
    fprintf(stderr, "test_golden: cannot open %s\n", argv[1]);
    return 2;
  }
  char *names[1024];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && n < 1024) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".txt") == 0)
      names[n++] = strdup(e->d_name);
  }
  closedir(dp);
  qsort(names, (size_t)n, sizeof *names, cmp);
  int failed = 0;
  for (int i = 0; i < n; i++) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", argv[1], names[i]);
    failed += run_file(path);
    free(names[i]);
  }
  printf("%d golden tests, %d failed\n", n, failed);
  return failed ? 1 : (n == 0 ? 1 : 0);
}
