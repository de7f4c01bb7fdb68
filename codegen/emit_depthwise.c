/* emit_depthwise.c - the C kernel of a float32 depthwise 2-D Conv (group =
 * channels, one filter per channel), as MobileNet-style nets use it.
 *
 * Per channel the zero-padded image is split into its stride phases: for
 * strides (sh, sw) there are sh * sw phase planes, P[a][b][r][c] =
 * xpad[r * sh + a][c * sw + b], each with the pitch wq = ceil(wp / sw). Tap
 * (i, j) of output (oh, ow) is then P[i % sh][j % sw][oh + i / sh][ow + j / sw]:
 * for every tap a contiguous read at a fixed offset from q = oh * wq + ow. So
 * stride 2 costs what stride 1 does, and the phases are written in the one
 * pass that reads the channel's input (the padding is zeroed once per call,
 * as no channel writes it). The outputs are computed either row by row
 * straight into Y (wide maps), or as one run over q (small maps, so 7- and
 * 14-wide rows still fill whole vectors) into a scratch plane whose valid
 * columns are then copied out. Dilated windows and strides above 2 take the
 * row form over one padded plane (phases 1 x 1, taps at dilated offsets read
 * with the stride). The weights of a channel are locals, so each output is a
 * straight-line sum the compiler vectorizes along q.
 */
#include "gemm.h"
#include "window.h"

#define LL(x) ((long long)(x))

/* Maps at least this wide are computed row by row into Y. */
#define DW_ROW_MIN 32

typedef struct Dw {
  Window g;
  int64_t hp, wp;     /* the zero-padded image */
  int64_t ph, pw;     /* phases per dim: the stride when the phase form applies, else 1 */
  int64_t hq, wq;     /* one phase plane */
  int64_t plane;      /* floats of one phase plane */
  bool rows;          /* outputs row by row straight into Y (else one run into yt) */
  bool copy;          /* the input is copied into phase planes (else read in place) */
  int64_t off_yt;     /* floats: the run's output plane (-1: none) */
  int64_t floats;     /* per thread */
} Dw;

static int64_t up16(int64_t v) { return (v + 15) / 16 * 16; }

/* The layout of a depthwise conv's scratch; false when n does not qualify. */
static bool dw_layout(const Node *n, Dw *d) {
  const Shape *xs = &n->in[0]->shape, *ws = &n->in[1]->shape, *ys = &n->out[0]->shape;
  int64_t group = ir_attr_int(n, "group", 1);
  if (xs->rank != 4 || n->in[0]->dt != DT_F32 || n->in[1]->dt != DT_F32 ||
      n->out[0]->dt != DT_F32 || (ir_has_input(n, 2) && n->in[2]->dt != DT_F32) || group < 2 ||
      !shape_is_static(xs) || !shape_is_static(ws) || !shape_is_static(ys) ||
      group != xs->d[1] || ws->d[0] != group || ws->d[1] != 1 || ws->d[2] * ws->d[3] > 64)
    return false;
  Window *g = &d->g;
  window_read(n, xs, ys, &ws->d[2], g);
  if (g->pb[0] < 0 || g->pb[1] < 0 || g->pe[0] < 0 || g->pe[1] < 0 || g->out[0] < 1 || g->out[1] < 1)
    return false;
  d->hp = g->in[0] + g->pb[0] + g->pe[0];
  d->wp = g->in[1] + g->pb[1] + g->pe[1];
  bool phased = g->dil[0] == 1 && g->dil[1] == 1 && g->s[0] <= 2 && g->s[1] <= 2;
  d->ph = phased ? g->s[0] : 1;
  d->pw = phased ? g->s[1] : 1;
  d->hq = (d->hp + d->ph - 1) / d->ph;
  d->wq = (d->wp + d->pw - 1) / d->pw;
  d->plane = up16(d->hq * d->wq + 16);
  bool padded = g->pb[0] || g->pb[1] || g->pe[0] || g->pe[1];
  d->copy = padded || d->ph > 1 || d->pw > 1;
  /* the run form reads each phase at stride 1 from q; without phases the
   * taps step by the stride, which only the row form writes */
  d->rows = g->out[1] >= DW_ROW_MIN || !phased;
  int64_t f = d->copy ? d->ph * d->pw * d->plane : 0;
  d->off_yt = d->rows ? -1 : f;
  if (!d->rows)
    f += up16(g->out[0] * d->wq + 16);
  d->floats = f;
  return true;
}

