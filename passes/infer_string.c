/* infer_string.c - inference for the string operators: StringConcat,
 * StringSplit, StringNormalizer, RegexFullMatch and ai.onnx.ml LabelEncoder.
 *
 * String tensors hold `const char *` elements in generated code (docs/strings.md).
 * Kernels that make new strings write their characters into a buffer of
 * "onnxc.string_bytes" bytes (--string-bytes; default IR_STRING_BYTES) that the
 * memory planner keeps until the end of the run (the target's scratch_persists).
 * Data-dependent extents use the dynamic-output ABI (Value.dyn_dims,
 * docs/abi.md): StringNormalizer with stopwords ([C] or [1, C], bound C) and
 * StringSplit's last dim (bound maxsplit + 1, else the model's declared
 * extent of that output, else STRING_SPLIT_MAX).
 * The hooks leave what the emitter needs on the node: RegexFullMatch its NFA
 * program (onnxc.re_*, passes/regex.h), LabelEncoder its sorted key table
 * (onnxc.keys / onnxc.values / onnxc.default / onnxc.nan_value).
 */
#include "passes.h"
#include "regex.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { STRING_SPLIT_MAX = 16 };

static bool string_input(Node *n, int i, Diag *d) {
  if (n->in[i]->dt != DT_STRING)
    return infer_fail(d, n, "input %d has element type %s, expected string", i, dtype_name(n->in[i]->dt));
  return true;
}

static bool makes_strings(const Node *n) {
  return n->op == OP_StringConcat || n->op == OP_StringSplit || n->op == OP_StringNormalizer;
}

void infer_string_capacity(Graph *g, int64_t bytes) {
  for (Node *n = g->first; n && bytes > 0; n = n->next)
    if (makes_strings(n))
      ir_attr_set_int(n, "onnxc.string_bytes", bytes);
}


bool infer_StringConcat(Node *n, Diag *d) {
  if (!string_input(n, 0, d) || !string_input(n, 1, d))
    return false;
  Shape s = shape_unknown();
  if (n->in[0]->shape.rank >= 0 && n->in[1]->shape.rank >= 0 &&
      !shape_broadcast(&n->in[0]->shape, &n->in[1]->shape, &s)) {
    char a[256], b[256];
    return infer_fail(d, n, "inputs of shapes %s and %s do not broadcast",
                      shape_str(&n->in[0]->shape, a, sizeof a), shape_str(&n->in[1]->shape, b, sizeof b));
  }
  infer_set(n, 0, DT_STRING, &s);
  return true;
}

/* ---- StringSplit ------------------------------------------------------------ */

bool infer_StringSplit(Node *n, Diag *d) {
  if (!string_input(n, 0, d))
    return false;
  const Shape *x = &n->in[0]->shape;
  int64_t maxsplit = ir_attr_int(n, "maxsplit", -1);
  const Attr *dl = ir_attr(n, "delimiter");
  if (dl && dl->kind != AT_STRING)
    return infer_fail(d, n, "attribute 'delimiter' must be a string");
  if (x->rank >= IR_MAX_RANK)
    return infer_fail(d, n, "input 0 has rank %d; the output would exceed rank %d", x->rank, IR_MAX_RANK);
  if (x->rank < 0) {
    infer_set(n, 0, DT_STRING, NULL);
    if (n->n_out > 1)
      infer_set(n, 1, DT_I64, NULL);
    return true;
  }
  /* The bound of the substrings' extent: maxsplit + 1, else what the model
   * declares for this graph output (a static extent), else the default. */
  int64_t k = STRING_SPLIT_MAX;
  const Shape *decl = &n->out[0]->shape;
  if (maxsplit >= 0 && maxsplit < INT32_MAX)
    k = maxsplit + 1;
  else if (ir_attr_int(n, "onnxc.split_max", 0) > 0)
    k = ir_attr_int(n, "onnxc.split_max", 0);
  else if (n->out[0]->kind != VK_NONE && n->out[0]->is_output && decl->rank == x->rank + 1 &&
           decl->d[x->rank] > 0)
    k = decl->d[x->rank];
  ir_attr_set_int(n, "onnxc.split_max", k); /* inference may run again: keep the bound */
  Shape y = *x;
  y.rank = x->rank + 1;
  y.d[x->rank] = k;
  y.sym[x->rank] = NULL, y.x[x->rank] = NULL;
  infer_set(n, 0, DT_STRING, &y);
  if (n->out[0]->kind != VK_NONE)
    n->out[0]->dyn_dims = 1u << x->rank;
  if (n->n_out > 1)
    infer_set(n, 1, DT_I64, x);
  return true;
}

