/* infer_image.c - inference for ImageDecoder.
 *
 * The decoded size is only known from the image itself, so the output takes
 * the static shape [H, W, C] that the model declares for it (graph output or
 * value_info; the frontend records it on the value before inference). The
 * generated code decodes into that shape and returns ONNXC_ERR_BAD_IMAGE
 * when the image has another size.
 */
#include "passes.h"

#include <string.h>

bool infer_ImageDecoder(Node *n, Diag *d) {
  const Value *x = n->in[0];
  if (x->dt != DT_U8)
    return infer_fail(d, n, "input 0 has type %s, expected uint8 (the encoded bytes)",
                      dtype_name(x->dt));
  if (x->shape.rank >= 0 && x->shape.rank != 1)
    return infer_fail(d, n, "input 0 has rank %d, expected 1", x->shape.rank);
  const char *fmt = ir_attr_str(n, "pixel_format", "RGB");
  int64_t ch;
  if (strcmp(fmt, "RGB") == 0 || strcmp(fmt, "BGR") == 0)
    ch = 3;
  else if (strcmp(fmt, "Grayscale") == 0)
    ch = 1;
  else
    return infer_fail(d, n, "pixel_format '%s' is not one of RGB, BGR, Grayscale", fmt);
  const Shape *decl = &n->out[0]->shape;
  if (decl->rank != 3 || !shape_is_static(decl) || decl->d[0] < 1 || decl->d[1] < 1)
    return infer_fail(d, n,
                      "the decoded image size is only known at run time: declare the output's "
                      "static shape [H, W, %lld] in the model (graph output or value_info)",
                      (long long)ch);
  if (decl->d[2] != ch)
    return infer_fail(d, n, "the output is declared with %lld channels, pixel_format '%s' gives %lld",
                      (long long)decl->d[2], fmt, (long long)ch);
  if (decl->d[0] > 65535 || decl->d[1] > 65535)
    return infer_fail(d, n, "declared image size %lldx%lld exceeds 65535", (long long)decl->d[0],
                      (long long)decl->d[1]);
  Shape s = *decl;
  infer_set(n, 0, DT_U8, &s);
  return true;
}
