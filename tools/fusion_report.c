/* fusion_report.c - --fusion-report FILE.json: the kernels the compiled model
 * runs, in schedule order, each with the ONNX nodes it computes (its own node
 * and those fusion folded into it: the onnxc.fused record of the passes), the
 * bytes it reads and writes, and an estimate of its floating-point work.
 * Views that need no code (a Reshape whose output aliases its input) are
 * listed apart. Written to a temporary name and renamed, like the memory
 * report, so a failed compile leaves no file.
 */
#include "gemm.h" /* mm_view */
#include "tools.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static int64_t numel_of(const Value *v) {
  int64_t k = 0;
  return shape_numel(&v->shape, &k) ? k : 0;
}

int64_t fusion_value_bytes(const Value *v) {
  int64_t b = 0;
  if (v->kind == VK_NONE || v->dt == DT_STRING || !dtype_bytes(v->dt, numel_of(v), &b))
    return 0;
  return b;
}

/* Steps of an elementwise chain (a FusedElementwise body or an epilogue). */
static int64_t body_steps(const Node *n, const char *attr) {
  const Attr *a = ir_attr(n, attr);
  return a && a->kind == AT_GRAPH && a->u.g ? a->u.g->n_nodes : 0;
}

/* Floating-point operations, estimated: 2 per multiply-add of a product
 * (and of an int8 product),
 * one per element and step of elementwise work, a few per element of the
 * normalizations; data movement counts none. */
int64_t fusion_flops(const Node *n) {
  int64_t out = numel_of(n->out[0]), in0 = n->n_in ? numel_of(n->in[0]) : 0;
  int64_t epi = out * body_steps(n, "epilogue");
  switch (n->op) {
  case OP_MatMul:
  case OP_Gemm: {
    Shape av; /* a MatMul's A as the product reads it (through fuse-layout's views) */
    int64_t ast[IR_MAX_RANK];
    if (n->op == OP_MatMul)
      mm_view(n, 0, &av, ast);
    const Shape *a = n->op == OP_MatMul ? &av : &n->in[0]->shape;
    int64_t k = a->rank ? a->d[a->rank - 1] : 1;
    if (n->op == OP_Gemm && ir_attr_int(n, "transA", 0) && a->rank == 2)
      k = a->d[0];
    return 2 * out * k + epi;
  }
  case OP_Conv: {
    const Shape *w = &n->in[1]->shape;
    int64_t per = 1;
    for (int i = 1; i < w->rank; i++)
      per *= w->d[i];
    return 2 * out * per + epi;
  }
  case OP_BlockedConv: { /* group 1: onnxc.c input channels; depthwise: one */
    int nk = 0;
    const int64_t *k = ir_attr_ints(n, "kernel_shape", &nk);
    int64_t per = nk == 2 ? k[0] * k[1] : 1;
    if (ir_attr_int(n, "group", 1) == 1)
      per *= ir_attr_int(n, "onnxc.c", 1);
    return 2 * out * per + epi;
  }
  case OP_QIntConv: /* int8 multiply-adds, counted as two operations like float ones */
  case OP_QIntMatMul:
  case OP_QIntConvInteger:
    return 2 * out * ir_attr_int(n, "kdim", 0);
  case OP_MatMulInteger:
  case OP_QLinearMatMul: {
    const Shape *a = &n->in[0]->shape;
    return 2 * out * (a->rank ? a->d[a->rank - 1] : 1);
  }
  case OP_FusedElementwise:
    return out * body_steps(n, "body");
  case OP_LayerNormalization:
  case OP_RMSNormalization:
    return 8 * in0;
  case OP_Softmax:
  case OP_LogSoftmax:
    return 5 * in0;
  case OP_RNN:
  case OP_GRU:
  case OP_LSTM: { /* per step, item and direction: R h (and W x unless rnn-project took it out) */
    const Shape *xs = &n->in[0]->shape, *rs = &n->in[2]->shape;
    if (xs->rank != 3 || rs->rank != 3 || !shape_is_static(xs) || !shape_is_static(rs))
      return 0;
    int64_t gh = rs->d[1], hid = rs->d[2], nd = rs->d[0];
    int64_t in = ir_attr_int(n, "onnxc.xproj", 0) ? 0 : xs->d[2];
    return 2 * xs->d[0] * xs->d[1] * nd * gh * (hid + in);
  }
  default:
    if (ir_ops[n->op].expr)
      return out;
    if (n->op >= OP_ReduceSum && n->op <= OP_ReduceSumSquare)
      return in0;
    return 0;
  }
}

