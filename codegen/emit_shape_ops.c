/* emit_shape_ops.c - C kernels for shape and data-movement ops.
 *
 * View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity, Dropout) copy the
 * elements for now; memory planning can later turn them into aliases.
 * Transpose drops extent-1 dims and merges runs of dims that stay adjacent, so
 * an NCHW->NHWC permute becomes a 2- or 3-deep loop nest. Gather validates
 * every index before writing (a bad one returns ONNXC_ERR_BAD_INDEX). Cast
 * converts narrow floats (f16, bf16, float8, float4, e8m0) through float with
 * the onnxc_rt.h helpers, saturates float->int conversions (out-of-range
 * values are undefined in ONNX, and UB in C) except into packed 4- and 2-bit
 * integers, which take the truncated value modulo 2^bits like the ONNX
 * reference. Training-mode Dropout that would be random fails at run time
 * with ONNXC_ERR_UNSUPPORTED when run-time inputs ask for it.
 */
#include "codegen.h"

#include <math.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------- */

/* Elements of the C array holding v (sub-byte types are packed in bytes). */
static int64_t storage_of(const Value *v) {
  int64_t n = ec_numel(v), bytes = 0;
  if (dtype_bits(v->dt) >= 8)
    return n;
  IR_ASSERT(dtype_bytes(v->dt, n, &bytes));
  return bytes;
}

static void emit_copy(EmitC *e, const char *dst, const char *src, int64_t count) {
  if (count == 0)
    return;
  if (count == 1) {
    ec_line(e, "%s[0] = %s[0];", dst, src);
    return;
  }
  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", (long long)count);
  ec_line(e, "  %s[i] = %s[i];", dst, src);
}

static bool emit_view(EmitC *e, const Node *n) {
  int64_t count = storage_of(n->out[0]);
  if (count == 0)
    ec_line(e, "(void)Y0;");
  emit_copy(e, "Y0", "X0", count);
  return true;
}

bool emitc_Reshape(EmitC *e, const Node *n) { return emit_view(e, n); }
bool emitc_Flatten(EmitC *e, const Node *n) { return emit_view(e, n); }
bool emitc_Squeeze(EmitC *e, const Node *n) { return emit_view(e, n); }
bool emitc_Unsqueeze(EmitC *e, const Node *n) { return emit_view(e, n); }
bool emitc_Identity(EmitC *e, const Node *n) { return emit_view(e, n); }

/* Training mode with a ratio other than 0 would draw random numbers; when a
 * run-time input decides either (constants were checked by inference), the
 * kernel refuses at run time. */
static void dropout_guard(EmitC *e, const Node *n) {
  const Value *t = ir_has_input(n, 2) ? n->in[2] : NULL, *r = ir_has_input(n, 1) ? n->in[1] : NULL;
  if (!t || (t->kind == VK_CONST && (t->konst->numel == 0 || tensor_get_i64(t->konst, 0) == 0)))
    return;
  if (r && r->kind == VK_CONST && r->konst->numel >= 1 && tensor_get_f64(r->konst, 0) == 0)
    return;
  Buf c;
  buf_init(&c);
  if (t->kind != VK_CONST)
    buf_puts(&c, "X2[0]");
  if (r && r->kind != VK_CONST) {
    buf_puts(&c, c.len ? " && " : "");
    ec_ew_load(&c, r->dt, r->dt == DT_F64 ? DT_F64 : DT_F32, "X1[0]");
    buf_puts(&c, " != 0");
  }
  ec_line(e, "if (%s) /* training-mode Dropout with ratio > 0: random, not supported */", c.s);
  ec_line(e, "  return ONNXC_ERR_UNSUPPORTED;");
  buf_free(&c);
}

bool emitc_Dropout(EmitC *e, const Node *n) {
  dropout_guard(e, n);
  if (ec_has_output(n, 0))
    emit_view(e, n);
  if (!ec_has_output(n, 1))
    return true;
  const Value *m = n->out[1];
  int64_t count = ec_numel(m);
  Buf one;
  buf_init(&one);
  ec_ew_store(&one, DT_F32, m->dt, "1.0f");
  if (count == 0)
    ec_line(e, "(void)Y1;");
  else
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y1[i] = %s;", (long long)count, one.s);
  buf_free(&one);
  return true;
}

