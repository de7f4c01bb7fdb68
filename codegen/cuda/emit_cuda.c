/* emit_cuda.c - the CUDA target: kernels, host code on the driver API, header.
 *
 * The same planned graph and memory plan as the C target (emit_c.c): one
 * device arena with the plan's offsets, caller-owned device inputs and
 * outputs, weights uploaded once by NAME_init. Output (docs/cuda.md):
 *   NAME.cu          one extern "C" __global__ kernel per node, named and
 *                    commented after it: a parallel kernel where
 *                    emit_cuda_kernels.c has one, else the C target's body
 *                    (the emitc_<Op> hook) run by a single thread
 *   NAME.c           host code: NAME_init loads the module (an image from
 *                    NAME_cuda_image.c, written by the build) and uploads the
 *                    weights; NAME_run launches the kernels on a stream
 *   NAME.h           the ABI; NAME_weights.c/.h host copies of the weights
 * Views and in-place results share storage exactly as in the C target.
 * Strings (device pointers; constants uploaded by NAME_init), outputs of
 * data-dependent extent (device dims arrays) and ImageDecoder (the decoders
 * written as device code, onnxc_image.h) run the C bodies in one thread.
 */
#include "codegen_internal.h"
#include "cuda_emit.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern const char onnxc_cuda_rt_h_text[];

/* Offset of the dims sink in the context's status block (after the status
 * word): extents of data-dependent values that are no graph output. */
#define DIMS_SINK 128

/* Weights live in one device buffer; each at a 256-byte aligned offset. */
#define WEIGHT_ALIGN 256

typedef struct CudaGen {
  CGen cg;                  /* names and weights, as the C target has them */
  int64_t *woff;            /* by weight index: offset in the device weights */
  int64_t wbytes;           /* device weights, status word excluded */
  const char **in_param;    /* by graph input: parameter name */
  const char **kname;       /* kernels in launch order */
  const Value **sconst;     /* string constants: pointer table, then characters */
  int64_t *soff;            /* by string constant: offset of its pointer table */
  int64_t *schars;          /* by string constant: offset of its characters */
  int n_sconst;
  int n_kernels;
  int n_parallel;
  int n_ranged_fallback;    /* nodes with run-time extents in a single-thread kernel */
  bool grid_of;             /* some launch sizes its grid at run time (grid_of in NAME.c) */
  bool batch;               /* launch batching on (-O1 and above) */
  bool batch_prelude;       /* onnxc_idx3 written */
  int n_batched;            /* kernels launched in batches */
  int n_batches;
} CudaGen;

static int64_t bytes_of(const Value *v) {
  int64_t b = 0;
  IR_ASSERT(dtype_bytes(v->dt, cg_numel(v), &b));
  return b;
}

/* Strings are `onnxc_str` (const char *), as in the C target; on the device
 * these are device pointers (docs/cuda.md). */

static bool has_type(const Value *v) { return v->dt == DT_STRING || dtype_ctype(v->dt)[0]; }

/* Characters of a string constant, each NUL-terminated. */
static int64_t str_chars(const Value *v) {
  int64_t b = 0;
  for (int64_t i = 0; i < v->konst->numel; i++)
    b += (int64_t)strlen(((const char *const *)v->konst->data)[i]) + 1;
  return b;
}

static int output_slot(const Graph *g, const Value *v) {
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v)
      return i;
  return -1;
}

/* Parameter names as in the C target (in_*, out_*); weights by index. The
 * "C expression" of a value here is a CUdeviceptr expression in NAME_run. */
static bool assign_names(CudaGen *cu, Arena *a) {
  CGen *cg = &cu->cg;
  const Graph *g = cg->g;
  cg_param_names(cg, a);
  int n = 0;
  for (int i = 0; i < g->n_values; i++) {
    const Value *v = g->values[i];
    n += v->kind == VK_CONST && (v->n_uses > 0 || v->is_output);
  }
  cu->sconst = arena_alloc(a, (size_t)(n + 1) * sizeof(Value *));
  cu->soff = arena_alloc(a, (size_t)(n + 1) * sizeof(int64_t));
  cu->schars = arena_alloc(a, (size_t)(n + 1) * sizeof(int64_t));
  cg->weights = arena_alloc(a, (size_t)(n + 1) * sizeof(Value *));
  cg->weight_sym = arena_alloc(a, (size_t)(n + 1) * sizeof(char *));
  cu->woff = arena_alloc(a, (size_t)(n + 1) * sizeof(int64_t));
  for (int i = 0; i < g->n_values; i++) {
    const Value *v = g->values[i];
    if (v->kind != VK_CONST || !(v->n_uses > 0 || v->is_output))
      continue;
    if (v->dt == DT_STRING && v->konst->numel == 0) { /* nothing to read: any device address */
      cg->cname[v->id] = "ctx->w";
      continue;
    }
    if (v->dt == DT_STRING) { /* NAME_init uploads the characters and fills the pointers */
      int k = cu->n_sconst++;
      cu->sconst[k] = v;
      cu->soff[k] = cu->wbytes;
      cu->schars[k] = cu->wbytes + (bytes_of(v) + WEIGHT_ALIGN - 1) / WEIGHT_ALIGN * WEIGHT_ALIGN;
      cu->wbytes = cu->schars[k] + (str_chars(v) + WEIGHT_ALIGN - 1) / WEIGHT_ALIGN * WEIGHT_ALIGN;
      cg->cname[v->id] = arena_printf(a, "(ctx->w + %lld)", (long long)cu->soff[k]);
      continue;
    }
    if (!dtype_ctype(v->dt)[0])
      return diag_error(cg->d, v->n_uses ? v->uses[0] : NULL,
                        "constant '%s' has element type %s, which the CUDA target does not support",
                        v->name, dtype_name(v->dt));
    int w = cg->n_weights++;
    cg->weight_sym[w] = arena_printf(a, "%s_w%d", cg->o->name, w);
    cg->weights[w] = v;
    cu->woff[w] = cu->wbytes;
    cu->wbytes += (bytes_of(v) + WEIGHT_ALIGN - 1) / WEIGHT_ALIGN * WEIGHT_ALIGN;
    cg->cname[v->id] = arena_printf(a, "(ctx->w + %lld)", (long long)cu->woff[w]);
  }
  cu->in_param = arena_alloc(a, (size_t)(g->n_inputs + 1) * sizeof(char *));
  for (int i = 0; i < g->n_inputs; i++) {
    cu->in_param[i] = cg->cname[g->inputs[i]->id];
    cg->cname[g->inputs[i]->id] = arena_printf(a, "(CUdeviceptr)(uintptr_t)%s", cu->in_param[i]);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *v = g->outputs[i];
    if (v->kind == VK_NODE && output_slot(g, v) == i)
      cg->cname[v->id] = arena_printf(a, "(CUdeviceptr)(uintptr_t)%s", cg->out_param[i]);
  }
  return true;
}

/* Device address of a value in NAME_run: its root's storage plus offset. */
static const char *dev_expr(const CudaGen *cu, Arena *a, const Value *v) {
  const Plan *p = cu->cg.plan;
  const Value *root = v;
  int64_t sub = 0;
  if (p->alias && p->alias[v->id] >= 0) {
    root = cu->cg.g->values[p->alias[v->id]];
    sub = p->alias_offset ? p->alias_offset[v->id] : 0;
  }
  if (cu->cg.cname[root->id])
    return sub ? arena_printf(a, "%s + %lld", cu->cg.cname[root->id], (long long)sub) : cu->cg.cname[root->id];
  int64_t off = p->offset[v->id];
  IR_ASSERT(off >= 0);
  return arena_printf(a, "a + %lld", (long long)off);
}

static int64_t scratch_of(const Plan *p, const Node *n) { return p->scratch_size ? p->scratch_size[n->id] : 0; }