int fusion_onnx_nodes(const Node *n, void (*fn)(void *ctx, const char *onnx_node), void *ctx) {
  int k = 0;
  const Attr *a = ir_attr(n, "onnxc.fused");
  /* a node the compiler made in an ONNX node's place (MatMul + Add -> Gemm)
   * takes its name, and the record lists that node */
  bool replaced = rewrite_stands_in(n);
  if (!(ir_ops[n->op].flags & OPF_INTERNAL) && !replaced) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s %s", n->op_type, n->name);
    if (fn)
      fn(ctx, buf);
    k++;
  }
  for (int i = 0; a && a->kind == AT_STRINGS && i < a->n; i++, k++)
    if (fn)
      fn(ctx, a->u.ss[i]);
  return k;
}

/* The i-th ONNX node kernel n computes ("Op name", written into buf when it
 * is n's own), or NULL past the last: the same list as fusion_onnx_nodes. */
const char *fusion_node(const Node *n, int i, char *buf, size_t len) {
  const Attr *a = ir_attr(n, "onnxc.fused");
  bool own = !(ir_ops[n->op].flags & OPF_INTERNAL) && !rewrite_stands_in(n);
  if (own && i == 0) {
    snprintf(buf, len, "%s %s", n->op_type, n->name);
    return buf;
  }
  i -= own;
  return a && a->kind == AT_STRINGS && i < a->n ? a->u.ss[i] : NULL;
}

void fusion_bytes(const Node *n, int64_t *rd, int64_t *wr) {
  *rd = *wr = 0;
  for (int i = 0; i < n->n_in; i++)
    *rd += fusion_value_bytes(n->in[i]);
  for (int i = 0; i < n->n_out; i++)
    *wr += fusion_value_bytes(n->out[i]);
}

bool fusion_is_view(const Plan *plan, const Node *n) { return plan->elided && plan->elided[n->id]; }

typedef struct JsonList {
  FILE *f;
  int k;
} JsonList;

static void json_item(void *ctx, const char *s) {
  JsonList *l = ctx;
  fputs(l->k++ ? ", " : "", l->f);
  json_str(l->f, s);
}

/* The ONNX nodes n computes, as a JSON list. */
static int write_nodes(FILE *f, const Node *n) {
  JsonList l = {f, 0};
  fputc('[', f);
  int k = fusion_onnx_nodes(n, json_item, &l);
  fputc(']', f);
  return k;
}

/* The kernels (views false) or the views that need no code, as JSON objects;
 * returns how many ONNX nodes they list. */
static int64_t write_list(FILE *f, const Graph *g, const Plan *plan, bool views) {
  int64_t listed = 0;
  bool first = true;
  for (const Node *n = g->first; n; n = n->next) {
    if (fusion_is_view(plan, n) != views)
      continue;
    fprintf(f, "%s\n    {\"name\": ", first ? "" : ",");
    json_str(f, n->name);
    fprintf(f, ", \"op\": ");
    json_str(f, n->op_type);
    fprintf(f, ", \"nodes\": ");
    listed += write_nodes(f, n);
    if (!views) {
      int64_t rd, wr;
      fusion_bytes(n, &rd, &wr);
      fprintf(f, ", \"bytes_read\": %lld, \"bytes_written\": %lld, \"flops\": %lld", (long long)rd,
              (long long)wr, (long long)fusion_flops(n));
    }
    fputc('}', f);
    first = false;
  }
  return listed;
}

bool driver_fusion_report(const Graph *g, const Plan *plan, const char *path, Diag *d) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp%ld", path, (long)getpid());
  FILE *f = fopen(tmp, "w");
  if (!f)
    return diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  int kernels = 0, views = 0;
  for (const Node *n = g->first; n; n = n->next) {
    if (fusion_is_view(plan, n))
      views++;
    else
      kernels++;
  }
  fprintf(f, "{\n  \"model\": ");
  json_str(f, g->file ? g->file : "");
  fprintf(f, ",\n  \"kernel_count\": %d,\n  \"view_count\": %d,\n  \"kernels\": [", kernels, views);
  int64_t total_nodes = 0;
  total_nodes += write_list(f, g, plan, false);
  fprintf(f, "\n  ],\n  \"views\": [");
  total_nodes += write_list(f, g, plan, true);
  fprintf(f, "\n  ],\n  \"nodes_listed\": %lld\n}\n", (long long)total_nodes);
  bool ok = !ferror(f);
  ok = fclose(f) == 0 && ok;
  if (ok && rename(tmp, path) != 0)
    ok = false;
  if (!ok) {
    unlink(tmp);
    return diag_error(d, NULL, "cannot write %s: %s", path, strerror(errno));
  }
  return true;
}