/* ---- Transpose ---------------------------------------------------------------- */

#define TILE 32  /* elements per side of a transpose tile */

bool emitc_Transpose(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int r = xs->rank, count;
  const int64_t *perm = ir_attr_ints(n, "perm", &count);
  if (dtype_bits(n->in[0]->dt) < 8)
    return diag_error(e->d, n, "Transpose of packed %s data is not supported", dtype_name(n->in[0]->dt));
  if (ec_numel(n->out[0]) == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  /* Input dims that matter (extent > 1), renumbered; p: output order of them. */
  int newid[IR_MAX_RANK], p[IR_MAX_RANK], nk = 0, np = 0;
  for (int i = 0; i < r; i++)
    newid[i] = xs->d[i] != 1 ? nk++ : -1;
  for (int j = 0; j < r; j++) {
    int src = perm ? (int)perm[j] : r - 1 - j;
    if (newid[src] >= 0)
      p[np++] = newid[src];
  }
  /* Runs of output dims that are consecutive in the input merge into one. */
  int64_t ext[IR_MAX_RANK], istride_of_kept[IR_MAX_RANK], ext_of_kept[IR_MAX_RANK];
  int ng = 0;
  for (int i = 0; i < r; i++)
    if (newid[i] >= 0)
      ext_of_kept[newid[i]] = xs->d[i];
  int64_t acc = 1;
  for (int k = nk - 1; k >= 0; k--) {
    istride_of_kept[k] = acc;
    acc *= ext_of_kept[k];
  }
  int64_t istride[IR_MAX_RANK], ostride[IR_MAX_RANK];
  for (int j = 0; j < np; j++) {
    if (j > 0 && p[j] == p[j - 1] + 1) {
      ext[ng - 1] *= ext_of_kept[p[j]];
      istride[ng - 1] = istride_of_kept[p[j]];
      continue;
    }
    ext[ng] = ext_of_kept[p[j]];
    istride[ng] = istride_of_kept[p[j]];
    ng++;
  }
  if (ng <= 1) {
    emit_copy(e, "Y0", "X0", ec_numel(n->out[0]));
    return true;
  }
  acc = 1;
  for (int m = ng - 1; m >= 0; m--) {
    ostride[m] = acc;
    acc *= ext[m];
  }
  /* The group read contiguously (input stride 1); when it is not the innermost
   * output group and both are long, the pair is tiled so reads and writes
   * both stay in cache. Loop order does not change the result. */
  int c = ng - 1, last = ng - 1;
  for (int m = 0; m < ng; m++)
    if (istride[m] == 1)
      c = m;
  bool tile = c != last && ext[c] >= 2 * TILE && ext[last] >= 2 * TILE;
  int opened = 0;
  for (int m = 0; m < ng; m++)
    if (!tile || (m != c && m != last)) {
      ec_line(e, "for (ptrdiff_t i%d = 0; i%d < %lld; i%d++) {", m, m, (long long)ext[m], m);
      opened++;
    }
  if (tile) {
    ec_line(e, "for (ptrdiff_t b%d = 0; b%d < %lld; b%d += %d) {", c, c, (long long)ext[c], c, TILE);
    ec_line(e, "for (ptrdiff_t b%d = 0; b%d < %lld; b%d += %d) {", last, last, (long long)ext[last], last, TILE);
    ec_line(e, "const ptrdiff_t e%d = b%d + %d < %lld ? b%d + %d : %lld;", c, c, TILE, (long long)ext[c], c, TILE,
            (long long)ext[c]);
    ec_line(e, "const ptrdiff_t e%d = b%d + %d < %lld ? b%d + %d : %lld;", last, last, TILE, (long long)ext[last],
            last, TILE, (long long)ext[last]);
    ec_line(e, "for (ptrdiff_t i%d = b%d; i%d < e%d; i%d++) {", c, c, c, c, c);
    ec_line(e, "for (ptrdiff_t i%d = b%d; i%d < e%d; i%d++) {", last, last, last, last, last);
    opened += 4;
  }
  Buf oi, ii;
  buf_init(&oi);
  buf_init(&ii);
  for (int m = 0; m < ng; m++) {
    buf_printf(&oi, "%si%d", m ? " + " : "", m);
    if (ostride[m] != 1)
      buf_printf(&oi, " * %lld", (long long)ostride[m]);
    buf_printf(&ii, "%si%d", m ? " + " : "", m);
    if (istride[m] != 1)
      buf_printf(&ii, " * %lld", (long long)istride[m]);
  }
  ec_line(e, "Y0[%s] = X0[%s];", oi.s, ii.s);
  buf_free(&oi);
  buf_free(&ii);
  for (int m = 0; m < opened; m++)
    ec_line(e, "}");
  return true;
}

/* ---- Concat, Shape, Gather -------------------------------------------------------- */

bool emitc_Concat(EmitC *e, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  if (dtype_bits(n->out[0]->dt) < 8)
    return diag_error(e->d, n, "Concat of packed %s data is not supported", dtype_name(n->out[0]->dt));
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", 0), ys->rank, &axis));
  int64_t outer = ec_prod(ys, 0, axis), total = ec_prod(ys, axis, ys->rank);
  if (outer == 0 || total == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  if (outer > 1)
    ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", (long long)outer);
  int64_t off = 0;
  for (int k = 0; k < n->n_in; k++) {
    const Shape *s = &n->in[k]->shape;
    int64_t inner = ec_prod(s, axis, s->rank);
    if (inner == 0)
      continue;
    if (outer > 1)
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[o * %lld + %lld + i] = X%d[o * %lld + i];",
              (long long)inner, (long long)total, (long long)off, k, (long long)inner);
    else
      ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[%lld + i] = X%d[i];", (long long)inner,
              (long long)off, k);
    off += inner;
  }
  if (outer > 1)
    ec_line(e, "}");
  return true;
}