static bool check_types(const CudaGen *cu, const Node *n) {
  /* Strings: only the kernels of emit_string.c and views, as in the C target. */
  bool str_ok = string_node_ok(n) || (cu->cg.plan->elided && cu->cg.plan->elided[n->id]);
  for (int i = 0; i < n->n_in; i++)
    if (n->in[i]->kind != VK_NONE && !dtype_ctype(n->in[i]->dt)[0] && !(str_ok && n->in[i]->dt == DT_STRING))
      return diag_error(cu->cg.d, n, "input %d has element type %s, which the CUDA target does not support",
                        i, dtype_name(n->in[i]->dt));
  for (int i = 0; i < n->n_out; i++)
    if (n->out[i]->kind != VK_NONE && !dtype_ctype(n->out[i]->dt)[0] && !(str_ok && n->out[i]->dt == DT_STRING))
      return diag_error(cu->cg.d, n, "output %d has element type %s, which the CUDA target does not support",
                        i, dtype_name(n->out[i]->dt));
  return true;
}

/* "const float *X0, float *Y0, unsigned char *S, int *onnxc_status"; a node
 * with run-time extents (n_dims > 0) takes the run's dims by value before the
 * status: "int64_t onnxc_d0, ..." (emit_cuda_dyn.c). */
static const char *param_list_dims(Arena *a, const Plan *p, const Node *n, bool with_status, int n_dims);
static const char *param_list(Arena *a, const Plan *p, const Node *n, bool with_status) {
  return param_list_dims(a, p, n, with_status, 0);
}

static const char *param_list_dims(Arena *a, const Plan *p, const Node *n, bool with_status, int n_dims) {
  Buf b;
  buf_init(&b);
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i))
      buf_printf(&b, "%sconst %s *X%d", b.len ? ", " : "", cg_ctype(n->in[i]), i);
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i))
      buf_printf(&b, "%s%s *Y%d", b.len ? ", " : "", cg_ctype(n->out[i]), i);
  for (int i = 0; i < n->n_out; i++) /* data-dependent extents (docs/abi.md) */
    if (ec_has_output(n, i) && n->out[i]->dyn_dims)
      buf_printf(&b, "%sint64_t *D%d", b.len ? ", " : "", i);
  if (scratch_of(p, n) > 0)
    buf_printf(&b, "%sunsigned char *S", b.len ? ", " : "");
  for (int k = 0; k < n_dims; k++)
    buf_printf(&b, "%sint64_t onnxc_d%d", b.len ? ", " : "", k);
  if (with_status)
    buf_printf(&b, "%sint *onnxc_status", b.len ? ", " : "");
  const char *s = arena_strdup(a, b.s ? b.s : "void");
  buf_free(&b);
  return s;
}

/* The C target's body for n, run by one thread, or by one thread per
 * iteration when the body is one flat loop (ec_flat_for). */
static bool emit_fallback(CudaGen *cu, Arena *a, const Node *n, const char *fn, Buf *cu_src, CudaKernel *k,
                          int n_dims) {
  Buf body;
  buf_init(&body);
  EmitC e = {cu->cg.g, cu->cg.plan, &body, 0, cu->cg.d, cu->cg.o->name, 1, false, true, 0, 0, NULL, NULL, 0, 0, 0};
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i))
      ec_line(&e, "(void)X%d;", i);
  /* run-time extents: emit_dyn.c's C body over `dims`, in one thread */
  bool ok = n_dims ? dyn_emit_body(&e, n) : cg_emit_body(&e, n);
  if (!ok) {
    buf_free(&body);
    if (cu->cg.d->n_errors == 0)
      diag_error(cu->cg.d, n, "the C emitter failed for this node");
    return false;
  }
  bool scratch = scratch_of(cu->cg.plan, n) > 0;
  const char *bp = param_list(a, cu->cg.plan, n, false);
  if (n_dims) /* emit_dyn.c's bodies read the run's dims[] */
    bp = strcmp(bp, "void") ? arena_printf(a, "%s, const int64_t *dims", bp) : "const int64_t *dims";
  buf_printf(cu_src, "static __device__ int %s_body(%s) {\n%s%s  return ONNXC_OK;\n}\n", fn, bp,
             scratch ? "  (void)S;\n" : "", body.s ? body.s : "");
  if (!n_dims && e.flat_loops == 1 && e.flat_n > 0) {
    k->block[0] = 256;
    k->grid[0] = cuda_blocks_for(e.flat_n, 256);
    buf_printf(cu_src, "/* %s: the C target's flat loop, one thread per element */\n", n->op_type);
  } else {
    buf_printf(cu_src, n_dims ? "/* single thread: no parallel kernel with run-time extents for %s yet */\n"
                             : "/* single thread: no parallel kernel for %s yet */\n", n->op_type);
  }
  buf_printf(cu_src, "extern \"C\" __global__ void %s(%s) {\n", fn, param_list_dims(a, cu->cg.plan, n, true, n_dims));
  if (n_dims) {
    buf_printf(cu_src, "  const int64_t dims[%d] = {", n_dims);
    for (int i = 0; i < n_dims; i++)
      buf_printf(cu_src, "%sonnxc_d%d", i ? ", " : "", i);
    buf_puts(cu_src, "};\n");
  }
  buf_printf(cu_src, "  onnxc_cuda_report(onnxc_status, %s_body(", fn);
  bool first = true;
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i)) {
      buf_printf(cu_src, "%sX%d", first ? "" : ", ", i);
      first = false;
    }
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i)) {
      buf_printf(cu_src, "%sY%d", first ? "" : ", ", i);
      first = false;
    }
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i) && n->out[i]->dyn_dims) {
      buf_printf(cu_src, "%sD%d", first ? "" : ", ", i);
      first = false;
    }
  if (scratch) {
    buf_printf(cu_src, "%sS", first ? "" : ", ");
    first = false;
  }
  if (n_dims)
    buf_printf(cu_src, "%sdims", first ? "" : ", ");
  buf_puts(cu_src, "));\n}\n\n");
  buf_free(&body);
  return true;
}

static void emit_elided(CudaGen *cu, Arena *a, const Node *n, Buf *run) {
  buf_puts(run, "  /* '");
  cg_comment_safe(run, n->name);
  buf_printf(run, "' (%s): ", n->op_type);
  if (n->op == OP_Concat) {
    buf_puts(run, "its inputs were written in place, no kernel */\n");
    return;
  }
  buf_puts(run, "a view of ");
  cg_comment_safe(run, dev_expr(cu, a, n->in[0]));
  buf_puts(run, ", no kernel */\n");
}

/* ---- launch batching --------------------------------------------------------
 * Consecutive kernels of the schedule that are small (at most BATCH_BLOCKS
 * blocks of one dimension, the same block size, no dynamic shared memory, no
 * scratch) and touch no common bytes where one of them writes are launched
 * together: each becomes a __device__ function of its own block index and
 * grid (blockIdx and gridDim are macros for its parameters while it is
 * defined), and one kernel runs them side by side, each on its own range of
 * blocks. A batch saves the launches (and the gaps between them) of kernels
 * too small to fill the GPU. */
#define BATCH_BLOCKS 64
#define BATCH_KERNELS 8
#define BATCH_PARAMS 32 /* pointer parameters of a batch, status included */

/* A kernel whose launch is held for batching (emit_node). */
typedef struct Batched Batched;
struct Batched {
  const Node *n;
  const char *fn, *params; /* name, parameter list (status last) */
  char *src;               /* its kernel text */
  const char *args;        /* device pointers of its parameters but the status */
  int n_args;
  int64_t grid;
  int block;
};

/* The kernels held so far and where their text goes when written. */
typedef struct Held {
  Batched *k;
  int n;
  Buf *src, *run, *notes; /* notes: the comments of views met while holding */
} Held;

static bool batchable(const CudaGen *cu, const Node *n, const CudaKernel *k, int r, int n_dims) {
  if (r != 1 || n_dims || k->shmem || k->rgrid[0] || k->rgrid[1] || k->rgrid[2] || k->grid[1] != 1 ||
      k->grid[2] != 1 || k->block[1] != 1 || k->block[2] != 1 || k->grid[0] > BATCH_BLOCKS ||
      scratch_of(cu->cg.plan, n) > 0)
    return false;
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i) && n->out[i]->dyn_dims)
      return false;
  return true;
}

/* The device pointers of n's parameters but the status, comma-separated
 * (as emit_node's launch lists them); their count in *count. */
