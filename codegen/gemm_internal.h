/* gemm_internal.h - what emit_gemm.c (the blocked product, MatMul, Gemm,
 * packed weights) and emit_gemm_conv.c (convolutions) share: the plan of one
 * product and the emitters of its loops. Not part of the codegen API. */
#ifndef ONNXC_GEMM_INTERNAL_H
#define ONNXC_GEMM_INTERNAL_H

#include "gemm.h"

#include <math.h>
#include <string.h>

#define LL(x) ((long long)(x))

/* ---- the plan of one product ---------------------------------------------------- */

typedef enum Src {
  SRC_PACKED, /* a weight packed at compile time (gemm.h layouts) */
  SRC_ROWS,   /* row-major: element (r, k) of A or (k, c) of B at ptr[r*ld + k] / ptr[k*ld + c] */
  SRC_TRANS,  /* transposed: A(r, k) at ptr[k*ld + r], B(k, c) at ptr[c*ld + k] */
  SRC_IM2COL, /* B of a conv: xp[koff(k) + pix[c]] */
  SRC_IM2COL_RT, /* B of a conv with run-time extents (-D ranges): gathered from the image at ptr
                  * while packing, zero in the padding; the window's locals (emit_dyn.c) */
} Src;

typedef struct Operand {
  Src src;
  const char *ptr;
  int64_t ld;
  const char *ld_rt;   /* ld known at run time (-D ranges): its C expression, else NULL */
} Operand;

/* Window of a 2-D conv, with the padded image's extents. */
typedef struct Window {
  int64_t c, h, w, kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oh, ow;
  int64_t groups; /* a grouped conv: one product per group (channels c / groups in) */
  bool padded;
} Window;

typedef struct Prod {
  int64_t m, n, k;
  Operand a, b;
  const char *y;
  int64_t ldy;
  Buf epi;             /* stored value from v (float), i, j; empty: v */
  Buf epi_full;        /* a fused chain (kernel_desc.c) on full tiles, whose bias the kernel
                          added (fast_epi): from v alone; empty: none */
  bool fast_epi;       /* the kernel applies all of epi itself on full tiles, from: */
  const char *rb, *cb; /* per-row / per-column bias at the tile, or a null pointer */
  const char *res;     /* residual with y's layout (its matrix base), or NULL */
  int act;             /* 0 none, 1 Relu, 2 Clip(lo, hi); -1 another activation */
  char lo[64], hi[64];
  int64_t off_b, off_a, off_pix, off_img; /* scratch offsets, -1 when unused */
  int64_t bytes;       /* scratch needed */
  bool par;            /* runs on every thread (--threads): items of GEMM_MC x GEMM_NCW */
  int64_t slot;        /* then: bytes of one thread's packing buffers (at off_b / off_a) */
  bool trans;          /* a small-map conv computed transposed (emit_conv_small) */
  bool trans_x;        /* then, 1x1 stride 1 unpadded: cols^T read straight from the image,
                          only the rows of the last partial tile packed (at off_a) */
  bool direct;         /* a stride-1 conv read straight from its padded image (emit_conv_direct) */
  bool dtr;            /* then, computed transposed: tiles of pixel rows x 32 output channels,
                          the weights packed as W^T column panels (emit_conv_direct_t) */
  int threads;         /* threads the kernel is built for (gk_layout sizes per thread) */
  const char *m_rt;    /* rows known at run time (-D ranges): their C expression over the
                          kernel's dims; m is then the upper bound, which sizes the scratch */
  const char *n_rt, *k_rt, *ldy_rt; /* the same for columns, depth and Y's row stride */
  bool deep;           /* each 32-column panel of a weight packed at compile time runs over all
                          depth blocks before the next (gk_layout: A packed whole, once) */
  int lp;              /* --precision bf16 (1) or fp16 (2): bfloat16 / float16 operands, float32
                          sums (emit_gemm_bf16.c) */
  bool bt;             /* bf16 conv on a small map computed transposed: pixels as the tiles'
                          rows (8-row granularity), the weight as W^T column panels
                          (bk_emit_conv_t) */
} Prod;


