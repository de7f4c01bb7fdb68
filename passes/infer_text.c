/* infer_text.c - inference for text-processing operators: TfIdfVectorizer.
 *
 * TfIdfVectorizer counts, per row of an integer input, the n-grams of a pool
 * given by attributes (pool_int64s cut by ngram_counts into groups of 1-grams,
 * 2-grams, ...), with items up to max_skip_count apart, and writes their
 * counts (TF), presence weights (IDF) or weighted counts (TFIDF) at the
 * positions ngram_indexes names. String pools need string tensors, which
 * onnxc does not have: such a node gets a clear error.
 */
#include "passes.h"

#include <string.h>

/* Checks the attributes; *out_size = max(ngram_indexes) + 1. */
static bool tfidf_attrs(const Node *n, Diag *d, int64_t *out_size) {
  int n_counts = 0, n_idx = 0, n_pool = 0;
  const int64_t *counts = ir_attr_ints(n, "ngram_counts", &n_counts);
  const int64_t *idx = ir_attr_ints(n, "ngram_indexes", &n_idx);
  ir_attr_ints(n, "pool_int64s", &n_pool);
  if (ir_attr(n, "pool_strings"))
    return infer_fail(d, n, "pool_strings: string tensors are not supported (use pool_int64s)");
  if (n_pool == 0)
    return infer_fail(d, n, "attribute pool_int64s is required");
  int64_t min_g = ir_attr_int(n, "min_gram_length", 0), max_g = ir_attr_int(n, "max_gram_length", 0);
  int64_t skip = ir_attr_int(n, "max_skip_count", 0);
  if (min_g < 1 || max_g < min_g)
    return infer_fail(d, n, "min_gram_length %lld and max_gram_length %lld must satisfy 1 <= min <= max",
                      (long long)min_g, (long long)max_g);
  if (skip < 0)
    return infer_fail(d, n, "max_skip_count is %lld, must be >= 0", (long long)skip);
  const char *mode = ir_attr_str(n, "mode", "");
  if (strcmp(mode, "TF") && strcmp(mode, "IDF") && strcmp(mode, "TFIDF"))
    return infer_fail(d, n, "mode '%s' is not one of TF, IDF, TFIDF", mode);
  if (max_g > n_counts)
    return infer_fail(d, n, "max_gram_length %lld exceeds the %d n-gram sizes of ngram_counts",
                      (long long)max_g, n_counts);
  if (n_counts == 0 || counts[0] != 0)
    return infer_fail(d, n, "ngram_counts must start with 0");
  int64_t n_grams = 0;
  for (int i = 0; i < n_counts; i++) {
    int64_t end = i + 1 < n_counts ? counts[i + 1] : n_pool;
    if (end < counts[i] || end > n_pool)
      return infer_fail(d, n, "ngram_counts[%d] = %lld is out of order or past the pool (%d items)",
                        i, (long long)counts[i], n_pool);
    if ((end - counts[i]) % (i + 1))
      return infer_fail(d, n, "the pool of %d-grams has %lld items, not a multiple of %d", i + 1,
                        (long long)(end - counts[i]), i + 1);
    n_grams += (end - counts[i]) / (i + 1);
  }
  if (n_idx != n_grams)
    return infer_fail(d, n, "ngram_indexes has %d entries, the pool holds %lld n-grams", n_idx,
                      (long long)n_grams);
  int64_t mx = -1;
  for (int i = 0; i < n_idx; i++) {
    if (idx[i] < 0)
      return infer_fail(d, n, "ngram_indexes[%d] is negative", i);
    mx = idx[i] > mx ? idx[i] : mx;
  }
  const Attr *w = ir_attr(n, "weights");
  if (w && w->kind != AT_FLOATS)
    return infer_fail(d, n, "attribute weights must be a list of floats");
  if (w && w->n != 0 && w->n != mx + 1)
    return infer_fail(d, n, "weights has %d entries, expected %lld (one per output position)", w->n,
                      (long long)(mx + 1));
  *out_size = mx + 1;
  return true;
}

bool infer_TfIdfVectorizer(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (x->dt != DT_I32 && x->dt != DT_I64)
    return infer_fail(d, n, "input 0 has type %s, expected int32 or int64 (string input is not supported)",
                      dtype_name(x->dt));
  int64_t size = 0;
  if (!tfidf_attrs(n, d, &size))
    return false;
  Shape s = shape_unknown();
  if (x->shape.rank >= 0) {
    if (x->shape.rank > 2)
      return infer_fail(d, n, "input 0 has rank %d, expected 1 ([C]) or 2 ([N, C])", x->shape.rank);
    s = x->shape;
    s.d[s.rank - (s.rank > 0)] = size;
    if (s.rank == 0) {
      s.rank = 1;
      s.d[0] = size;
    }
    if (s.rank == 2)
      s.sym[1] = NULL, s.x[1] = NULL;
    else
      s.sym[0] = NULL, s.x[0] = NULL;
  }
  infer_set(n, 0, DT_F32, &s);
  return true;
}