static const char *launch_args(const CudaGen *cu, Arena *a, const Node *n, int *count) {
  Buf b;
  buf_init(&b);
  buf_puts(&b, "");
  int np = 0;
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i))
      buf_printf(&b, "%s%s", np++ ? ", " : "", dev_expr(cu, a, n->in[i]));
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i))
      buf_printf(&b, "%s%s", np++ ? ", " : "", dev_expr(cu, a, n->out[i]));
  *count = np;
  const char *s = arena_strdup(a, b.s);
  buf_free(&b);
  return s;
}

/* The bytes value v occupies: its buffer (space: the arena, -1, or the value
 * that names a caller's or weight buffer) and byte range [lo, hi). */
static void value_bytes_at(const CudaGen *cu, const Value *v, int *space, int64_t *lo, int64_t *hi) {
  const Plan *p = cu->cg.plan;
  const Value *root = v;
  int64_t sub = 0;
  if (p->alias && p->alias[v->id] >= 0) {
    root = cu->cg.g->values[p->alias[v->id]];
    sub = p->alias_offset ? p->alias_offset[v->id] : 0;
  }
  if (cu->cg.cname[root->id]) {
    *space = root->id;
    *lo = sub;
  } else {
    *space = -1;
    *lo = p->offset[v->id];
  }
  *hi = *lo + bytes_of(v);
}

/* Whether a and b may run at the same time: no byte that one writes is read
 * or written by the other (the plan reuses arena bytes across steps). */
static bool independent(const CudaGen *cu, const Node *a, const Node *b) {
  for (int x = 0; x < a->n_in + a->n_out; x++) {
    bool aw = x >= a->n_in;
    const Value *u = aw ? a->out[x - a->n_in] : a->in[x];
    if (aw ? !ec_has_output(a, x - a->n_in) : !ir_has_input(a, x))
      continue;
    for (int y = 0; y < b->n_in + b->n_out; y++) {
      bool bw = y >= b->n_in;
      const Value *v = bw ? b->out[y - b->n_in] : b->in[y];
      if ((bw ? !ec_has_output(b, y - b->n_in) : !ir_has_input(b, y)) || (!aw && !bw))
        continue;
      int su, sv;
      int64_t lu, hu, lv, hv;
      value_bytes_at(cu, u, &su, &lu, &hu);
      value_bytes_at(cu, v, &sv, &lv, &hv);
      if (su == sv && lu < hv && lv < hu)
        return false;
    }
  }
  return true;
}

/* One launch (launch block of NAME.c) of kernel kid with the given arguments. */
static void write_launch(Buf *run, int kid, const char *args, int n_args, int64_t grid, int block) {
  buf_printf(run, "  {\n    CUdeviceptr p[] = {%s%sctx->status};\n    void *args[] = {", args, n_args ? ", " : "");
  for (int i = 0; i <= n_args; i++)
    buf_printf(run, "%s&p[%d]", i ? ", " : "", i);
  buf_printf(run, "};\n    if ((r = cuLaunchKernel(ctx->fn[%d], %lldu, 1u, 1u, %d, 1, 1, 0, s, args, NULL)) "
                  "!= CUDA_SUCCESS)\n      return fail(ctx, r);\n  }\n",
             kid, (long long)grid, block);
}

static void launch_comment(Buf *run, const Node *n) {
  buf_puts(run, "  /* '");
  cg_comment_safe(run, n->name);
  buf_printf(run, "' (%s) */\n", n->op_type);
}

/* Writes the held kernels b[0..nb) (their kernel text to src, their launch
 * to run): alone, or as one batch. */
static void write_batch(CudaGen *cu, Arena *a, Batched *b, int nb, Buf *src, Buf *run) {
  int kid = cu->n_kernels++;
  if (nb == 1) {
    buf_puts(src, b[0].src);
    cu->kname[kid] = b[0].fn;
    launch_comment(run, b[0].n);
    write_launch(run, kid, b[0].args, b[0].n_args, b[0].grid, b[0].block);
    return;
  }
  if (!cu->batch_prelude) {
    cu->batch_prelude = true;
    buf_puts(src, "/* Batched launches: a kernel's block index and grid as its parameters. */\n"
                  "struct onnxc_idx3 {\n  unsigned x, y, z;\n};\n"
                  "static __device__ inline onnxc_idx3 onnxc_idx(unsigned x, unsigned y, unsigned z) {\n"
                  "  onnxc_idx3 r;\n  r.x = x;\n  r.y = y;\n  r.z = z;\n  return r;\n}\n\n");
  }
  Buf params, body, args;
  buf_init(&params);
  buf_init(&body);
  buf_init(&args);
  buf_puts(&args, "");
  int64_t at = 0;
  int n_args = 0;
  for (int m = 0; m < nb; m++) {
    /* the kernel as a device function of its own block index and grid */
    const char *head = arena_printf(a, "extern \"C\" __global__ void %s(%s) {\n", b[m].fn, b[m].params);
    char *h = strstr(b[m].src, head);
    IR_ASSERT(h);
    buf_write(src, b[m].src, (size_t)(h - b[m].src));
    buf_printf(src, "#define blockIdx onnxc_vblock\n#define gridDim onnxc_vgrid\n"
                    "static __device__ void %s(%s, const onnxc_idx3 onnxc_vblock, const onnxc_idx3 onnxc_vgrid) {\n"
                    "  (void)onnxc_vblock;\n  (void)onnxc_vgrid;\n",
               b[m].fn, b[m].params);
    buf_puts(src, h + strlen(head));
    buf_puts(src, "#undef blockIdx\n#undef gridDim\n\n");
    /* its parameters in the batch: k<m>_NAME, the status shared */
    buf_printf(&body, "  %sif (b < %lldu)\n    %s(", m ? "else " : "", (long long)(at + b[m].grid), b[m].fn);
    const char *p = b[m].params;
    while (*p) {
      const char *end = strstr(p, ", ");
      size_t len = end ? (size_t)(end - p) : strlen(p);
      const char *star = NULL;
      for (const char *q = p; q < p + len; q++)
        if (*q == '*')
          star = q;
      IR_ASSERT(star);
      if (strncmp(star + 1, "onnxc_status", 12) != 0) {
        buf_printf(&params, "%.*sk%d_%.*s, ", (int)(star + 1 - p), p, m, (int)(p + len - star - 1), star + 1);
        buf_printf(&body, "k%d_%.*s, ", m, (int)(p + len - star - 1), star + 1);
      }
      p = end ? end + 2 : p + len;
    }
    buf_printf(&body, "onnxc_status, onnxc_idx(b - %lldu, 0u, 0u), onnxc_idx(%lldu, 1u, 1u));\n", (long long)at,
               (long long)b[m].grid);
    buf_printf(&args, "%s%s", n_args ? ", " : "", b[m].args);
    n_args += b[m].n_args;
    at += b[m].grid;
  }
  const char *fn = arena_printf(a, "%s_batch", b[0].fn);
  buf_printf(src, "/* batched launch: %d independent small kernels, each on its range of %lld blocks */\n"
                  "extern \"C\" __global__ void %s(%sint *onnxc_status) {\n  const unsigned b = blockIdx.x;\n%s}\n\n",
             nb, (long long)at, fn, params.s ? params.s : "", body.s);
  cu->kname[kid] = fn;
  cu->n_batched += nb;
  cu->n_batches++;
  buf_printf(run, "  /* one launch, %d kernels:", nb);
  for (int m = 0; m < nb; m++) {
    buf_puts(run, m ? ", '" : " '");
    cg_comment_safe(run, b[m].n->name);
    buf_printf(run, "' (%s)", b[m].n->op_type);
  }
  buf_puts(run, " */\n");
  write_launch(run, kid, args.s, n_args, at, b[0].block);
  buf_free(&params);
  buf_free(&body);
  buf_free(&args);
}

/* Writes the held kernels, batched where they may be: runs of consecutive
 * independent kernels of one block size; then the views' comments. */