static inline int64_t up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* Columns of one parallel item. */
int64_t gk_par_ncw(int64_t m, int64_t n, int threads);
/* Large enough for packing to pay (GEMM_MIN_MACS). */
bool gk_worth_packing(const Prod *p);
/* A weight only this product reads: packed at compile time. */
bool gk_prepacked(const Value *v);
/* Lays out the scratch of the product (p->threads set): offsets and p->bytes. */
void gk_layout(Prod *p, const Window *win);
/* The plan gave node n the scratch product p needs. */
bool gk_scratch_ok(const EmitC *e, const Node *n, const Prod *p);
/* The blocked product (one thread); expects bb/ab/pix/xp declared as the operands need. */
void gk_emit_core(EmitC *e, const Prod *p, const Window *win);
/* The product as items claimed by every thread (emit_gemm.c has the details). */
void gk_emit_core_par(EmitC *e, const Prod *p, const Window *win, int64_t batch,
                      const char *const *setup, bool shared, int64_t nsetup,
                      void (*setup_item)(EmitC *, const Prod *, const Window *, int64_t));
/* Inside a task's item loop: items 0..ns-1 run `item` (tables the later items
 * read) and count themselves done; later items renumber from 0 and wait for
 * those ns. */
void gk_emit_setup_items(EmitC *e, const Prod *p, const Window *win, int64_t ns,
                         void (*item)(EmitC *, const Prod *, const Window *, int64_t));
/* How gk_emit_core_par cuts one matrix: nib row blocks x njb column blocks of
 * ncw columns; all_rows: column blocks of every row (emit_gemm.c). */
typedef struct ParSplit {
  int64_t nib, njb, ncw;
  bool all_rows;
} ParSplit;
ParSplit gk_par_split(const Prod *p);
/* Items per matrix of gk_emit_core_par. */
int64_t gk_par_per(const Prod *p);
void gk_declare_scratch(EmitC *e, const Prod *p);
/* Epilogue of the product's store (emit_gemm.c). */
void gk_set_epilogue(Prod *p, const Node *n, const char *base, const char *rb, const char *cb);
bool gk_is_f32(const Node *n);
/* Marks the node's function as running on every thread, unless one thread. */
bool gk_want_par(EmitC *e);
/* Product plan of a Conv; false when the fast path does not apply (emit_gemm_conv.c). */
bool gk_conv_prod(const Node *n, int threads, Prod *p, Window *w);

/* ---- --precision bf16 (emit_gemm_bf16.c, docs/precision.md) ------------------------
 * gk_lp: the product's reduced type (1 bf16, 2 fp16) from the node's onnxc.precision,
 * 0 for float32. With p->lp set, gk_layout, gk_declare_scratch,
 * gk_emit_core, gk_emit_core_par and gk_par_split hand over to their bk_
 * counterparts (static extents only), and the packed weights come from
 * bk_weight_data. */
int gk_lp(const Node *n);
void bk_layout(Prod *p, const Window *win);
void bk_declare_scratch(EmitC *e, const Prod *p);
void bk_emit_core(EmitC *e, const Prod *p, const Window *win);
ParSplit bk_par_split(const Prod *p);
/* Takes the transposed form for a bf16 conv where it wastes fewer rows (sets bt, the scratch). */
bool bk_conv_t(Prod *p, const Window *w, int64_t batch);
bool bk_emit_conv_t(EmitC *e, const Node *n, const Prod *p, const Window *w, bool shared);
void bk_emit_core_par(EmitC *e, const Prod *p, const Window *win, int64_t batch, const char *const *setup,
                      bool shared, int64_t nsetup,
                      void (*setup_item)(EmitC *, const Prod *, const Window *, int64_t));
int64_t bk_weight_numel(const Prod *p, const Node *n, const Value *v);
const Tensor *bk_weight_data(const Prod *p, const Node *n, const Value *v, Arena *a);

#endif