bool emitc_Shape(EmitC *e, const Node *n) {
  /* Normally folded; with static shapes the answer is known here anyway. */
  const Shape *xs = &n->in[0]->shape;
  int64_t r = xs->rank, start = ir_attr_int(n, "start", 0), end = ir_attr_int(n, "end", r);
  start = start < 0 ? start + r : start;
  end = end < 0 ? end + r : end;
  start = start < 0 ? 0 : start > r ? r : start;
  end = end < 0 ? 0 : end > r ? r : end;
  if (end <= start)
    ec_line(e, "(void)Y0;");
  for (int64_t i = start; i < end; i++)
    ec_line(e, "Y0[%lld] = %lldLL;", (long long)(i - start), (long long)xs->d[i]);
  return true;
}

bool emitc_Gather(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  if (dtype_bits(n->in[0]->dt) < 8)
    return diag_error(e->d, n, "Gather of packed %s data is not supported", dtype_name(n->in[0]->dt));
  int axis;
  IR_ASSERT(shape_axis(ir_attr_int(n, "axis", 0), xs->rank, &axis));
  int64_t outer = ec_prod(xs, 0, axis), dim = xs->d[axis], inner = ec_prod(xs, axis + 1, xs->rank);
  int64_t count = ec_numel(n->in[1]);
  if (count > 0) {
    ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++)", (long long)count);
    ec_line(e, "  if (X1[j] < -%lld || X1[j] >= %lld)", (long long)dim, (long long)dim);
    ec_line(e, "    return ONNXC_ERR_BAD_INDEX;");
  }
  if (outer * count * inner == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  /* Row offsets of output and input; the outer loop goes when it has one trip. */
  char yrow[64], xrow[64];
  if (outer > 1) {
    ec_line(e, "for (ptrdiff_t o = 0; o < %lld; o++) {", (long long)outer);
    snprintf(yrow, sizeof yrow, "o * %lld + ", (long long)count);
    snprintf(xrow, sizeof xrow, "o * %lld + ", (long long)dim);
  } else {
    yrow[0] = xrow[0] = 0;
  }
  ec_line(e, "for (ptrdiff_t j = 0; j < %lld; j++) {", (long long)count);
  ec_line(e, "const ptrdiff_t k = (ptrdiff_t)X1[j] < 0 ? (ptrdiff_t)X1[j] + %lld : (ptrdiff_t)X1[j];",
          (long long)dim);
  if (inner == 1) {
    ec_line(e, "Y0[%sj] = X0[%sk];", yrow, xrow);
  } else {
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++)", (long long)inner);
    ec_line(e, "  Y0[(%sj) * %lld + i] = X0[(%sk) * %lld + i];", yrow, (long long)inner, xrow, (long long)inner);
  }
  ec_line(e, "}");
  if (outer > 1)
    ec_line(e, "}");
  return true;
}

