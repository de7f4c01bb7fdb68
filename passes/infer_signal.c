/* infer_signal.c - shape inference of the signal-processing ops of the opsk
 * family: DFT, STFT, HannWindow, HammingWindow, BlackmanWindow and
 * MelWeightMatrix.
 *
 * Complex tensors are real tensors with a last dim of 2 (re, im); a last dim
 * of 1 is a real signal. Shapes:
 *   DFT     the input's, with dim `axis` = n (dft_length; n/2+1 when onesided
 *           and forward) and a last dim of 2 (1 for the inverse onesided form)
 *   STFT    [batch, frames, onesided ? n/2+1 : n, 2], n = frame_length,
 *           frames = 1 + (signal_length - n) / frame_step
 *   windows [size]; MelWeightMatrix [dft_length/2+1, num_mel_bins]
 * The parameters that fix shapes (dft_length, axis, frame_step, sizes) must be
 * constants. The resolved transform length and axis are recorded on the node
 * as attributes "onnxc.n" and "onnxc.axis" for the scratch planner and the
 * emitter (codegen/emit_signal.c), so the opset rules live only here.
 * Reference: the ONNX operator docs (onnx/defs) and onnx/reference/ops.
 */
#include "passes.h"

static bool float_dtype(DType t) {
  return t == DT_F32 || t == DT_F64 || t == DT_F16 || t == DT_BF16;
}

/* A constant scalar (or 1-element) integer input; false with an error when it
 * is not constant (the shape depends on it). */
static bool const_int(Node *n, Diag *d, int i, const char *what, int64_t *out) {
  int64_t v[1];
  int count = 0;
  if (!infer_const_ints(n, i, v, &count, 1) || count != 1)
    return infer_fail(d, n, "input %d (%s) must be a constant integer scalar: the output shape "
                      "depends on its value", i, what);
  *out = v[0];
  return true;
}

/* Checks the complex layout [..., 1|2] of input i with rank >= min_rank. */
static bool want_signal(Node *n, Diag *d, int i, int min_rank) {
  const Shape *s = &n->in[i]->shape;
  if (!float_dtype(n->in[i]->dt))
    return infer_fail(d, n, "input %d has element type %s, expected f16, bf16, f32 or f64", i,
                      dtype_name(n->in[i]->dt));
  if (s->rank >= 0 && s->rank < min_rank)
    return infer_fail(d, n, "input %d has rank %d, expected at least %d", i, s->rank, min_rank);
  if (s->rank > 0 && s->d[s->rank - 1] >= 0 && s->d[s->rank - 1] != 1 && s->d[s->rank - 1] != 2)
    return infer_fail(d, n, "input %d has a last dim of %lld, expected 1 (real) or 2 (complex)", i,
                      (long long)s->d[s->rank - 1]);
  return true;
}

bool infer_DFT(Node *n, Diag *d) {
  const Shape *x = &n->in[0]->shape;
  if (!want_signal(n, d, 0, 2))
    return false;
  bool inverse = ir_attr_int(n, "inverse", 0) != 0, onesided = ir_attr_int(n, "onesided", 0) != 0;
  int64_t axis = ir_attr_int(n, "axis", 1);
  if (n->g->opset >= 20) {
    if (ir_attr(n, "axis"))
      return infer_fail(d, n, "attribute 'axis' is an input from opset 20");
    axis = -2;
    if (ir_has_input(n, 2) && !const_int(n, d, 2, "axis", &axis))
      return false;
  } else if (n->n_in > 2 && ir_has_input(n, 2)) {
    return infer_fail(d, n, "input 2 (axis) needs opset 20 (the model has opset %lld)",
                      (long long)n->g->opset);
  }
  if (x->rank < 0) {
    infer_set(n, 0, n->in[0]->dt, NULL);
    return true;
  }
  int a;
  if (!shape_axis(axis, x->rank, &a) || a == x->rank - 1)
    return infer_fail(d, n, "axis %lld is out of range for an input of rank %d (the last dim "
                      "holds the complex parts)", (long long)axis, x->rank);
  int64_t len = x->d[a], dft_n;
  if (ir_has_input(n, 1)) {
    if (!const_int(n, d, 1, "dft_length", &dft_n))
      return false;
  } else if (len < 0) {
    dft_n = -1;
  } else {
    dft_n = inverse && onesided ? 2 * (len - 1) : len;
  }
  if (dft_n == 0 || dft_n < -1)
    return infer_fail(d, n, "the transform length is %lld, expected at least 1", (long long)dft_n);
  if (inverse && onesided && x->d[x->rank - 1] == 1)
    return infer_fail(d, n, "an inverse onesided DFT needs a complex input (last dim 2)");
  Shape y = *x;
  y.d[a] = dft_n < 0 ? DIM_UNKNOWN : onesided && !inverse ? dft_n / 2 + 1 : dft_n;
  y.sym[a] = NULL, y.x[a] = NULL;
  y.d[y.rank - 1] = inverse && onesided ? 1 : 2;
  y.sym[y.rank - 1] = NULL, y.x[y.rank - 1] = NULL;
  infer_set(n, 0, n->in[0]->dt, &y);
  ir_attr_set_int(n, "onnxc.n", dft_n);
  ir_attr_set_int(n, "onnxc.axis", a);
  return true;
}