/* The kernel's estimated time on one thread (docs/threads.md). */
static double dw_cost(const Node *n, const Dw *d) {
  return ec_cost(COST_DW_TAP, (double)ec_numel(n->out[0]) * (double)(d->g.k[0] * d->g.k[1]));
}

/* Scratch bytes: per thread when the kernel runs on every thread. */
static int64_t dw_bytes(const Dw *d, int threads) {
  return d->floats * 4 * (threads > 1 ? threads : 1);
}

int64_t depthwise_scratch_bytes(const Node *n, int threads) {
  Dw d;
  if (n->n_in < 2 || !ir_has_input(n, 0) || !ir_has_input(n, 1) || n->n_out < 1 || !dw_layout(n, &d))
    return 0;
  return dw_bytes(&d, threads);
}

/* The channel's input into the phase planes (P, pitch wq): row r of the
 * padded image goes to phase (r % ph) row r / ph; padding rows and columns
 * were zeroed before the channel loop and are never written. */
static void emit_phases(EmitC *e, const Dw *d) {
  const Window *g = &d->g;
  ec_line(e, "for (long h = 0; h < %lld; h++) {", LL(g->in[0]));
  ec_line(e, "const long r = h + %lld;", LL(g->pb[0]));
  ec_line(e, "const float *src = xc + h * %lld;", LL(g->in[1]));
  ec_line(e, "float *p0 = xp + (r %% %lld) * %lld + r / %lld * %lld;", LL(d->ph), LL(d->pw * d->plane),
          LL(d->ph), LL(d->wq));
  if (d->pw == 1) {
    ec_line(e, "for (long x = 0; x < %lld; x++) p0[%lld + x] = src[x];", LL(g->in[1]), LL(g->pb[1]));
  } else {
    /* phase b holds padded columns 2 c + b: input column 2 c + b - pl, for
     * the c where that is inside the row */
    for (int64_t b = 0; b < 2; b++) {
      /* lo = ceil((pl - b) / 2), hi = floor((W - 1 + pl - b) / 2) + 1, with
       * floor division: W - 1 + pl - b is -1 for a one-column unpadded row */
      int64_t top = g->in[1] - 1 + g->pb[1] - b;
      int64_t lo = (g->pb[1] - b + 1) / 2, hi = top < 0 ? 0 : top / 2 + 1;
      if (lo < 0)
        lo = 0;
      if (hi > d->wq)
        hi = d->wq;
      if (hi > lo)
        ec_line(e, "for (long x = %lld; x < %lld; x++) p0[%lld + x] = src[2 * x + %lld];", LL(lo), LL(hi),
                LL(b * d->plane), LL(b - g->pb[1]));
    }
  }
  ec_line(e, "}");
}

/* acc += every tap, read at offset `at` plus the tap's place in its phase
 * plane (base: the plane of phase (0, 0); row pitch `pitch`). */
static void emit_taps(EmitC *e, const Dw *d, const char *base, int64_t pitch, const char *at) {
  const Window *g = &d->g;
  for (int64_t i = 0; i < g->k[0]; i++)
    for (int64_t j = 0; j < g->k[1]; j++) {
      int64_t plane = d->ph > 1 || d->pw > 1 ? ((i % d->ph) * d->pw + j % d->pw) * d->plane : 0;
      int64_t off = plane + (i / d->ph) * g->dil[0] * pitch + (j / d->pw) * g->dil[1];
      ec_line(e, "acc = ONNXC_FMAF(w%lld, %s[%s + %lld], acc);", LL(i * g->k[1] + j), base, at, LL(off));
    }
}

static void emit_store(EmitC *e, const Node *n, const char *dst) {
  Buf act;
  buf_init(&act);
  gemm_act_expr(n, "acc", &act);
  ec_line(e, "%s = %s;", dst, act.s);
  buf_free(&act);
}