static void flush_held(CudaGen *cu, Arena *a, Held *hd) {
  Batched *held = hd->k;
  int *n_held = &hd->n;
  Buf *src = hd->src, *run = hd->run;
  int i = 0;
  while (i < *n_held) {
    int j = i + 1, params = held[i].n_args + 1;
    while (j < *n_held && j - i < BATCH_KERNELS && held[j].block == held[i].block &&
           params + held[j].n_args <= BATCH_PARAMS) {
      bool ok = true;
      for (int m = i; m < j && ok; m++)
        ok = independent(cu, held[m].n, held[j].n);
      if (!ok)
        break;
      params += held[j].n_args;
      j++;
    }
    write_batch(cu, a, held + i, j - i, src, run);
    i = j;
  }
  *n_held = 0;
  buf_puts(run, hd->notes->s);
  hd->notes->len = 0;
  hd->notes->s[0] = 0;
}

/* Emits n's kernel into cu_src and its launch into run; with hd (launch
 * batching), a small kernel is held in hd instead, and any other launch
 * first writes those held (flush_held), so launches keep the schedule's order. */
static bool emit_node(CudaGen *cu, Arena *a, const Node *n, int step, Buf *cu_src, Buf *run, Held *hd) {
  if (!check_types(cu, n))
    return false;
  const Plan *p = cu->cg.plan;
  if (p->elided && p->elided[n->id]) {
    emit_elided(cu, a, n, run);
    return true;
  }
  const char *fn = arena_printf(a, "node%d_%s", step, n->op_type);
  buf_puts(cu_src, "/* node '");
  cg_comment_safe(cu_src, n->name);
  buf_printf(cu_src, "' (%s) */\n", n->op_type);
  /* -D ranges: a node whose shapes depend on them gets a kernel with run-time
   * extents (emit_cuda_dyn.c), the run's dims passed by value */
  int n_dims = cu->cg.g->n_syms > 0 && dyn_node_is_dynamic(n) ? cu->cg.g->n_syms : 0;
  CudaKernel k = {cu->cg.g, p, cu->cg.d, cu_src, fn, param_list_dims(a, p, n, true, n_dims), {1, 1, 1}, {1, 1, 1}, 0,
                  {NULL, NULL, NULL}};
  /* Strings and data-dependent extents: the C target's body (emit_string.c,
   * emit_dynamic.c) in one thread. */
  bool host_flavoured = false;
  for (int i = 0; i < n->n_in; i++)
    host_flavoured |= ir_has_input(n, i) && n->in[i]->dt == DT_STRING;
  for (int i = 0; i < n->n_out; i++)
    host_flavoured |= ec_has_output(n, i) && (n->out[i]->dt == DT_STRING || n->out[i]->dyn_dims);
  int r = host_flavoured ? 0 : n_dims ? cuda_emit_ranged(&k, n, a) : cuda_emit_parallel(&k, n);
  if (r < 0)
    return false;
  if (r == 0) {
    k.grid[0] = k.grid[1] = k.grid[2] = 1;
    k.block[0] = k.block[1] = k.block[2] = 1;
    k.rgrid[0] = k.rgrid[1] = k.rgrid[2] = NULL;
    k.shmem = 0;
    if (!emit_fallback(cu, a, n, fn, cu_src, &k, n_dims))
      return false;
    r = k.block[0] > 1;
    if (n_dims)
      cu->n_ranged_fallback++;
  }
  cu->n_parallel += r;
  if (hd && batchable(cu, n, &k, r, n_dims)) { /* held: its launch may join a batch */
    Batched *bl = &hd->k[hd->n++];
    bl->n = n;
    bl->fn = fn;
    bl->params = k.params;
    bl->grid = k.grid[0];
    bl->block = k.block[0];
    bl->args = launch_args(cu, a, n, &bl->n_args);
    bl->src = arena_strdup(a, cu_src->s);
    cu_src->len = 0;
    cu_src->s[0] = 0;
    return true;
  }
  if (hd) /* the held kernels launch first, in their order */
    flush_held(cu, a, hd);
  int kid = cu->n_kernels++;
  cu->kname[kid] = fn;
  buf_puts(run, "  /* '");
  cg_comment_safe(run, n->name);
  buf_printf(run, "' (%s) */\n  {\n    CUdeviceptr p[] = {", n->op_type);
  int np = 0;
  for (int i = 0; i < n->n_in; i++)
    if (ir_has_input(n, i))
      buf_printf(run, "%s%s", np++ ? ", " : "", dev_expr(cu, a, n->in[i]));
  for (int i = 0; i < n->n_out; i++)
    if (ec_has_output(n, i))
      buf_printf(run, "%s%s", np++ ? ", " : "", dev_expr(cu, a, n->out[i]));
  for (int i = 0; i < n->n_out; i++) {
    if (!ec_has_output(n, i) || !n->out[i]->dyn_dims)
      continue;
    int slot = output_slot(cu->cg.g, n->out[i]);
    if (slot >= 0)
      buf_printf(run, "%s(CUdeviceptr)(uintptr_t)%s_dims", np++ ? ", " : "", cu->cg.out_param[slot]);
    else /* not a graph output (unused): the extent goes to the sink */
      buf_printf(run, "%sctx->status + %d", np++ ? ", " : "", DIMS_SINK);
  }
  if (scratch_of(p, n) > 0)
    buf_printf(run, "%sa + %lld", np++ ? ", " : "", (long long)p->scratch_offset[n->id]);
  buf_printf(run, "%sctx->status};\n    void *args[] = {", np++ ? ", " : "");
  for (int i = 0; i < np - 1; i++)
    buf_printf(run, "%s&p[%d]", i ? ", " : "", i);
  for (int i = 0; i < n_dims; i++) /* the run's dims, by value (emit_cuda_dyn.c) */
    buf_printf(run, "%s&dims[%d]", np > 1 || i ? ", " : "", i);
  buf_printf(run, "%s&p[%d]", np > 1 || n_dims ? ", " : "", np - 1);
  if (k.rgrid[0] || k.rgrid[1] || k.rgrid[2]) {
    const char *gx[3];
    cu->grid_of = true;
    for (int i = 0; i < 3; i++)
      gx[i] = k.rgrid[i] ? k.rgrid[i] : arena_printf(a, "%lldu", (long long)k.grid[i]);
    buf_printf(run, "};\n    if ((r = cuLaunchKernel(ctx->fn[%d], %s, %s, %s, %d, %d, %d, %d, s, args, NULL)) "
                    "!= CUDA_SUCCESS)\n      return fail(ctx, r);\n  }\n",
               kid, gx[0], gx[1], gx[2], k.block[0], k.block[1], k.block[2], k.shmem);
    return true;
  }
  buf_printf(run, "};\n    if ((r = cuLaunchKernel(ctx->fn[%d], %lldu, %lldu, %lldu, %d, %d, %d, %d, s, args, NULL)) "
                  "!= CUDA_SUCCESS)\n      return fail(ctx, r);\n  }\n",
             kid, (long long)k.grid[0], (long long)k.grid[1], (long long)k.grid[2], k.block[0], k.block[1],
             k.block[2], k.shmem);
  return true;
}

/* Graph outputs that no kernel writes directly: inputs, constants, repeats. */
static void emit_output_copies(CudaGen *cu, Arena *a, Buf *run) {
  const Graph *g = cu->cg.g;
  for (int i = 0; i < g->n_outputs; i++) {
    const Value *v = g->outputs[i];
    int slot = output_slot(g, v);
    if (v->kind == VK_NODE && slot == i)
      continue;
    if (bytes_of(v) == 0)
      continue;
    const char *src = v->kind == VK_NODE ? arena_printf(a, "(CUdeviceptr)(uintptr_t)%s", cu->cg.out_param[slot])
                                         : dev_expr(cu, a, v);
    const char *bytes = arena_printf(a, "%lldu", (long long)bytes_of(v));
    if (g->n_syms > 0 && !shape_is_static(&v->shape) && shape_is_bounded(&v->shape) && dtype_bits(v->dt) >= 8)
      /* extents known at run time: this run's elements (the caller's buffer holds no more) */
      bytes = arena_printf(a, "(size_t)(%s) * %du", dyn_numel_c(v, a), dtype_bits(v->dt) / 8);
    buf_printf(run, "  /* output '");
    cg_comment_safe(run, v->name);
    buf_printf(run, "' */\n  if ((r = cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)%s, %s, %s, s)) != CUDA_SUCCESS)\n"
                    "    return fail(ctx, r);\n", cu->cg.out_param[i], src, bytes);
    if (v->dyn_dims && slot >= 0) /* a dynamic output listed twice: its extent too */
      buf_printf(run, "  if ((r = cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)%s_dims, (CUdeviceptr)(uintptr_t)%s_dims, "
                      "%du, s)) != CUDA_SUCCESS)\n    return fail(ctx, r);\n",
                 cu->cg.out_param[i], cu->cg.out_param[slot], 8 * v->shape.rank);
  }
}