/* ---- StringNormalizer -------------------------------------------------------- */

bool infer_StringNormalizer(Node *n, Diag *d) {
  if (!string_input(n, 0, d))
    return false;
  const char *act = ir_attr_str(n, "case_change_action", "NONE");
  if (strcmp(act, "NONE") != 0 && strcmp(act, "LOWER") != 0 && strcmp(act, "UPPER") != 0)
    return infer_fail(d, n, "case_change_action '%s' is not LOWER, UPPER or NONE", act);
  const Attr *sw = ir_attr(n, "stopwords");
  if (sw && sw->kind != AT_STRINGS)
    return infer_fail(d, n, "attribute 'stopwords' must be a list of strings");
  const Shape *x = &n->in[0]->shape;
  if (x->rank >= 0 && x->rank != 1 && !(x->rank == 2 && x->d[0] == 1)) {
    char b[256];
    return infer_fail(d, n, "input 0 has shape %s; StringNormalizer takes [C] or [1, C]",
                      shape_str(x, b, sizeof b));
  }
  if (x->rank < 0) {
    infer_set(n, 0, DT_STRING, NULL);
    return true;
  }
  if (!sw || sw->n == 0) {
    infer_set(n, 0, DT_STRING, x);
    return true;
  }
  /* Stopwords make the extent data-dependent: at most C, and [""] (or
   * [[""]]) when every element is dropped. */
  Shape y = *x;
  int c = x->rank - 1;
  if (y.d[c] == 0)
    y.d[c] = 1;
  y.sym[c] = NULL, y.x[c] = NULL;
  infer_set(n, 0, DT_STRING, &y);
  if (n->out[0]->kind != VK_NONE)
    n->out[0]->dyn_dims = 1u << c;
  return true;
}

/* ---- RegexFullMatch --------------------------------------------------------------- */

bool infer_RegexFullMatch(Node *n, Diag *d) {
  if (!string_input(n, 0, d))
    return false;
  const Attr *pa = ir_attr(n, "pattern");
  if (!pa || pa->kind != AT_STRING)
    return infer_fail(d, n, "attribute 'pattern' (a string) is required");
  if (strlen(pa->u.s) != pa->slen)
    return infer_fail(d, n, "the pattern holds a NUL byte");
  RegexProg p;
  char err[256];
  if (!regex_compile(pa->u.s, n->g->arena, &p, err, sizeof err))
    return infer_fail(d, n, "pattern '%s': %s", pa->u.s, err);
  ir_attr_set_ints(n, "onnxc.re_op", p.op, p.n);
  ir_attr_set_ints(n, "onnxc.re_x", p.x, p.n);
  ir_attr_set_ints(n, "onnxc.re_y", p.y, p.n);
  ir_attr_set_ints(n, "onnxc.re_cls", p.cls, p.n_cls + 1);
  ir_attr_set_ints(n, "onnxc.re_rng", p.rng, 2 * p.n_rng);
  infer_set(n, 0, DT_BOOL, &n->in[0]->shape);
  return true;
}

/* ---- LabelEncoder --------------------------------------------------------------- */

static bool le_type_ok(DType t) {
  return t == DT_STRING || t == DT_I64 || t == DT_F32 || t == DT_I32 || t == DT_I16 || t == DT_F64;
}

/* The keys or values of a LabelEncoder as a 1-D tensor (a list attribute
 * converted, or the *_tensor form); NULL with *err set when invalid. */
