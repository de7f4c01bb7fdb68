/* emit_image.c - C emission for ImageDecoder: a call into the decoders of
 * runtime/onnxc_image.h (included by the generated file when a model uses
 * the op), with the node's arena scratch for inflated rows / JPEG planes. */
#include "codegen.h"

#include <string.h>

bool emitc_ImageDecoder(EmitC *e, const Node *n) {
  const Shape *ys = &n->out[0]->shape;
  const char *fmt = ir_attr_str(n, "pixel_format", "RGB");
  int f = strcmp(fmt, "BGR") == 0 ? 1 : strcmp(fmt, "Grayscale") == 0 ? 2 : 0;
  int64_t bytes = e->plan->scratch_size ? e->plan->scratch_size[n->id] : 0;
  if (bytes <= 0) {
    diag_error(e->d, n, "ImageDecoder got no scratch from the memory plan");
    return false;
  }
  ec_line(e, "return onnxc_image_decode(X0, %lld, Y0, %lld, %lld, %d, S, %lld);",
          (long long)n->in[0]->shape.d[0], (long long)ys->d[0], (long long)ys->d[1], f,
          (long long)bytes);
  return true;
}