static void upper(const char *nm, char *up, size_t n) {
  size_t k = 0;
  for (; nm[k] && k < n - 1; k++)
    up[k] = (char)toupper((unsigned char)nm[k]);
  up[k] = 0;
}

static void run_params(const CudaGen *cu, Buf *b) {
  const Graph *g = cu->cg.g;
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(b, ", const %s *%s", cg_ctype(g->inputs[i]), cu->in_param[i]);
  for (int i = 0; i < g->n_outputs; i++) {
    buf_printf(b, ", %s *%s", cg_ctype(g->outputs[i]), cu->cg.out_param[i]);
    if (g->outputs[i]->dyn_dims)
      buf_printf(b, ", int64_t *%s_dims", cu->cg.out_param[i]);
  }
}

/* `, in_x, out_y` (the parameters' names, for forwarding calls). */
static void run_args(const CudaGen *cu, Buf *b) {
  const Graph *g = cu->cg.g;
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(b, ", %s", cu->in_param[i]);
  for (int i = 0; i < g->n_outputs; i++) {
    buf_printf(b, ", %s", cu->cg.out_param[i]);
    if (g->outputs[i]->dyn_dims)
      buf_printf(b, ", %s_dims", cu->cg.out_param[i]);
  }
}

/* -D ranges (docs/dynamic-shapes.md): the C target's additions, with the
 * CUDA entry points' context, stream and device pointers. */
static void write_header_dims(const CudaGen *cu, const char *up, Buf *h) {
  const Graph *g = cu->cg.g;
  const char *nm = cu->cg.o->name;
  buf_printf(h, "\n/* Dims kept symbolic within a range (-D NAME=LO..HI, docs/dynamic-shapes.md).\n"
                " * %s_run_dims takes their values in dims[] (a host array, indexed by the\n"
                " * %s_DIM_* macros); every extent above then follows from them, and each\n"
                " * input and output holds exactly that many elements (the _NUMEL macros are\n"
                " * the counts at the upper bounds). A dim outside its range returns\n"
                " * ONNXC_ERR_DIM before anything is enqueued. %s_run runs with every dim at\n"
                " * its upper bound. %s_arena_bytes(dims) is the device arena a run with\n"
                " * those dims touches (at most %s_ARENA_BYTES; -1 when a dim is out of range). */\n"
                "#define %s_NUM_DIMS %d\n",
             nm, up, nm, nm, up, up, dx_user_syms(g));
  for (int k = 0; k < dx_user_syms(g); k++) {
    Buf m;
    buf_init(&m);
    buf_printf(&m, "%s_DIM_", up);
    for (const char *q = g->syms[k].name; *q; q++)
      buf_putc(&m, isalnum((unsigned char)*q) ? (char)toupper((unsigned char)*q) : '_');
    buf_printf(h, "#define %s %d /* %s */\n#define %s_MIN %lld\n#define %s_MAX %lld\n", m.s, k, g->syms[k].name, m.s,
               (long long)g->syms[k].lo, m.s, (long long)g->syms[k].hi);
    buf_free(&m);
  }
  buf_printf(h, "int %s_run_dims(%s_ctx *ctx, void *stream, void *arena, const int64_t *dims", nm, nm);
  run_params(cu, h);
  buf_printf(h, ");\nint %s_run_dims_v(%s_ctx *ctx, void *stream, void *arena, const int64_t *dims,\n"
                "                   const void *const *inputs, void *const *outputs);\n"
                "int64_t %s_arena_bytes(const int64_t *dims);\n", nm, nm, nm);
}

static void write_header(const CudaGen *cu, Buf *h) {
  const Graph *g = cu->cg.g;
  const char *nm = cu->cg.o->name;
  char up[256], sb[512];
  upper(nm, up, sizeof up);
  buf_printf(h, "/* %s.h - generated by onnxc %s (CUDA target) from %s. Do not edit.\n *\n", nm, ONNXC_VERSION,
             cu->cg.o->model_path ? cu->cg.o->model_path : "a model");
  buf_printf(h,
             " * With a CUDA context current on the calling thread (docs/cuda.md):\n"
             " *   %s_init(&ctx)   loads the kernels and uploads the weights (once)\n"
             " *   %s_run(ctx, stream, arena, inputs..., outputs...) enqueues the model on\n"
             " *       `stream` (a CUstream; NULL: the default stream). arena, inputs and\n"
             " *       outputs are device pointers; arena holds %s_ARENA_BYTES bytes,\n"
             " *       aligned to 256. No allocation, no synchronization.\n"
             " *   %s_status(ctx, stream) waits for the stream and returns what the\n"
             " *       kernels of the last run reported (ONNXC_ERR_BAD_INDEX...)\n"
             " *   %s_free(ctx)    releases the module and the weights\n"
             " * All return 0 (ONNXC_OK) on success; ONNXC_ERR_CUDA when a driver call\n"
             " * failed, its CUresult then given by %s_cuda_error(ctx).\n",
             nm, nm, up, nm, nm, nm);
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(h, " *   input  %d: %s %s%s\n", i, g->inputs[i]->name, dtype_name(g->inputs[i]->dt),
               shape_str(&g->inputs[i]->shape, sb, sizeof sb));
  for (int i = 0; i < g->n_outputs; i++)
    buf_printf(h, " *   output %d: %s %s%s\n", i, g->outputs[i]->name, dtype_name(g->outputs[i]->dt),
               shape_str(&g->outputs[i]->shape, sb, sizeof sb));
  buf_printf(h, " */\n#ifndef %s_H\n#define %s_H\n\n#include <stdint.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
             up, up);
  buf_printf(h, "#define %s_ARENA_BYTES %lld\n", up, (long long)cu->cg.plan->arena_bytes);
  buf_printf(h, "#define %s_WEIGHT_BYTES %lld\n", up, (long long)cu->wbytes);
  buf_printf(h, "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n", up, g->n_inputs, up, g->n_outputs);
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(h, "#define %s_INPUT%d_NUMEL %lld\n", up, i, (long long)cg_numel(g->inputs[i]));
  for (int i = 0; i < g->n_outputs; i++) {
    buf_printf(h, "#define %s_OUTPUT%d_NUMEL %lld\n", up, i, (long long)cg_numel(g->outputs[i]));
    if (g->outputs[i]->dyn_dims) /* NUMEL is then the capacity (docs/abi.md) */
      buf_printf(h, "#define %s_OUTPUT%d_DYNAMIC 1\n#define %s_OUTPUT%d_RANK %d\n", up, i, up, i,
                 g->outputs[i]->shape.rank);
  }
  bool strings = false; /* string elements: device pointers (docs/cuda.md) */
  for (int i = 0; i < g->n_inputs + g->n_outputs; i++)
    strings |= (i < g->n_inputs ? g->inputs[i] : g->outputs[i - g->n_inputs])->dt == DT_STRING;
  if (strings)
    buf_puts(h, "\n/* A string element: a device pointer to NUL-terminated UTF-8 in device memory. */\n"
                "#ifndef ONNXC_STR_DEFINED\n#define ONNXC_STR_DEFINED\ntypedef const char *onnxc_str;\n#endif\n");
  buf_printf(h, "\ntypedef struct %s_ctx %s_ctx;\n\n", nm, nm);
  buf_printf(h, "int %s_init(%s_ctx **ctx);\n", nm, nm);
  buf_printf(h, "/* Same, loading `image` (a cubin, fatbin or PTX the caller built from %s.cu)\n"
                " * instead of the embedded ones; NULL: the embedded ones. */\n"
                "int %s_init_image(%s_ctx **ctx, const void *image);\n", nm, nm, nm);
  buf_printf(h, "int %s_run(%s_ctx *ctx, void *stream, void *arena", nm, nm);
  run_params(cu, h);
  buf_puts(h, ");\n");
  buf_printf(h, "/* Same, with inputs and outputs as arrays in graph order (for generic callers);\n"
                " * the dims arrays of data-dependent outputs follow the outputs, in output order. */\n"
                "int %s_run_v(%s_ctx *ctx, void *stream, void *arena, const void *const *inputs, void *const *outputs);\n",
             nm, nm);
  buf_printf(h, "int %s_status(%s_ctx *ctx, void *stream);\nint %s_cuda_error(const %s_ctx *ctx);\n"
                "void %s_free(%s_ctx *ctx);\n", nm, nm, nm, nm, nm, nm);
  if (dx_user_syms(g) > 0)
    write_header_dims(cu, up, h);
  buf_puts(h, "\n#ifdef __cplusplus\n}\n#endif\n\n#endif\n");
}