static Tensor *le_list(Node *n, Diag *d, const char *what, bool *bad) {
  static const char *const suffix[] = {"_int64s", "_floats", "_strings", "_tensor"};
  Tensor *t = NULL;
  int found = 0;
  char name[64];
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "%s%s", what, suffix[i]);
    const Attr *a = ir_attr(n, name);
    if (!a)
      continue;
    found++;
    DType dt = i == 0 ? DT_I64 : i == 1 ? DT_F32 : i == 2 ? DT_STRING : DT_UNDEF;
    AttrKind want = i == 0 ? AT_INTS : i == 1 ? AT_FLOATS : i == 2 ? AT_STRINGS : AT_TENSOR;
    if (a->kind != want) {
      *bad = true;
      infer_report(d, n, "attribute '%s' has the wrong kind", name);
      return NULL;
    }
    if (i == 3) {
      t = a->u.t;
      if (t->shape.rank != 1) {
        *bad = true;
        infer_report(d, n, "attribute '%s' must be a 1-D tensor", name);
        return NULL;
      }
      continue;
    }
    int64_t len = a->n;
    Shape s = shape_make(1, &len);
    t = ir_tensor_new(n->g, dt, &s, d);
    if (!t) {
      *bad = true;
      return NULL;
    }
    for (int k = 0; k < a->n; k++) {
      if (i == 0)
        ((int64_t *)t->data)[k] = a->u.is[k];
      else if (i == 1)
        ((float *)t->data)[k] = a->u.fs[k];
      else
        ((const char **)t->data)[k] = a->u.ss[k];
    }
  }
  if (found > 1) {
    *bad = true;
    return infer_report(d, n, "more than one %s_* attribute is set", what), NULL;
  }
  return t;
}

/* Element i of a numeric key tensor as double, or compares two string keys. */
static int key_cmp(const Tensor *t, int64_t i, int64_t j) {
  if (t->dt == DT_STRING)
    return strcmp(((const char **)t->data)[i], ((const char **)t->data)[j]);
  if (t->dt == DT_I64 || t->dt == DT_I32 || t->dt == DT_I16) {
    int64_t a = tensor_get_i64(t, i), b = tensor_get_i64(t, j);
    return a < b ? -1 : a > b;
  }
  double a = tensor_get_f64(t, i), b = tensor_get_f64(t, j);
  return a < b ? -1 : a > b;
}

/* Stable merge sort of key indices (qsort has no context argument). */
static void sort_idx(const Tensor *keys, int64_t *v, int64_t *tmp, int64_t n) {
  if (n < 2)
    return;
  int64_t h = n / 2, i = 0, j = h, k = 0;
  sort_idx(keys, v, tmp, h);
  sort_idx(keys, v + h, tmp, n - h);
  while (i < h && j < n)
    tmp[k++] = key_cmp(keys, v[j], v[i]) < 0 ? v[j++] : v[i++];
  while (i < h)
    tmp[k++] = v[i++];
  while (j < n)
    tmp[k++] = v[j++];
  memcpy(v, tmp, (size_t)n * sizeof *v);
}

static Tensor *tensor1(Graph *g, DType dt, int64_t len, Diag *d) {
  Shape s = shape_make(1, &len);
  return ir_tensor_new(g, dt, &s, d);
}

static void copy_elem(Tensor *to, int64_t i, const Tensor *from, int64_t j) {
  if (to->dt == DT_STRING)
    ((const char **)to->data)[i] = ((const char **)from->data)[j];
  else if (dtype_is_float(to->dt))
    tensor_set_f64(to, i, tensor_get_f64(from, j));
  else
    tensor_set_i64(to, i, tensor_get_i64(from, j));
}

/* The default value of a version 2+ LabelEncoder, as a 1-element tensor. */
static Tensor *le_default(Node *n, Diag *d, DType vt, bool tensor_form) {
  Tensor *t = tensor1(n->g, vt, 1, d);
  if (!t)
    return NULL;
  const Attr *dt = ir_attr(n, "default_tensor");
  if (tensor_form && dt && dt->kind == AT_TENSOR) {
    if (dt->u.t->dt != vt || dt->u.t->numel != 1)
      return infer_report(d, n, "default_tensor must hold one %s", dtype_name(vt)), NULL;
    copy_elem(t, 0, dt->u.t, 0);
  } else if (vt == DT_STRING) {
    ((const char **)t->data)[0] = tensor_form ? "_Unused" : ir_attr_str(n, "default_string", "_Unused");
  } else if (dtype_is_float(vt)) {
    tensor_set_f64(t, 0, tensor_form ? -0.0 : (double)ir_attr_float(n, "default_float", -0.0f));
  } else {
    tensor_set_i64(t, 0, tensor_form ? -1 : ir_attr_int(n, "default_int64", -1));
  }
  return t;
}

