/* shape.c - shapes with static extents or named symbolic dims. */
#include "ir.h"

#include <string.h>

Shape shape_unknown(void) {
  Shape s;
  memset(&s, 0, sizeof s);
  s.rank = -1;
  return s;
}

Shape shape_scalar(void) {
  Shape s;
  memset(&s, 0, sizeof s);
  return s;
}

Shape shape_make(int rank, const int64_t *dims) {
  IR_ASSERT(rank >= 0 && rank <= IR_MAX_RANK);
  Shape s = shape_scalar();
  s.rank = rank;
  for (int i = 0; i < rank; i++)
    s.d[i] = dims[i];
  return s;
}

bool shape_is_static(const Shape *s) {
  if (s->rank < 0)
    return false;
  for (int i = 0; i < s->rank; i++)
    if (s->d[i] < 0)
      return false;
  return true;
}

static bool dim_equal(const Shape *a, int i, const Shape *b, int j) {
  if (a->d[i] >= 0 || b->d[j] >= 0)
    return a->d[i] == b->d[j];
  if (a->x[i] || b->x[j])
    return dx_equal(a->x[i], b->x[j]);
  return a->sym[i] && b->sym[j] && strcmp(a->sym[i], b->sym[j]) == 0;
}

bool shape_equal(const Shape *a, const Shape *b) {
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (!dim_equal(a, i, b, i))
      return false;
  return true;
}

bool shape_numel(const Shape *s, int64_t *out) {
  if (!shape_is_static(s))
    return false;
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    if (s->d[i] != 0 && n > INT64_MAX / s->d[i])
      return false;
    n *= s->d[i];
  }
  *out = n;
  return true;
}

bool shape_broadcast(const Shape *a, const Shape *b, Shape *out) {
  if (a->rank < 0 || b->rank < 0) {
    *out = shape_unknown();
    return true;
  }
  int r = a->rank > b->rank ? a->rank : b->rank;
  Shape s = shape_scalar();
  s.rank = r;
  for (int k = 0; k < r; k++) {
    int i = k - (r - a->rank), j = k - (r - b->rank);
    bool ha = i >= 0, hb = j >= 0;
    if (!hb || (ha && b->d[j] == 1)) {
      s.d[k] = a->d[i];
      s.sym[k] = a->sym[i];
      s.x[k] = a->x[i];
    } else if (!ha || a->d[i] == 1) {
      s.d[k] = b->d[j];
      s.sym[k] = b->sym[j];
      s.x[k] = b->x[j];
    } else if (dim_equal(a, i, b, j)) {
      s.d[k] = a->d[i];
      s.sym[k] = a->sym[i];
      s.x[k] = a->x[i];
    } else if ((a->d[i] >= 0 && b->d[j] >= 0) || a->x[i] || b->x[j]) {
      /* two different extents; or a bounded one against another extent than
       * 1, which only some values of its range would match */
      return false;
    } else {
      /* One side static (not 1), the other unknown: the static extent wins. */
      s.d[k] = a->d[i] >= 0 ? a->d[i] : b->d[j];
      s.sym[k] = NULL;
      if (s.d[k] < 0)
        s.sym[k] = a->sym[i] ? a->sym[i] : b->sym[j];
    }
  }
  *out = s;
  return true;
}

const char *shape_str(const Shape *s, char *buf, size_t n) {
  if (n == 0)
    return buf;
  if (s->rank < 0) {
    snprintf(buf, n, "[*]");
    return buf;
  }
  size_t len = 0;
  buf[0] = 0;
  len += (size_t)snprintf(buf + len, n - len, "[");
  for (int i = 0; i < s->rank && len < n; i++) {
    const char *sep = i ? "," : "";
    if (s->d[i] >= 0)
      len += (size_t)snprintf(buf + len, n - len, "%s%lld", sep, (long long)s->d[i]);
    else
      len += (size_t)snprintf(buf + len, n - len, "%s%s", sep, s->sym[i] ? s->sym[i] : "?");
  }
  if (len < n)
    snprintf(buf + len, n - len, "]");
  return buf;
}

bool shape_axis(int64_t axis, int rank, int *out) {
  if (axis < -rank || axis >= rank)
    return false;
  *out = (int)(axis < 0 ? axis + rank : axis);
  return true;
}

void ir_window_pads(const Node *n, int r, const int64_t *in, const int64_t *out, const int64_t *k,
                    const int64_t *s, const int64_t *d, int64_t *pb, int64_t *pe) {
  int np = 0;
  const int64_t *pads = ir_attr_ints(n, "pads", &np);
  const char *ap = ir_attr_str(n, "auto_pad", "NOTSET");
  bool upper = strcmp(ap, "SAME_UPPER") == 0, lower = strcmp(ap, "SAME_LOWER") == 0;
  for (int i = 0; i < r; i++) {
    pb[i] = pe[i] = 0;
    if (upper || lower) {
      int64_t total = (out[i] - 1) * s[i] + (k[i] - 1) * d[i] + 1 - in[i];
      if (total < 0)
        total = 0;
      pb[i] = upper ? total / 2 : total - total / 2;
      pe[i] = total - pb[i];
    } else if (strcmp(ap, "VALID") != 0 && pads && np == 2 * r) {
      pb[i] = pads[i];
      pe[i] = pads[r + i];
    }
  }
}