/* NAME.c: context, init (image choice, weights), run, status, free. */
static void write_host(const CudaGen *cu, Buf *c, const Buf *run) {
  const Graph *g = cu->cg.g;
  const char *nm = cu->cg.o->name;
  buf_printf(c, "/* %s.c - generated by onnxc %s (CUDA target, host code) from %s. Do not edit. */\n", nm,
             ONNXC_VERSION, cu->cg.o->model_path ? cu->cg.o->model_path : "a model");
  buf_printf(c, "#include <cuda.h>\n#include <stdlib.h>\n#include <string.h>\n#include \"%s.h\"\n#include \"%s_weights.h\"\n"
                "#include \"onnxc_rt.h\"\n\n", nm, nm);
  buf_printf(c, "/* Images compiled by NVRTC (%s_cuda_image.c): cubins, then PTX (arch 0). */\n"
                "extern const int %s_cuda_n_images;\nextern const int %s_cuda_image_arch[];\n"
                "extern const unsigned char *const %s_cuda_images[];\n\n", nm, nm, nm, nm);
  buf_printf(c, "#define N_KERNELS %d\n#define WEIGHT_BYTES %lldu\n\n", cu->n_kernels, (long long)cu->wbytes);
  for (int k = 0; k < cu->n_sconst; k++) { /* string constants: their characters, each NUL-terminated */
    const Value *v = cu->sconst[k];
    buf_printf(c, "/* string constant '");
    cg_comment_safe(c, v->name);
    buf_printf(c, "' (%lld strings) */\nstatic const char str%d[%lld] = {", (long long)v->konst->numel, k,
               (long long)str_chars(v));
    int64_t at = 0;
    for (int64_t i = 0; i < v->konst->numel; i++)
      for (const char *p = ((const char *const *)v->konst->data)[i];; p++) {
        buf_printf(c, "%s%d,", at++ % 16 ? " " : "\n  ", (int)(signed char)*p);
        if (!*p)
          break;
      }
    buf_puts(c, "\n};\n\n");
  }
  if (cu->n_sconst)
    buf_puts(c, "/* Uploads n strings (chars: each NUL-terminated) to device memory at `at`\n"
                " * and points the n device pointers at `table` to them. */\n"
                "static CUresult put_strings(CUdeviceptr table, CUdeviceptr at, const char *chars, size_t bytes, size_t n) {\n"
                "  CUdeviceptr t[64];\n  size_t i, k = 0, off = 0;\n  CUresult r;\n"
                "  if ((r = cuMemcpyHtoD(at, chars, bytes)) != CUDA_SUCCESS)\n    return r;\n"
                "  for (i = 0; i < n; i++) {\n    t[k++] = at + off;\n    off += strlen(chars + off) + 1;\n"
                "    if (k == 64 || i + 1 == n) {\n"
                "      if ((r = cuMemcpyHtoD(table + 8 * (i + 1 - k), t, 8 * k)) != CUDA_SUCCESS)\n        return r;\n"
                "      k = 0;\n    }\n  }\n  return CUDA_SUCCESS;\n}\n\n");
  buf_printf(c, "static const char *const kernel_names[N_KERNELS + 1] = {");
  for (int i = 0; i < cu->n_kernels; i++)
    buf_printf(c, "%s\"%s\",", i % 4 ? " " : "\n  ", cu->kname[i]);
  buf_puts(c, "\n  NULL};\n\n");
  buf_printf(c, "struct %s_ctx {\n  CUmodule mod;\n  CUfunction fn[N_KERNELS + 1];\n"
                "  CUdeviceptr weights;  /* the weights, then the status word */\n"
                "  CUdeviceptr w;        /* == weights */\n  CUdeviceptr status;\n  CUresult err;\n};\n\n", nm);
  buf_printf(c, "static int fail(%s_ctx *ctx, CUresult r) {\n  ctx->err = r;\n  return ONNXC_ERR_CUDA;\n}\n\n", nm);
  /* init */
  buf_printf(c, "static int load_module(%s_ctx *ctx, const void *image) {\n"
                "  CUdevice dev;\n  int major = 0, minor = 0, i, pass;\n  CUresult r;\n"
                "  if (image)\n    return (r = cuModuleLoadData(&ctx->mod, image)) == CUDA_SUCCESS ? ONNXC_OK : fail(ctx, r);\n"
                "  if ((r = cuCtxGetDevice(&dev)) != CUDA_SUCCESS ||\n"
                "      (r = cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)) != CUDA_SUCCESS ||\n"
                "      (r = cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)) != CUDA_SUCCESS)\n"
                "    return fail(ctx, r);\n"
                "  /* The cubin of this exact architecture first, then whatever loads (PTX last). */\n"
                "  for (pass = 0; pass < 2; pass++)\n"
                "    for (i = 0; i < %s_cuda_n_images; i++) {\n"
                "      if (pass == 0 && %s_cuda_image_arch[i] != major * 10 + minor)\n        continue;\n"
                "      if (cuModuleLoadData(&ctx->mod, %s_cuda_images[i]) == CUDA_SUCCESS)\n        return ONNXC_OK;\n"
                "    }\n  return ONNXC_ERR_NO_CUDA_IMAGE;\n}\n\n", nm, nm, nm, nm);
  buf_printf(c, "ONNXC_API int %s_init_image(%s_ctx **out, const void *image) {\n  %s_ctx *ctx;\n  CUresult r;\n"
                "  int st, i;\n  if (!out)\n    return ONNXC_ERR_NULL_ARG;\n  *out = NULL;\n"
                "  ctx = (%s_ctx *)calloc(1, sizeof *ctx);\n  if (!ctx)\n    return ONNXC_ERR_NO_MEMORY;\n"
                "  if ((st = load_module(ctx, image)) != ONNXC_OK) {\n    free(ctx);\n    return st;\n  }\n"
                "  for (i = 0; i < N_KERNELS; i++)\n"
                "    if ((r = cuModuleGetFunction(&ctx->fn[i], ctx->mod, kernel_names[i])) != CUDA_SUCCESS)\n"
                "      goto fail;\n"
                "  if ((r = cuMemAlloc(&ctx->weights, WEIGHT_BYTES + 256)) != CUDA_SUCCESS)\n    goto fail;\n"
                "  ctx->w = ctx->weights;\n  ctx->status = ctx->weights + WEIGHT_BYTES;\n"
                "  if ((r = cuMemsetD32(ctx->status, 0, 1)) != CUDA_SUCCESS)\n    goto fail;\n",
             nm, nm, nm, nm);
  for (int w = 0; w < cu->cg.n_weights; w++) {
    int64_t b = bytes_of(cu->cg.weights[w]);
    if (b > 0)
      buf_printf(c, "  if ((r = cuMemcpyHtoD(ctx->w + %lld, %s, %lldu)) != CUDA_SUCCESS)\n    goto fail;\n",
                 (long long)cu->woff[w], cu->cg.weight_sym[w], (long long)b);
  }
  for (int k = 0; k < cu->n_sconst; k++)
    buf_printf(c, "  if ((r = put_strings(ctx->w + %lld, ctx->w + %lld, str%d, %lld, %lld)) != CUDA_SUCCESS)\n"
                  "    goto fail;\n", (long long)cu->soff[k], (long long)cu->schars[k], k,
               (long long)str_chars(cu->sconst[k]), (long long)cu->sconst[k]->konst->numel);
  buf_printf(c, "  *out = ctx;\n  return ONNXC_OK;\nfail:\n  st = fail(ctx, r);\n  %s_free(ctx);\n"
                "  return st;\n}\n\n", nm);
  buf_printf(c, "ONNXC_API int %s_init(%s_ctx **ctx) { return %s_init_image(ctx, NULL); }\n\n", nm, nm, nm);
  /* free, status, error */
  buf_printf(c, "ONNXC_API void %s_free(%s_ctx *ctx) {\n  if (!ctx)\n    return;\n"
                "  if (ctx->weights)\n    cuMemFree(ctx->weights);\n  if (ctx->mod)\n    cuModuleUnload(ctx->mod);\n"
                "  free(ctx);\n}\n\n", nm, nm);
  buf_printf(c, "ONNXC_API int %s_cuda_error(const %s_ctx *ctx) { return ctx ? (int)ctx->err : 0; }\n\n", nm, nm);
  buf_printf(c, "ONNXC_API int %s_status(%s_ctx *ctx, void *stream) {\n  int st = 0;\n  CUresult r;\n"
                "  if (!ctx)\n    return ONNXC_ERR_NULL_ARG;\n"
                "  if ((r = cuStreamSynchronize((CUstream)stream)) != CUDA_SUCCESS ||\n"
                "      (r = cuMemcpyDtoH(&st, ctx->status, sizeof st)) != CUDA_SUCCESS)\n    return fail(ctx, r);\n"
                "  return st;\n}\n\n", nm, nm);
  /* run */
  bool ranges = dx_user_syms(g) > 0;
  if (cu->grid_of) /* grids sized from the run's dims (emit_cuda_dyn.c) */
    buf_puts(c, "/* Blocks for n work items of `per` each: at least 1, at most max (the\n"
                " * kernels loop over what a smaller grid leaves). */\n"
                "static unsigned grid_of(int64_t n, int64_t per, int64_t max) {\n"
                "  int64_t b = (n + per - 1) / per;\n  return (unsigned)(b < 1 ? 1 : b > max ? max : b);\n}\n\n");
  if (ranges) {
    buf_printf(c, "ONNXC_API int %s_run_dims(%s_ctx *ctx, void *stream, void *arena, const int64_t *dims_in", nm, nm);
    run_params(cu, c);
    buf_puts(c, ") {\n");
    dyn_write_dims_check(g, c); /* ONNXC_ERR_DIM; the derived dims, on the host */
    buf_puts(c, "  (void)dims;\n");
  } else {
    buf_printf(c, "ONNXC_API int %s_run(%s_ctx *ctx, void *stream, void *arena", nm, nm);
    run_params(cu, c);
    buf_puts(c, ") {\n");
  }
  buf_printf(c, "  CUstream s = (CUstream)stream;\n  CUdeviceptr a = (CUdeviceptr)(uintptr_t)arena;\n  CUresult r;\n"
                "  if (!ctx || %s", cu->cg.plan->arena_bytes > 0 ? "!arena" : "0");
  for (int i = 0; i < g->n_inputs; i++)
    if (cg_numel(g->inputs[i]) > 0)
      buf_printf(c, " || !%s", cu->in_param[i]);
  for (int i = 0; i < g->n_outputs; i++)
    if (cg_numel(g->outputs[i]) > 0)
      buf_printf(c, " || !%s", cu->cg.out_param[i]);
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i]->dyn_dims)
      buf_printf(c, " || !%s_dims", cu->cg.out_param[i]);
  buf_puts(c, ")\n    return ONNXC_ERR_NULL_ARG;\n  (void)a;\n");
  for (int i = 0; i < g->n_inputs; i++)
    buf_printf(c, "  (void)%s;\n", cu->in_param[i]);
  for (int i = 0; i < g->n_outputs; i++)
    buf_printf(c, "  (void)%s;\n", cu->cg.out_param[i]);
  buf_puts(c, "  if ((r = cuMemsetD32Async(ctx->status, 0, 1, s)) != CUDA_SUCCESS)\n    return fail(ctx, r);\n");
  buf_puts(c, run->s ? run->s : "");
  buf_puts(c, "  return ONNXC_OK;\n}\n\n");
  if (ranges) { /* NAME_run: every dim at its upper bound; NAME_arena_bytes */
    buf_printf(c, "ONNXC_API int %s_run(%s_ctx *ctx, void *stream, void *arena", nm, nm);
    run_params(cu, c);
    buf_printf(c, ") {\n  static const int64_t hi[%d] = {", dx_user_syms(g));
    for (int k = 0; k < dx_user_syms(g); k++)
      buf_printf(c, "%s%lld", k ? ", " : "", (long long)g->syms[k].hi);
    buf_printf(c, "};\n  return %s_run_dims(ctx, stream, arena, hi", nm);
    run_args(cu, c);
    buf_puts(c, ");\n}\n\n");
    dyn_write_arena_fn(g, cu->cg.plan, nm, c);
    buf_printf(c, "ONNXC_API int %s_run_dims_v(%s_ctx *ctx, void *stream, void *arena, const int64_t *dims,\n"
                  "                           const void *const *inputs, void *const *outputs) {\n", nm, nm);
    char dcall[300];
    snprintf(dcall, sizeof dcall, "%s_run_dims(ctx, stream, arena, dims", nm);
    cg_run_v_body(c, g, dcall, "");
    buf_puts(c, "\n");
  }
  buf_printf(c, "ONNXC_API int %s_run_v(%s_ctx *ctx, void *stream, void *arena, const void *const *inputs, "
                "void *const *outputs) {\n", nm, nm);
  char call[300];
  snprintf(call, sizeof call, "%s_run(ctx, stream, arena", nm);
  cg_run_v_body(c, g, call, "");
}