/* Version 1: classes_strings maps strings to their index and back. */
static bool le_v1(Node *n, Diag *d, Tensor **keys, Tensor **vals, Tensor **dflt) {
  const Attr *cs = ir_attr(n, "classes_strings");
  if (!cs || cs->kind != AT_STRINGS)
    return infer_fail(d, n, "attribute 'classes_strings' (strings) is required");
  bool from_str = n->in[0]->dt == DT_STRING;
  if (!from_str && n->in[0]->dt != DT_I64)
    return infer_fail(d, n, "input 0 has element type %s, expected string or int64", dtype_name(n->in[0]->dt));
  Tensor *s = tensor1(n->g, DT_STRING, cs->n, d), *ix = tensor1(n->g, DT_I64, cs->n, d);
  *dflt = tensor1(n->g, from_str ? DT_I64 : DT_STRING, 1, d);
  if (!s || !ix || !*dflt)
    return false;
  for (int i = 0; i < cs->n; i++) {
    ((const char **)s->data)[i] = cs->u.ss[i];
    ((int64_t *)ix->data)[i] = i;
  }
  *keys = from_str ? s : ix;
  *vals = from_str ? ix : s;
  if (from_str)
    tensor_set_i64(*dflt, 0, ir_attr_int(n, "default_int64", -1));
  else
    ((const char **)(*dflt)->data)[0] = ir_attr_str(n, "default_string", "_Unused");
  return true;
}

bool infer_LabelEncoder(Node *n, Diag *d) {
  DType xt = n->in[0]->dt;
  Tensor *keys = NULL, *vals = NULL, *dflt = NULL;
  bool bad = false;
  if (ir_attr(n, "classes_strings")) {
    if (!le_v1(n, d, &keys, &vals, &dflt))
      return false;
  } else {
    keys = le_list(n, d, "keys", &bad);
    vals = bad ? NULL : le_list(n, d, "values", &bad);
    if (bad)
      return false;
    if (!keys || !vals)
      return infer_fail(d, n, "a keys_* and a values_* attribute are required");
    if (keys->numel != vals->numel)
      return infer_fail(d, n, "%lld keys but %lld values", (long long)keys->numel, (long long)vals->numel);
    if (!le_type_ok(keys->dt) || !le_type_ok(vals->dt))
      return infer_fail(d, n, "keys of type %s and values of type %s are not supported",
                        dtype_name(keys->dt), dtype_name(vals->dt));
    if (keys->dt != xt)
      return infer_fail(d, n, "input 0 has element type %s but the keys are %s", dtype_name(xt),
                        dtype_name(keys->dt));
    if (!(dflt = le_default(n, d, vals->dt, ir_attr(n, "values_tensor") != NULL)))
      return false;
  }
  /* Sorted unique keys (the last of equal keys wins); a NaN key apart. */
  int64_t *idx = malloc((size_t)(keys->numel + 1) * sizeof *idx), m = 0, nan = -1;
  IR_ASSERT(idx);
  for (int64_t i = 0; i < keys->numel; i++) {
    if (dtype_is_float(keys->dt) && isnan(tensor_get_f64(keys, i)))
      nan = i;
    else
      idx[m++] = i;
  }
  int64_t *tmp = malloc((size_t)(m + 1) * sizeof *tmp);
  IR_ASSERT(tmp);
  sort_idx(keys, idx, tmp, m);
  free(tmp);
  int64_t u = 0;
  for (int64_t i = 0; i < m; i++) {
    if (i + 1 < m && key_cmp(keys, idx[i], idx[i + 1]) == 0)
      continue;
    idx[u++] = idx[i];
  }
  Tensor *sk = tensor1(n->g, keys->dt, u, d), *sv = tensor1(n->g, vals->dt, u, d);
  if (!sk || !sv) {
    free(idx);
    return false;
  }
  for (int64_t i = 0; i < u; i++) {
    copy_elem(sk, i, keys, idx[i]);
    copy_elem(sv, i, vals, idx[i]);
  }
  free(idx);
  ir_attr_add(n, "onnxc.keys", AT_TENSOR)->u.t = sk;
  ir_attr_add(n, "onnxc.values", AT_TENSOR)->u.t = sv;
  ir_attr_add(n, "onnxc.default", AT_TENSOR)->u.t = dflt;
  if (nan >= 0) {
    Tensor *nv = tensor1(n->g, vals->dt, 1, d);
    if (!nv)
      return false;
    copy_elem(nv, 0, vals, nan);
    ir_attr_add(n, "onnxc.nan_value", AT_TENSOR)->u.t = nv;
  }
  infer_set(n, 0, vals->dt, &n->in[0]->shape);
  return true;
}