bool conv_emit_depthwise(EmitC *e, const Node *n) {
  Dw d;
  if (!dw_layout(n, &d))
    return false;
  const Window *g = &d.g;
  int64_t have = e->plan && e->plan->scratch_size ? e->plan->scratch_size[n->id] : 0;
  if (have < dw_bytes(&d, ec_threads(e)))
    return false;
  int64_t group = ir_attr_int(n, "group", 1), batch = n->in[0]->shape.d[0];
  int64_t taps = g->k[0] * g->k[1];
  ec_line(e, "/* depthwise: %lld channels, %lldx%lld taps, stride %lldx%lld: %lld phase plane(s), %s */",
          LL(group), LL(g->k[0]), LL(g->k[1]), LL(g->s[0]), LL(g->s[1]), LL(d.ph * d.pw),
          d.rows ? "row by row" : "one run per channel");
  bool par = ec_par_worth(e, dw_cost(n, &d)) && batch * group >= 2; /* as ec_open_items decides */
  if (d.floats && par) /* a share of the scratch per thread */
    ec_line(e, "float *ws = (float *)(S + (long)onnxc_th * %lld);", LL(d.floats * 4));
  else if (d.floats)
    ec_line(e, "float *ws = (float *)S;");
  if (d.copy) {
    ec_line(e, "float *xp = ws;");
    ec_line(e, "for (long q = 0; q < %lld; q++) xp[q] = 0;", LL(d.ph * d.pw * d.plane));
  }
  if (d.off_yt >= 0)
    ec_line(e, "float *yt = ws + %lld;", LL(d.off_yt));
  /* channels in chunks claimed by every thread when the cost pays for it */
  ec_open_items(e, "nc", batch * group, dw_cost(n, &d));
  ec_line(e, "const long c = nc %% %lld;", LL(group));
  ec_line(e, "const float *xc = X0 + nc * %lld;", LL(g->in_plane));
  ec_line(e, "float *yc = Y0 + nc * %lld;", LL(g->out_plane));
  if (d.copy)
    emit_phases(e, &d);
  else
    ec_line(e, "const float *xp = xc;");
  for (int64_t t = 0; t < taps; t++)
    ec_line(e, "const float w%lld = X1[c * %lld + %lld];", LL(t), LL(taps), LL(t));
  ec_line(e, "const float bias = %s;", ir_has_input(n, 2) ? "X2[c]" : "0.0f");
  /* with phases the output row oh starts at phase row oh; without, at
   * padded row oh * sh, and the taps step by the stride along the row */
  int64_t pitch = d.copy ? d.wq : g->in[1];
  if (d.rows) {
    ec_line(e, "for (long oh = 0; oh < %lld; oh++) {", LL(g->out[0]));
    ec_line(e, "const float *xr = xp + oh * %lld;", LL((d.ph > 1 ? 1 : g->s[0]) * pitch));
    ec_line(e, "float *yr = yc + oh * %lld;", LL(g->out[1]));
    ec_line(e, "for (long ow = 0; ow < %lld; ow++) {", LL(g->out[1]));
    ec_line(e, "const long b = ow * %lld;", LL(d.pw > 1 ? 1 : g->s[1]));
    ec_line(e, "float acc = bias;");
    emit_taps(e, &d, "xr", pitch, "b");
    emit_store(e, n, "yr[ow]");
    ec_line(e, "}");
    ec_line(e, "}");
  } else {
    ec_line(e, "for (long q = 0; q < %lld; q++) {", LL((g->out[0] - 1) * d.wq + g->out[1]));
    ec_line(e, "float acc = bias;");
    emit_taps(e, &d, "xp", pitch, "q");
    emit_store(e, n, "yt[q]");
    ec_line(e, "}");
    ec_line(e, "for (long oh = 0; oh < %lld; oh++)", LL(g->out[0]));
    ec_line(e, "  for (long ow = 0; ow < %lld; ow++) yc[oh * %lld + ow] = yt[oh * %lld + ow];",
            LL(g->out[1]), LL(g->out[1]), LL(d.wq));
  }
  ec_line(e, "}");
  return true;
}