/* Host copies of the weights, as the C target writes them (C arrays). */
static bool write_weights(const CudaGen *cu, const char *dir) {
  const char *nm = cu->cg.o->name;
  char path[4096];
  Buf h;
  buf_init(&h);
  buf_printf(&h, "/* %s_weights.h - generated by onnxc %s. Do not edit. */\n#ifndef %s_WEIGHTS_H\n"
                 "#define %s_WEIGHTS_H\n\n#include \"onnxc_rt.h\"\n\n", nm, ONNXC_VERSION, nm, nm);
  for (int w = 0; w < cu->cg.n_weights; w++) {
    const Value *v = cu->cg.weights[w];
    int64_t n = cg_numel(v), st = n;
    if (dtype_bits(v->dt) < 8)
      IR_ASSERT(dtype_bytes(v->dt, n, &st));
    buf_printf(&h, "extern const %s %s[%lld];\n", cg_ctype(v), cu->cg.weight_sym[w], (long long)(st ? st : 1));
  }
  buf_puts(&h, "\n#endif\n");
  snprintf(path, sizeof path, "%s_weights.h", nm);
  bool ok = cg_write_file(dir, path, h.s, h.len, cu->cg.d);
  buf_free(&h);
  if (!ok)
    return false;
  if (cu->cg.o->weights == WEIGHTS_BLOB) {
    char bpath[4096], apath[4096];
    snprintf(bpath, sizeof bpath, "%s/%s_weights.bin", dir, nm);
    snprintf(path, sizeof path, "%s/%s_weights.S", dir, nm);
    FILE *bin = fopen(bpath, "wb"), *as = fopen(path, "wb");
    char *abs = realpath(dir, NULL);
    snprintf(apath, sizeof apath, "%s/%s_weights.bin", abs ? abs : dir, nm);
    free(abs);
    ok = bin && as && weights_write_blob(&cu->cg, bin, as, apath, cu->cg.d);
    if ((bin && fclose(bin) != 0) || (as && fclose(as) != 0) || !bin || !as)
      ok = ok && diag_error(cu->cg.d, NULL, "cannot write weights into %s: %s", dir, strerror(errno));
    return ok;
  }
  snprintf(path, sizeof path, "%s/%s_weights.c", dir, nm);
  FILE *f = fopen(path, "wb");
  if (!f)
    return diag_error(cu->cg.d, NULL, "cannot write %s: %s", path, strerror(errno));
  ok = weights_write_c(&cu->cg, f, cu->cg.d);
  if (fclose(f) != 0 && ok)
    ok = diag_error(cu->cg.d, NULL, "cannot write %s: %s", path, strerror(errno));
  return ok;
}

