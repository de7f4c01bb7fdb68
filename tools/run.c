/* run.c - `onnxc run MODEL.onnx --input NAME=FILE ... --output DIR`: compile
 * the model for the inputs' shapes, run it once, write every output as
 * DIR/NAME.npy (docs/cli.md). Inputs are .npy (little-endian, C order) or
 * TensorProto .pb files. With the in-process compiler the model and its
 * harness run under the JIT (docs/clang.md); else they are built with $CC.
 * The build and the run are check.c's (check_run_inputs).
 */
#include "tools.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
  DType dt;
  const char *descr;
} NPY[] = {{DT_F32, "<f4"}, {DT_F64, "<f8"}, {DT_F16, "<f2"}, {DT_I8, "|i1"}, {DT_U8, "|u1"},
           {DT_I16, "<i2"}, {DT_U16, "<u2"}, {DT_I32, "<i4"}, {DT_U32, "<u4"}, {DT_I64, "<i8"},
           {DT_U64, "<u8"}, {DT_BOOL, "|b1"}};

/* The value of 'key' in the .npy header dict, or NULL. */
static const char *npy_field(const char *h, const char *key) {
  const char *p = strstr(h, key);
  if (!p)
    return NULL;
  p = strchr(p + strlen(key), ':');
  if (!p)
    return NULL;
  for (p++; *p == ' '; p++)
    ;
  return p;
}

static Tensor *npy_load(Graph *g, const char *path, Diag *d) {
  Buf b;
  buf_init(&b);
  Tensor *t = NULL;
  if (!sys_read_file(path, &b) || b.len < 10 || memcmp(b.s, "\x93NUMPY", 6) != 0) {
    diag_error(d, NULL, "%s: not a .npy file", path);
    goto done;
  }
  unsigned char major = (unsigned char)b.s[6];
  size_t hlen = major == 1 ? (size_t)(unsigned char)b.s[8] | (size_t)(unsigned char)b.s[9] << 8
                           : (size_t)(unsigned char)b.s[8] | (size_t)(unsigned char)b.s[9] << 8 |
                                 (size_t)(unsigned char)b.s[10] << 16 | (size_t)(unsigned char)b.s[11] << 24;
  size_t start = (major == 1 ? 10 : 12) + hlen;
  if (start > b.len) {
    diag_error(d, NULL, "%s: truncated .npy header", path);
    goto done;
  }
  char *h = strndup(b.s + (major == 1 ? 10 : 12), hlen);
  const char *descr = npy_field(h, "'descr'"), *order = npy_field(h, "'fortran_order'"), *shape = npy_field(h, "'shape'");
  DType dt = DT_UNDEF;
  for (size_t i = 0; descr && i < sizeof NPY / sizeof NPY[0]; i++)
    if (strncmp(descr + 1, NPY[i].descr, 3) == 0)
      dt = NPY[i].dt;
  int64_t dims[IR_MAX_RANK];
  int rank = 0;
  bool ok = dt != DT_UNDEF && order && strncmp(order, "False", 5) == 0 && shape && *shape == '(';
  for (const char *s = shape ? shape + 1 : NULL; ok && s && *s != ')';) {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || rank == IR_MAX_RANK || v < 0) {
      ok = false;
      break;
    }
    dims[rank++] = v;
    for (s = end; *s == ',' || *s == ' ';)
      s++;
  }
  free(h);
  if (!ok) {
    diag_error(d, NULL, "%s: unsupported .npy (expected a C-order array of a numeric type, little-endian)", path);
    goto done;
  }
  Shape sh = shape_make(rank, dims);
  t = ir_tensor_new(g, dt, &sh, d);
  if (t && (size_t)t->nbytes != b.len - start) {
    diag_error(d, NULL, "%s: %zu bytes of data for shape %d-d %s", path, b.len - start, rank, dtype_name(dt));
    t = NULL;
  } else if (t) {
    memcpy(t->data, b.s + start, (size_t)t->nbytes);
  }
done:
  buf_free(&b);
  return t;
}

bool run_npy_save(const char *path, DType dt, const Shape *s, const void *raw, size_t n, Diag *d) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof NPY / sizeof NPY[0]; i++)
    if (NPY[i].dt == dt)
      descr = NPY[i].descr;
  if (!descr)
    return diag_error(d, NULL, "%s: cannot write a %s tensor as .npy", path, dtype_name(dt));
  Buf h;
  buf_init(&h);
  buf_printf(&h, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < s->rank; i++)
    buf_printf(&h, "%lld,%s", (long long)s->d[i], i + 1 < s->rank ? " " : "");
  buf_puts(&h, "), }");
  while ((10 + h.len + 1) % 64)
    buf_putc(&h, ' ');
  buf_putc(&h, '\n');
  Buf f;
  buf_init(&f);
  buf_write(&f, "\x93NUMPY\x01\x00", 8);
  unsigned char len[2] = {(unsigned char)(h.len & 0xff), (unsigned char)(h.len >> 8)};
  buf_write(&f, len, 2);
  buf_write(&f, h.s, h.len);
  buf_write(&f, raw, n);
  bool ok = sys_write_file(path, f.s, f.len);
  buf_free(&h);
  buf_free(&f);
  return ok || diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
}

int run_main(const Options *o, char *const *inputs, int n_inputs, const char *out_dir) {
  Diag d;
  diag_init(&d, o->model, stderr);
  Graph *g = fe_onnx_load(o->model, &d);
  int rc = 1;
  Tensor *in[256] = {NULL};
  if (!g)
    goto done;
  if (g->n_inputs > 256) {
    diag_error(&d, NULL, "run takes models of at most 256 inputs");
    goto done;
  }
  for (int k = 0; k < n_inputs; k++) {
    const char *eq = strchr(inputs[k], '=');
    int i = 0;
    while (eq && i < g->n_inputs && (strlen(g->inputs[i]->name) != (size_t)(eq - inputs[k]) ||
                                     strncmp(g->inputs[i]->name, inputs[k], (size_t)(eq - inputs[k])) != 0))
      i++;
    if (!eq || i == g->n_inputs) {
      diag_error(&d, NULL, "--input %s: the model has no input of that name", inputs[k]);
      goto done;
    }
    const char *path = eq + 1, *dot = strrchr(path, '.');
    const char *ignored = NULL;
    in[i] = dot && strcmp(dot, ".npy") == 0 ? npy_load(g, path, &d) : fe_tensor_load(g, path, &ignored, &d);
    if (!in[i])
      goto done;
  }
  for (int i = 0; i < g->n_inputs; i++)
    if (!in[i]) {
      diag_error(&d, NULL, "input '%s' needs --input %s=FILE.npy|FILE.pb", g->inputs[i]->name, g->inputs[i]->name);
      goto done;
    }
  if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
    diag_error(&d, NULL, "cannot create %s: %s", out_dir, strerror(errno));
    goto done;
  }
  rc = check_run_inputs(o->model, in, g->n_inputs, o, out_dir);
done:
  ir_graph_free(g);
  diag_free(&d);
  return rc;
}