bool infer_STFT(Node *n, Diag *d) {
  const Shape *x = &n->in[0]->shape;
  if (!want_signal(n, d, 0, 3))
    return false;
  if (x->rank != 3)
    return infer_fail(d, n, "input 0 (signal) has rank %d, expected 3 [batch, length, 1|2]", x->rank);
  bool onesided = ir_attr_int(n, "onesided", 1) != 0;
  int64_t step, flen = -1;
  if (!const_int(n, d, 1, "frame_step", &step))
    return false;
  if (step <= 0)
    return infer_fail(d, n, "frame_step is %lld, expected at least 1", (long long)step);
  if (ir_has_input(n, 2)) {
    const Shape *w = &n->in[2]->shape;
    if (n->in[2]->dt != n->in[0]->dt)
      return infer_fail(d, n, "input 2 (window) has element type %s, expected %s like the signal",
                        dtype_name(n->in[2]->dt), dtype_name(n->in[0]->dt));
    if (w->rank != 1)
      return infer_fail(d, n, "input 2 (window) has rank %d, expected 1", w->rank);
    flen = w->d[0];
  }
  if (ir_has_input(n, 3)) {
    int64_t fl;
    if (!const_int(n, d, 3, "frame_length", &fl))
      return false;
    if (flen >= 0 && fl != flen)
      return infer_fail(d, n, "frame_length %lld differs from the window's length %lld",
                        (long long)fl, (long long)flen);
    flen = fl;
  }
  if (flen < 0 && !ir_has_input(n, 2))
    flen = x->d[1];
  if (flen == 0 || flen < -1)
    return infer_fail(d, n, "the frame length is %lld, expected at least 1", (long long)flen);
  if (flen > 0 && x->d[1] >= 0 && flen > x->d[1])
    return infer_fail(d, n, "the frame length %lld exceeds the signal length %lld", (long long)flen,
                      (long long)x->d[1]);
  int64_t frames = flen < 0 || x->d[1] < 0 ? DIM_UNKNOWN : 1 + (x->d[1] - flen) / step;
  int64_t bins = flen < 0 ? DIM_UNKNOWN : onesided ? flen / 2 + 1 : flen;
  Shape y = shape_make(4, (int64_t[]){x->d[0], frames, bins, 2});
  y.sym[0] = x->sym[0], y.x[0] = x->x[0];
  infer_set(n, 0, n->in[0]->dt, &y);
  ir_attr_set_int(n, "onnxc.n", flen);
  return true;
}

/* output_datatype of the window ops and MelWeightMatrix (default f32). */
static bool out_dtype(Node *n, Diag *d, DType *out) {
  int64_t t = ir_attr_int(n, "output_datatype", DT_F32);
  if (!dtype_valid((int)t) || t == DT_UNDEF || t == DT_STRING || t == DT_BOOL ||
      !dtype_ctype((DType)t)[0] || dtype_bits((DType)t) < 8)
    return infer_fail(d, n, "output_datatype %lld is not a numeric type the C target supports",
                      (long long)t);
  *out = (DType)t;
  return true;
}

static bool infer_window(Node *n, Diag *d) {
  DType dt;
  if (!out_dtype(n, d, &dt))
    return false;
  if (!dtype_is_int(n->in[0]->dt))
    return infer_fail(d, n, "input 0 (size) has element type %s, expected an integer type",
                      dtype_name(n->in[0]->dt));
  int64_t size;
  if (!const_int(n, d, 0, "size", &size))
    return false;
  if (size < 0)
    return infer_fail(d, n, "size is %lld, expected at least 0", (long long)size);
  Shape y = shape_make(1, &size);
  infer_set(n, 0, dt, &y);
  return true;
}

bool infer_HannWindow(Node *n, Diag *d) { return infer_window(n, d); }
bool infer_HammingWindow(Node *n, Diag *d) { return infer_window(n, d); }
bool infer_BlackmanWindow(Node *n, Diag *d) { return infer_window(n, d); }

bool infer_MelWeightMatrix(Node *n, Diag *d) {
  DType dt;
  if (!out_dtype(n, d, &dt))
    return false;
  static const char *const what[5] = {"num_mel_bins", "dft_length", "sample_rate",
                                       "lower_edge_hertz", "upper_edge_hertz"};
  for (int i = 0; i < 5; i++) {
    const Shape *s = &n->in[i]->shape;
    bool want_int = i < 3;
    if (want_int ? !dtype_is_int(n->in[i]->dt) : !float_dtype(n->in[i]->dt))
      return infer_fail(d, n, "input %d (%s) has element type %s, expected %s", i, what[i],
                        dtype_name(n->in[i]->dt), want_int ? "an integer type" : "a float type");
    int64_t numel;
    if (s->rank >= 0 && shape_numel(s, &numel) && numel != 1)
      return infer_fail(d, n, "input %d (%s) has %lld elements, expected a scalar", i, what[i],
                        (long long)numel);
  }
  int64_t mels, dft;
  if (!const_int(n, d, 0, "num_mel_bins", &mels) || !const_int(n, d, 1, "dft_length", &dft))
    return false;
  if (mels <= 0 || dft <= 0)
    return infer_fail(d, n, "num_mel_bins (%lld) and dft_length (%lld) must be positive",
                      (long long)mels, (long long)dft);
  Shape y = shape_make(2, (int64_t[]){dft / 2 + 1, mels});
  infer_set(n, 0, dt, &y);
  return true;
}