/* Some node of g is an `op`. */

/* A runtime header of the C target (onnxc_image.h: the image decoders) made
 * device code: every file-scope `static` (functions, tables) at the start of
 * a line becomes `static __device__` (functions also not inlined), and a function's `static const T v;`
 * gets the `= {}` C++ asks for. The decoders then run in ImageDecoder's
 * single-thread kernel, reading the encoded bytes and writing pixels and
 * scratch in device memory. */
static void device_header(Buf *b, const char *text) {
  buf_puts(b, "/* onnxc_image.h for the CUDA target: the C target's image decoders as\n"
              " * __device__ functions (generated by onnxc from runtime/onnxc_image.h). */\n"
              "#ifndef ONNXC_NOINLINE\n#define ONNXC_NOINLINE __noinline__\n#endif\n");
  for (const char *s = text; *s;) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) + 1 : strlen(s);
    const char *t = s + strspn(s, " ");
    if (strncmp(s, "static ", 7) == 0) {
      const char *paren = memchr(s, '(', len), *eq = memchr(s, '=', len);
      bool fn = paren && (!eq || eq > paren);
      /* Not inlined: NVRTC and ptxas take 5-10x longer over one inlined decoder. */
      buf_puts(b, fn ? "static __device__ ONNXC_NOINLINE " : "static __device__ ");
      buf_write(b, s + 7, len - 7);
    } else if (t > s && strncmp(t, "static const ", 13) == 0 && len >= 2 && s[len - 2] == ';' &&
               !memchr(s, '=', len) && !memchr(s, '[', len)) {
      /* `static const T zero;` (zero-initialized in C) needs an initializer in C++ */
      buf_write(b, s, len - 2);
      buf_puts(b, " = {};\n");
    } else {
      buf_write(b, s, len);
    }
    s += len;
  }
}

bool codegen_cuda(const Graph *g, const Plan *plan, const CodegenOpts *o, const char *dir, Diag *d) {
  if (!cg_is_ident(o->name))
    return diag_error(d, NULL, "--name '%s' is not a valid C identifier", o->name);
  for (int k = 0; k < g->n_syms; k++)
    if (g->syms[k].den < 0)
      return diag_error(d, NULL, "the CUDA target does not take a data-dependent extent read by other nodes "
                        "yet (%s); the C target does (docs/dynamic-shapes.md)", g->syms[k].name);
  if (g->n_syms > 0 && !dyn_check(g, d)) /* every node with run-time extents has a kernel */
    return false;
  for (int i = 0; i < g->n_inputs; i++)
    if (!has_type(g->inputs[i]))
      return diag_error(d, NULL, "input '%s' has element type %s, which the CUDA target does not support",
                        g->inputs[i]->name, dtype_name(g->inputs[i]->dt));
  for (int i = 0; i < g->n_outputs; i++)
    if (!has_type(g->outputs[i]))
      return diag_error(d, NULL, "output '%s' has element type %s, which the CUDA target does not support",
                        g->outputs[i]->name, dtype_name(g->outputs[i]->dt));
  Arena *a = arena_new();
  /* The C target's packed-GEMM fast path (emit_gemm.c) is CPU code: without
   * scratch, Conv/Gemm/MatMul take their generic form and their weights stay
   * unpacked, as the CUDA kernels read them. The scratch stays in the arena. */
  Plan cplan = *plan;
  if (plan->scratch_size) {
    int64_t *ss = arena_alloc(a, (size_t)(g->n_node_ids + 1) * sizeof *ss);
    memcpy(ss, plan->scratch_size, (size_t)g->n_node_ids * sizeof *ss);
    for (const Node *n = g->first; n; n = n->next)
      if (n->op == OP_Conv || n->op == OP_Gemm || n->op == OP_MatMul)
        ss[n->id] = 0;
    cplan.scratch_size = ss;
  }
  plan = &cplan;
  CudaGen cu;
  memset(&cu, 0, sizeof cu);
  cu.cg = (CGen){g, plan, o, d, NULL, NULL, NULL, NULL, 0, 0};
  cu.kname = arena_alloc(a, (size_t)(g->n_nodes + 1) * sizeof(char *));
  cu.batch = !o->no_batch && g->n_syms == 0;
  bool ok = assign_names(&cu, a);
  Buf src, run, c, h;
  buf_init(&src);
  buf_init(&run);
  buf_init(&c);
  buf_init(&h);
  buf_printf(&src, "/* %s.cu - generated by onnxc %s (CUDA target) from %s. Do not edit.\n"
                   " * One kernel per node, in schedule order; %s.c launches them.\n"
                   " * Build without onnxc: nvcc -cubin -arch=sm_90 %s.cu (or -fatbin, -ptx). */\n"
                   "#include \"onnxc_cuda_rt.h\"\n\n",
             o->name, ONNXC_VERSION, o->model_path ? o->model_path : "a model", o->name, o->name);
  bool image = cg_op_used(g, OP_ImageDecoder);
  if (image) /* the decoders, made device functions (device_header) */
    buf_puts(&src, "#include \"onnxc_image.h\"\n\n");
  if (string_used(g)) { /* the C target's string helpers, as device functions */
    buf_puts(&src, "#define ONNXC_STR_FN static __device__ __attribute__((unused))\n");
    string_write_prelude(&src);
  }
  int step = 0;
  Buf notes;
  buf_init(&notes);
  buf_puts(&notes, "");
  Held hd = {arena_alloc(a, (size_t)(g->n_nodes + 1) * sizeof(Batched)), 0, &src, &run, &notes};
  for (const Node *n = g->first; ok && n; n = n->next) {
    Buf ksrc, krun;
    buf_init(&ksrc);
    buf_init(&krun);
    buf_puts(&ksrc, "");
    buf_puts(&krun, "");
    ok = emit_node(&cu, a, n, step++, &ksrc, &krun, cu.batch ? &hd : NULL);
    /* a view's comment waits with the held kernels (it launches nothing) */
    buf_puts(&src, ksrc.s);
    buf_puts(hd.n ? &notes : &run, krun.s);
    buf_free(&ksrc);
    buf_free(&krun);
  }
  if (ok)
    flush_held(&cu, a, &hd);
  buf_free(&notes);
  if (ok) {
    emit_output_copies(&cu, a, &run);
    if (g->n_syms > 0)
      buf_printf(&src, "/* %d kernels, %d of them parallel; %d with run-time extents in a single thread */\n",
                 cu.n_kernels, cu.n_parallel, cu.n_ranged_fallback);
    else
      buf_printf(&src, "/* %d kernels, %d of them parallel */\n", cu.n_kernels - cu.n_batches + cu.n_batched,
                 cu.n_parallel);
    if (cu.n_batched)
      buf_printf(&src, "/* %d launches: %d batches of %d small kernels */\n", cu.n_kernels, cu.n_batches,
                 cu.n_batched);
    write_host(&cu, &c, &run);
    write_header(&cu, &h);
    char file[512];
    snprintf(file, sizeof file, "%s.h", o->name);
    ok = cg_write_file(dir, file, h.s, h.len, d);
    snprintf(file, sizeof file, "%s.c", o->name);
    ok = ok && cg_write_file(dir, file, c.s, c.len, d);
    snprintf(file, sizeof file, "%s.cu", o->name);
    ok = ok && cg_write_file(dir, file, src.s, src.len, d);
    ok = ok && cg_write_file(dir, "onnxc_rt.h", onnxc_rt_h_text, strlen(onnxc_rt_h_text), d);
    ok = ok && cg_write_file(dir, "onnxc_cuda_rt.h", onnxc_cuda_rt_h_text, strlen(onnxc_cuda_rt_h_text), d);
    if (ok && image) {
      Buf ih;
      buf_init(&ih);
      device_header(&ih, onnxc_image_h_text);
      ok = cg_write_file(dir, "onnxc_image.h", ih.s, ih.len, d);
      buf_free(&ih);
    }
    ok = ok && write_weights(&cu, dir);
  }
  buf_free(&src);
  buf_free(&run);
  buf_free(&c);
  buf_free(&h);
  arena_free(a);
  return ok;
}