/* ---- Cast -----------------------------------------------------------------------
 * Each element passes through a "middle" C value: float for f32 and every
 * narrower float (decoded exactly), double for f64, int for packed integers,
 * else the source's own type; it is then stored in the target type with the
 * onnxc_rt.h conversions. Packed targets (4- and 2-bit) are written a whole
 * byte at a time, padding bits zero. */

static bool packed(DType t) { return dtype_bits(t) < 8; }

static DType cast_mid(DType t) {
  if (t == DT_F64)
    return DT_F64;
  if (dtype_is_float(t))
    return DT_F32;
  return packed(t) ? DT_I32 : t;
}

/* C expression for `v` (an element already converted to mid, a float or
 * double when from a float type) converted to `to`, a type of at least 8 bits
 * that is not a float8. */
static void cast_expr(Buf *b, DType from, DType to, const char *v) {
  const char *ct = dtype_ctype(to);
  bool ffrom = dtype_is_float(from);
  if (to == DT_BOOL) {
    buf_printf(b, "(uint8_t)(%s != 0)", v);
  } else if (to == DT_F16 || to == DT_BF16) {
    buf_printf(b, "%s((float)%s)", to == DT_F16 ? "onnxc_f32_to_f16" : "onnxc_f32_to_bf16", v);
  } else if (dtype_is_float(to) || !ffrom) {
    buf_printf(b, "(%s)%s", ct, v);
  } else {
    /* float -> integer: NaN gives 0, out-of-range values saturate. */
    int bits = dtype_bits(to);
    bool sgn = dtype_is_signed(to);
    double lo = sgn ? -ldexp(1.0, bits - 1) : -1.0, hi = sgn ? ldexp(1.0, bits - 1) : ldexp(1.0, bits);
    const char *sfx = from == DT_F64 ? "" : "f";
    char minv[48], maxv[48];
    if (!sgn)
      snprintf(minv, sizeof minv, "0");
    else if (bits == 64)
      snprintf(minv, sizeof minv, "(-9223372036854775807LL - 1)");
    else
      snprintf(minv, sizeof minv, "(%.0f - 1)", lo + 1);
    if (bits == 64)
      snprintf(maxv, sizeof maxv, sgn ? "9223372036854775807LL" : "18446744073709551615ULL");
    else
      snprintf(maxv, sizeof maxv, "%.0f%s", hi - 1, sgn ? "" : "U");
    buf_printf(b, "(%s != %s ? (%s)0 : %s <= %.1f%s ? (%s)%s : %s >= %.1f%s ? (%s)%s : (%s)%s)", v, v, ct, v, lo,
               sfx, ct, minv, v, hi, sfx, ct, maxv, ct, v);
  }
}

/* C expression storing middle value `v` (type mid) as `to`; for a packed
 * target, the field's bits in the low bits of an unsigned. */
DType ec_cast_mid(DType from) { return cast_mid(from); }

void ec_cast_template(Buf *b, DType from, DType to) {
  IR_ASSERT(!packed(from) && !packed(to) && !(to >= DT_F8E4M3FN && to <= DT_F8E5M2FNUZ) && to != DT_F8E8M0);
  if (to == DT_F16 || to == DT_BF16)
    buf_puts(b, "%0");  /* the store to the step's type rounds, as cast_expr would */
  else
    cast_expr(b, cast_mid(from), to, "%0");
}

