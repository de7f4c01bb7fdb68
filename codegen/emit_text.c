/* emit_text.c - C emission for text-processing operators: TfIdfVectorizer.
 *
 * The n-gram pool is baked into static const tables, one per n-gram size in
 * [min_gram_length, max_gram_length]: the items of each n-gram and the output
 * position it counts into. Each row is scanned once per skip distance (items
 * `skip` apart form an n-gram; unigrams only at distance 1, as the spec
 * says); every window is compared with the pool n-grams of its size, the
 * last matching pool entry winning, as when the pool is loaded into a map.
 * The counts are accumulated in the output itself (exact in float up to
 * 2^24) and then weighted per mode.
 */
#include "codegen.h"

#include <string.h>

bool emitc_TfIdfVectorizer(EmitC *e, const Node *n) {
  const Shape *xs = &n->in[0]->shape;
  int64_t rows = xs->rank == 2 ? xs->d[0] : 1;
  int64_t cols = xs->rank == 0 ? 1 : xs->d[xs->rank - 1];
  int64_t size = n->out[0]->shape.d[n->out[0]->shape.rank - 1];
  int n_counts = 0, n_pool = 0, n_idx = 0;
  const int64_t *counts = ir_attr_ints(n, "ngram_counts", &n_counts);
  const int64_t *pool = ir_attr_ints(n, "pool_int64s", &n_pool);
  const int64_t *idx = ir_attr_ints(n, "ngram_indexes", &n_idx);
  const Attr *w = ir_attr(n, "weights");
  int64_t min_g = ir_attr_int(n, "min_gram_length", 1), max_g = ir_attr_int(n, "max_gram_length", 1);
  int64_t max_skip = ir_attr_int(n, "max_skip_count", 0);
  const char *mode = ir_attr_str(n, "mode", "TF");
  bool weighted = w && w->n > 0;

  ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) Y0[i] = 0.0f;", (long long)(rows * size));
  if (rows * cols == 0)
    return true;

  /* Tables per n-gram size k (only sizes that count). id is the n-gram's
   * ordinal in the pool, which indexes ngram_indexes. */
  bool any = false;
  int64_t id = 0;
  for (int k = 1; k <= n_counts; k++) {
    int64_t start = counts[k - 1], end = k < n_counts ? counts[k] : n_pool;
    int64_t cnt = (end - start) / k;
    if (cnt > 0 && k >= min_g && k <= max_g) {
      Buf b;
      buf_init(&b);
      buf_printf(&b, "static const int64_t G%d[%lld] = {", k, (long long)(cnt * k));
      for (int64_t i = 0; i < cnt * k; i++)
        buf_printf(&b, "%s%lldLL", i ? ", " : "", (long long)pool[start + i]);
      buf_printf(&b, "};");
      ec_line(e, "%s", b.s);
      buf_free(&b);
      buf_init(&b);
      buf_printf(&b, "static const int32_t P%d[%lld] = {", k, (long long)cnt);
      for (int64_t i = 0; i < cnt; i++)
        buf_printf(&b, "%s%lld", i ? ", " : "", (long long)idx[id + i]);
      buf_printf(&b, "};");
      ec_line(e, "%s", b.s);
      buf_free(&b);
      any = true;
    }
    id += cnt;
  }
  if (!any)
    return true;   /* no n-gram of a counted size: all zeros */

  ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++) {", (long long)rows);
  ec_line(e, "const %s *x = X0 + r * %lld;", dtype_ctype(n->in[0]->dt), (long long)cols);
  ec_line(e, "float *y = Y0 + r * %lld;", (long long)size);
  ec_line(e, "for (ptrdiff_t skip = 1; skip <= %lld; skip++) {", (long long)(max_skip + 1));
  ec_line(e, "for (ptrdiff_t s = 0; s < %lld; s++) {", (long long)cols);
  for (int k = (int)min_g; k <= max_g && k <= n_counts; k++) {
    int64_t start = counts[k - 1], end = k < n_counts ? counts[k] : n_pool;
    int64_t cnt = (end - start) / k;
    if (cnt <= 0)
      continue;
    /* Unigrams are the same at every distance: count them once. */
    ec_line(e, "if (%ss + %lld * skip < %lld) {", k == 1 ? "skip == 1 && " : "",
             (long long)(k - 1), (long long)cols);
    ec_line(e, "ptrdiff_t hit = -1;");
    ec_line(e, "for (ptrdiff_t p = 0; p < %lld; p++) {", (long long)cnt);
    ec_line(e, "int same = 1;");
    ec_line(e, "for (ptrdiff_t j = 0; j < %d && same; j++)", k);
    ec_line(e, "  same = (int64_t)x[s + j * skip] == G%d[p * %d + j];", k, k);
    ec_line(e, "if (same) hit = P%d[p];", k);
    ec_line(e, "}");
    ec_line(e, "if (hit >= 0) y[hit] += 1.0f;");
    ec_line(e, "}");
  }
  ec_line(e, "}");
  ec_line(e, "}");
  ec_line(e, "}");

  bool idf = strcmp(mode, "IDF") == 0, tfidf = strcmp(mode, "TFIDF") == 0;
  if ((idf || tfidf) && weighted) {
    Buf b;
    buf_init(&b);
    buf_printf(&b, "static const float W[%d] = {", w->n);
    for (int i = 0; i < w->n; i++) {
      char lit[64];
      buf_printf(&b, "%s%s", i ? ", " : "", ec_literal(DT_F32, w->u.fs[i], lit, sizeof lit));
    }
    buf_printf(&b, "};");
    ec_line(e, "%s", b.s);
    buf_free(&b);
  }
  if (idf || (tfidf && weighted)) {
    ec_line(e, "for (ptrdiff_t r = 0; r < %lld; r++)", (long long)rows);
    ec_line(e, "for (ptrdiff_t i = 0; i < %lld; i++) {", (long long)size);
    ec_line(e, "float *v = &Y0[r * %lld + i];", (long long)size);
    if (idf)
      ec_line(e, "*v = *v > 0.0f ? %s : 0.0f;", weighted ? "W[i]" : "1.0f");
    else
      ec_line(e, "*v = W[i] * *v;");
    ec_line(e, "}");
  }
  return true;
}
