/* Unit tests of ImageDecoder inference (passes/infer_image.c). */
#include "test_util.h"

static Node *decoder(Graph *g, const char *fmt, int rank, const int64_t *declared) {
  int64_t len[1] = {100};
  Value *x = tin(g, "x", DT_U8, 1, len);
  Node *n = op(g, OP_ImageDecoder, 1, &x, 1);
  Attr *a = ir_attr_add(n, "pixel_format", AT_STRING);
  a->u.s = fmt;
  a->slen = strlen(fmt);
  if (rank >= 0)
    n->out[0]->shape = shape_make(rank, declared);
  return n;
}

static void test_image_decoder(void **state) {
  (void)state;
  Graph *g = gnew(20);
  int64_t rgb[3] = {32, 24, 3}, gray[3] = {32, 24, 1};
  Node *n = decoder(g, "BGR", 3, rgb);
  expect_ok(n);
  assert_shape(n->out[0], 3, rgb);
  assert_int_equal(n->out[0]->dt, DT_U8);
  expect_ok(decoder(g, "Grayscale", 3, gray));
  expect_error(decoder(g, "RGB", -1, NULL), "declare the output's static shape [H, W, 3]");
  expect_error(decoder(g, "Grayscale", 3, rgb), "declared with 3 channels");
  expect_error(decoder(g, "CMYK", 3, rgb), "pixel_format 'CMYK'");
  ir_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_image_decoder)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