static void cast_store(Buf *b, DType mid, DType to, const char *v, int sat, const char *round_mode) {
  switch (to) {
  case DT_F8E4M3FN: buf_printf(b, "onnxc_f32_to_f8e4m3fn((float)%s, %d)", v, sat); return;
  case DT_F8E4M3FNUZ: buf_printf(b, "onnxc_f32_to_f8e4m3fnuz((float)%s, %d)", v, sat); return;
  case DT_F8E5M2: buf_printf(b, "onnxc_f32_to_f8e5m2((float)%s, %d)", v, sat); return;
  case DT_F8E5M2FNUZ: buf_printf(b, "onnxc_f32_to_f8e5m2fnuz((float)%s, %d)", v, sat); return;
  case DT_F4E2M1: buf_printf(b, "(unsigned)onnxc_f32_to_f4e2m1((float)%s)", v); return;
  case DT_F8E8M0:
    buf_printf(b, "onnxc_f32_to_f8e8m0((float)%s, %d, %s)", v, sat,
               !strcmp(round_mode, "down") ? "ONNXC_E8M0_DOWN"
               : !strcmp(round_mode, "nearest") ? "ONNXC_E8M0_NEAREST" : "ONNXC_E8M0_UP");
    return;
  case DT_U4: case DT_I4: case DT_U2: case DT_I2: {
    unsigned mask = (1u << dtype_bits(to)) - 1;
    if (dtype_is_float(mid))
      buf_printf(b, "onnxc_f64_to_bits((double)%s, %uu)", v, mask);
    else
      buf_printf(b, "((unsigned)%s & %uu)", v, mask);  /* modular: two's complement low bits */
    return;
  }
  default:
    cast_expr(b, mid, to, v);
  }
}

bool emitc_Cast(EmitC *e, const Node *n) {
  DType from = n->in[0]->dt, to = n->out[0]->dt;
  if (!dtype_ctype(from)[0] || !dtype_ctype(to)[0])
    return diag_error(e->d, n, "Cast from %s to %s is not supported by the C target", dtype_name(from),
                      dtype_name(to));
  int64_t count = ec_numel(n->out[0]);
  if (count == 0) {
    ec_line(e, "(void)Y0;");
    return true;
  }
  if (from == to || (!strcmp(dtype_ctype(from), dtype_ctype(to)) && from != DT_BOOL && to != DT_BOOL &&
                     !dtype_is_float(from) && !dtype_is_float(to) && !packed(from) && !packed(to))) {
    emit_copy(e, "Y0", "X0", storage_of(n->out[0]));
    return true;
  }
  /* float16 <-> float32 (the Casts around a float16 model's products,
   * passes/precision.c): onnxc_rt.h's conversions of whole vectors */
  if ((from == DT_F16 && to == DT_F32) || (from == DT_F32 && to == DT_F16)) {
    ec_line(e, "%s(Y0, X0, %lld);", from == DT_F16 ? "onnxc_f16_to_f32_n" : "onnxc_f32_to_f16_n", (long long)count);
    return true;
  }
  /* saturate (opset 19) only changes float8 and e8m0 results; round_mode (24) only e8m0's. */
  int sat = n->g->opset >= 19 ? ir_attr_int(n, "saturate", 1) != 0 : 1;
  const char *round_mode = ir_attr_str(n, "round_mode", "up");
  DType mid = cast_mid(from);
  Buf ld, ex;
  buf_init(&ld);
  buf_init(&ex);
  cast_store(&ex, mid, to, "v", sat, round_mode);
  if (!packed(to)) {
    ec_load_elem(&ld, from, "X0", "i");
    ec_flat_for(e, "i", count);
    ec_line(e, "const %s v = %s;", dtype_ctype(mid), ld.s);
    ec_line(e, "Y0[i] = %s;", ex.s);
  } else {
    int bits = dtype_bits(to), k = 8 / bits;
    char tail[48] = "";  /* the last byte may be partial */
    if (count % k)
      snprintf(tail, sizeof tail, " && j < %lld", (long long)count);
    ec_load_elem(&ld, from, "X0", "j");
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)storage_of(n->out[0]));
    ec_line(e, "unsigned byte = 0;");
    ec_line(e, "for (ptrdiff_t j = i * %d; j < i * %d + %d%s; j++) {", k, k, k, tail);
    ec_line(e, "const %s v = %s;", dtype_ctype(mid), ld.s);
    ec_line(e, "byte |= %s << ((unsigned)(j - i * %d) * %du);", ex.s, k, bits);
    ec_line(e, "}");
    ec_line(e, "Y0[i] = (uint8_t)byte;");
  }
  ec_line(e, "}");
  buf_free(&ld);
  buf_free(&ex);
  return true;
}

/* The target type comes from the output value, so CastLike is Cast. */
bool emitc_CastLike(EmitC *e, const Node *n) { return emitc_Cast(e, n); }

bool emitc_Constant(EmitC *e, const Node *n) {
  return diag_error(e->d, n, "internal: Constant nodes must be folded before code generation");
}
