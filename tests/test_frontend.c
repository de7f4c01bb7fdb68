/* test_frontend.c - unit tests of the ONNX frontend: models and graphs.
 *
 * Models are built in memory from the protobuf-c structs generated from
 * onnx.proto (helpers in frontend_util.c), packed, and loaded with
 * fe_onnx_load_buffer: valid graphs, attributes, subgraph captures, naming,
 * and every way a model can be malformed. Tensor data: test_frontend_tensor.c.
 */
#include "frontend_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- valid models ---------------------------------------------------------- */

static void test_load_valid_model(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__GraphProto *gp = m->graph;
  add_input(gp, "x", DT_F32, "batch,3");
  add_input(gp, "s", DT_I64, NULL);
  add_input(gp, "q", DT_U8, "?,2");
  float w[6] = {1, 2, 3, 4, 5, 6};
  add_init(gp, tensor_raw("w", DT_F32, "3,2", w, sizeof w));
  add_node(gp, "MatMul", "mm", "x,w", "y");
  add_node(gp, "Relu", "r", "y", "z");
  PUSH(gp->value_info, gp->n_value_info, vinfo("y", DT_F32, "batch,2"));
  add_output(gp, "z", DT_F32, "batch,?");

  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->opset, 13);
  assert_int_equal(g->n_imports, 1);
  assert_string_equal(g->name, "main");

  assert_int_equal(g->n_inputs, 3);
  Value *x = g->inputs[0];
  assert_string_equal(x->name, "x");
  assert_int_equal(x->kind, VK_INPUT);
  assert_int_equal(x->dt, DT_F32);
  assert_int_equal(x->shape.rank, 2);
  assert_int_equal(x->shape.d[0], DIM_UNKNOWN);
  assert_string_equal(x->shape.sym[0], "batch");
  assert_int_equal(x->shape.d[1], 3);
  assert_int_equal(g->inputs[1]->shape.rank, -1);   /* no shape at all */
  assert_int_equal(g->inputs[1]->dt, DT_I64);
  assert_int_equal(g->inputs[2]->shape.d[0], DIM_UNKNOWN);   /* neither value nor param */
  assert_null(g->inputs[2]->shape.sym[0]);

  const Tensor *k = const_of(g, "w");
  assert_int_equal(k->dt, DT_F32);
  assert_int_equal(k->shape.rank, 2);
  assert_memory_equal(k->data, w, sizeof w);

  Node *mm = find_node(g, "mm");
  assert_int_equal(mm->op, OP_MatMul);
  assert_string_equal(mm->domain, "");
  assert_ptr_equal(mm->in[0], x);
  assert_ptr_equal(mm->in[1], ir_value_find(g, "w"));
  assert_int_equal(x->n_uses, 1);
  Value *y = mm->out[0];
  assert_string_equal(y->name, "y");
  assert_int_equal(y->dt, DT_F32);   /* hint from value_info */
  assert_int_equal(y->shape.d[1], 2);
  assert_int_equal(g->n_outputs, 1);
  Value *z = g->outputs[0];
  assert_string_equal(z->name, "z");
  assert_ptr_equal(z->producer, find_node(g, "r"));
  assert_true(z->is_output);
  assert_int_equal(z->dt, DT_F32);   /* hint from the output's type */
  assert_string_equal(z->shape.sym[0], "batch");
  assert_true(ir_verify(g, false, &d));
  ir_graph_free(g);
  diag_free(&d);
}

static void test_load_initializer_listed_as_input_is_weight(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(7);
  add_input(m->graph, "x", DT_F32, "2");
  add_input(m->graph, "w", DT_F32, "2");
  float w[2] = {3, 4};
  add_init(m->graph, tensor_raw("w", DT_F32, "2", w, sizeof w));
  add_node(m->graph, "Add", NULL, "x,w", "y");
  add_output(m->graph, "y", DT_F32, "2");
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->n_inputs, 1);
  assert_string_equal(g->inputs[0]->name, "x");
  assert_int_equal(ir_value_find(g, "w")->kind, VK_CONST);
  Node *add = find_node(g, "Add_0");   /* synthesized "<OpType>_<index>" */
  assert_int_equal(add->in[1]->kind, VK_CONST);
  ir_graph_free(g);
  diag_free(&d);
}

/* Constant nodes stay nodes; every attribute kind is converted. */
static void test_load_attributes_of_every_kind(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__GraphProto *gp = m->graph;
  add_input(gp, "x", DT_F32, "2");
  Onnx__NodeProto *c = add_node(gp, "Constant", "c", "", "k");
  Onnx__AttributeProto *a = add_attr(c, "value", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR);
  a->t = tensor(NULL, DT_F32, "1");
  set_floats(a->t, 1, (float[]){2.5f});

  Onnx__NodeProto *n = add_node(gp, "Foo", "foo", "x,k", "y");
  a = add_attr(n, "f", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT);
  a->has_f = 1, a->f = 0.5f;
  a = add_attr(n, "i", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT);
  a->has_i = 1, a->i = -7;
  a = add_attr(n, "s", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING);
  a->has_s = 1, a->s = (ProtobufCBinaryData){3, (uint8_t *)"a\0b"};
  a = add_attr(n, "fs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS);
  a->n_floats = 2, a->floats = (float[]){1, 2};
  a = add_attr(n, "is", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = 3, a->ints = (int64_t[]){1, -2, 3};
  a = add_attr(n, "ss", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS);
  a->n_strings = 2;
  a->strings = (ProtobufCBinaryData[]){{2, (uint8_t *)"hi"}, {0, NULL}};
  a = add_attr(n, "ts", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS);
  Onnx__TensorProto *t1 = tensor(NULL, DT_I64, "1");
  set_int64s(t1, 1, (int64_t[]){9});
  a->n_tensors = 1, a->tensors = (Onnx__TensorProto *[]){t1};
  Onnx__GraphProto *sub = graph_new("body");
  add_node(sub, "Identity", "id", "x", "sy");
  add_output(sub, "sy", DT_F32, NULL);
  a = add_attr(n, "g", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH);
  a->g = sub;
  Onnx__GraphProto *g1 = graph_new("g1"), *g2 = graph_new("g2");
  add_input(g1, "p", DT_F32, NULL);
  add_output(g1, "p", DT_F32, NULL);
  add_node(g2, "Neg", NULL, "k", "q");
  add_output(g2, "q", DT_F32, NULL);
  a = add_attr(n, "gs", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS);
  a->n_graphs = 2, a->graphs = (Onnx__GraphProto *[]){g1, g2};
  Onnx__SparseTensorProto *sp = P(sizeof *sp);
  onnx__sparse_tensor_proto__init(sp);
  sp->values = tensor(NULL, DT_F32, "1");
  set_floats(sp->values, 1, (float[]){4});
  sp->indices = tensor(NULL, DT_I64, "1");
  set_int64s(sp->indices, 1, (int64_t[]){2});
  sp->n_dims = 1, sp->dims = (int64_t[]){3};
  a = add_attr(n, "sp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR);
  a->sparse_tensor = sp;
  a = add_attr(n, "sps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS);
  a->n_sparse_tensors = 1, a->sparse_tensors = (Onnx__SparseTensorProto *[]){sp};
  a = add_attr(n, "tp", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO);
  a->tp = tensor_type(DT_F32, "1");
  a = add_attr(n, "tps", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS);
  PUSH(a->type_protos, a->n_type_protos, tensor_type(DT_I64, NULL));
  PUSH(a->type_protos, a->n_type_protos, tensor_type(DT_I32, NULL));
  /* IR version 1 style: no type, inferred from the field that is set. */
  a = add_attr(n, "old", 0);
  a->has_type = 0, a->has_i = 1, a->i = 42;
  add_output(gp, "y", DT_F32, NULL);

  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  Node *cn = find_node(g, "c");
  assert_int_equal(cn->op, OP_Constant);
  const Attr *at = ir_attr(cn, "value");
  assert_non_null(at);
  assert_int_equal(at->kind, AT_TENSOR);
  assert_true(((float *)at->u.t->data)[0] == 2.5f);

  Node *foo = find_node(g, "foo");
  assert_int_equal(foo->op, OP_Unknown_);
  assert_string_equal(foo->op_type, "Foo");
  assert_int_equal(foo->n_attrs, 14);
  assert_true(ir_attr_float(foo, "f", 0) == 0.5f);
  assert_int_equal(ir_attr_int(foo, "i", 0), -7);
  at = ir_attr(foo, "s");
  assert_int_equal(at->slen, 3);
  assert_memory_equal(at->u.s, "a\0b", 4);
  at = ir_attr(foo, "fs");
  assert_int_equal(at->n, 2);
  assert_true(at->u.fs[1] == 2.0f);
  int cnt;
  const int64_t *is = ir_attr_ints(foo, "is", &cnt);
  assert_int_equal(cnt, 3);
  assert_int_equal(is[1], -2);
  at = ir_attr(foo, "ss");
  assert_int_equal(at->n, 2);
  assert_string_equal(at->u.ss[0], "hi");
  assert_string_equal(at->u.ss[1], "");
  at = ir_attr(foo, "ts");
  assert_int_equal(at->n, 1);
  assert_int_equal(((int64_t *)at->u.ts[0]->data)[0], 9);

  at = ir_attr(foo, "g");
  assert_int_equal(at->kind, AT_GRAPH);
  Graph *body = at->u.g;
  assert_ptr_equal(body->parent, g);
  assert_string_equal(body->name, "body");
  assert_int_equal(body->n_captures, 1);
  assert_string_equal(body->captures[0]->name, "x");
  assert_int_equal(body->captures[0]->dt, DT_F32);
  assert_ptr_equal(find_node(body, "id")->in[0], body->captures[0]);
  assert_int_equal(body->n_outputs, 1);
  assert_int_equal(body->opset, 13);

  at = ir_attr(foo, "gs");
  assert_int_equal(at->n, 2);
  assert_int_equal(at->u.gs[0]->n_inputs, 1);
  assert_ptr_equal(at->u.gs[0]->outputs[0], at->u.gs[0]->inputs[0]);
  assert_int_equal(at->u.gs[1]->n_captures, 1);
  assert_string_equal(at->u.gs[1]->captures[0]->name, "k");

  at = ir_attr(foo, "sp");
  assert_int_equal(at->kind, AT_SPARSE_TENSOR);
  assert_int_equal(at->u.t->numel, 3);
  assert_true(((float *)at->u.t->data)[2] == 4.0f && ((float *)at->u.t->data)[0] == 0.0f);
  at = ir_attr(foo, "sps");
  assert_int_equal(at->n, 1);
  assert_true(((float *)at->u.ts[0]->data)[2] == 4.0f);
  at = ir_attr(foo, "tp");
  assert_int_equal(at->kind, AT_TYPE_PROTO);
  at = ir_attr(foo, "tps");
  assert_int_equal(at->kind, AT_TYPE_PROTOS);
  assert_int_equal(at->n, 2);
  assert_int_equal(ir_attr_int(foo, "old", 0), 42);
  ir_graph_free(g);
  diag_free(&d);
}

/* Captures go through every graph in between. */
static void test_load_nested_subgraph_captures(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "c", DT_BOOL, "");
  add_input(m->graph, "x", DT_F32, "2");
  Onnx__GraphProto *inner = graph_new("inner"), *outer = graph_new("outer");
  add_node(inner, "Relu", "r", "x", "ri");
  add_output(inner, "ri", DT_F32, NULL);
  Onnx__NodeProto *mid = add_node(outer, "If", "mid", "c", "ro");
  add_attr(mid, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = inner;
  add_attr(mid, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = inner;
  add_output(outer, "ro", DT_F32, NULL);
  Onnx__NodeProto *top = add_node(m->graph, "If", "top", "c", "y");
  add_attr(top, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = outer;
  add_attr(top, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = outer;
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  Graph *og = ir_attr(find_node(g, "top"), "then_branch")->u.g;
  /* outer reads c and (for inner) x from the main graph */
  assert_int_equal(og->n_captures, 2);
  assert_non_null(ir_value_find(og, "x"));
  Graph *ig = ir_attr(find_node(og, "mid"), "then_branch")->u.g;
  assert_ptr_equal(ig->parent, og);
  assert_int_equal(ig->n_captures, 1);
  assert_ptr_equal(find_node(ig, "r")->in[0], ig->captures[0]);
  ir_graph_free(g);
  diag_free(&d);
}

static void test_load_out_of_order_nodes_link(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "second", "a", "y");
  add_node(m->graph, "Neg", "first", "x", "a");
  add_output(m->graph, "y", DT_F32, "2");
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_ptr_equal(find_node(g, "second")->in[0]->producer, find_node(g, "first"));
  assert_true(ir_toposort(g, &d));
  assert_string_equal(g->first->name, "first");
  ir_graph_free(g);
  diag_free(&d);
}

/* "" inputs are Graph.none; "" outputs get fresh, unique, unreferenceable values. */
static void test_load_omitted_optional_inputs_and_outputs(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_input(m->graph, "hi", DT_F32, "");
  add_input(m->graph, "d_out1", DT_F32, "");   /* clashes with the synthesized name */
  add_node(m->graph, "Clip", "clip", "x,,hi", "y");
  add_node(m->graph, "Dropout", "d", "y", "z,");
  add_node(m->graph, "MaxPool", "mp", "z", ",idx");
  add_output(m->graph, "z", DT_F32, NULL);
  add_output(m->graph, "idx", DT_I64, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  Node *clip = find_node(g, "clip");
  assert_int_equal(clip->n_in, 3);
  assert_ptr_equal(clip->in[1], g->none);
  assert_false(ir_has_input(clip, 1));
  assert_true(ir_has_input(clip, 2));
  Node *dn = find_node(g, "d");
  assert_int_equal(dn->n_out, 2);
  assert_string_equal(dn->out[0]->name, "z");
  Value *mask = dn->out[1];
  assert_ptr_equal(mask->producer, dn);
  assert_int_equal(mask->out_index, 1);
  assert_string_equal(mask->name, "d_out1_1");
  assert_int_equal(ir_value_find(g, "d_out1")->kind, VK_INPUT);
  Node *mp = find_node(g, "mp");
  assert_string_equal(mp->out[1]->name, "idx");
  assert_int_equal(mp->out[1]->dt, DT_I64);
  assert_string_equal(mp->out[0]->name, "mp_out0");
  ir_graph_free(g);

  /* A synthesized name is not a definition a node can use. */
  m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Dropout", "d", "x", "y,");
  add_node(m->graph, "Relu", "r", "d_out1", "z");
  add_output(m->graph, "z", DT_F32, NULL);
  diag_free(&d);
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_true(has_msg(&d, "node 'r' (Relu): input 'd_out1' is not defined"));
  diag_free(&d);
}

static void test_load_unknown_ops_still_load(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  Onnx__OperatorSetIdProto *ms = P(sizeof *ms);
  onnx__operator_set_id_proto__init(ms);
  ms->domain = S("com.microsoft");
  ms->has_version = 1, ms->version = 1;
  PUSH(m->opset_import, m->n_opset_import, ms);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "ms_relu", "x", "a")->domain = S("com.microsoft");
  add_node(m->graph, "NoSuchOp", "nso", "a", "b");
  add_node(m->graph, "Relu", "std_relu", "b", "c")->domain = S("ai.onnx");
  add_output(m->graph, "c", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->n_imports, 2);
  assert_string_equal(g->imports[1].domain, "com.microsoft");
  Node *n = find_node(g, "ms_relu");
  assert_int_equal(n->op, OP_Unknown_);
  assert_string_equal(n->op_type, "Relu");
  assert_string_equal(n->domain, "com.microsoft");
  n = find_node(g, "nso");
  assert_int_equal(n->op, OP_Unknown_);
  assert_string_equal(n->op_type, "NoSuchOp");
  assert_string_equal(n->domain, "");
  n = find_node(g, "std_relu");
  assert_int_equal(n->op, OP_Relu);
  assert_string_equal(n->domain, "");
  ir_graph_free(g);
  diag_free(&d);
}

static void test_load_missing_opset_warns(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(0);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "r", "x", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  assert_int_equal(g->opset, 1);
  assert_int_equal(d.n_warnings, 1);
  assert_true(has_msg(&d, "warning: model imports no opset for the default domain"));
  ir_graph_free(g);
  diag_free(&d);
}

/* ---- malformed models ----------------------------------------------------- */

static Onnx__ModelProto *small_model(void) {
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "1,3,224,224");
  float w[16] = {0};
  add_init(m->graph, tensor_raw("w", DT_F32, "16", w, sizeof w));
  add_node(m->graph, "Relu", "r", "x", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  return m;
}

static void test_load_truncated_buffer_fails(void **state) {
  (void)state;
  size_t n;
  uint8_t *buf = pack(small_model(), &n);
  size_t cuts[] = {n / 2, n - 1, 3};
  for (int i = 0; i < 3; i++) {
    Diag d;
    diag_init(&d, "model.onnx", NULL);
    assert_null(fe_onnx_load_buffer(buf, cuts[i], "model.onnx", &d));
    assert_int_equal(d.n_errors, 1);
    assert_string_equal(diag_last(&d),
                        "model.onnx: cannot parse: not a valid ONNX model (malformed protobuf)");
    diag_free(&d);
  }
}

static void test_load_garbage_fails(void **state) {
  (void)state;
  const char *junk[] = {"\xff\xff\xff\xff\xff\xff\xff\xff", "hello, this is not a model\n",
                        "\x0a\x7f\x01"};
  for (int i = 0; i < 3; i++) {
    Diag d;
    diag_init(&d, "model.onnx", NULL);
    assert_null(fe_onnx_load_buffer(junk[i], strlen(junk[i]), "model.onnx", &d));
    assert_int_equal(d.n_errors, 1);
    assert_true(has_msg(&d, "model.onnx: cannot parse: not a valid ONNX model"));
    diag_free(&d);
  }
}

static void test_load_empty_or_missing_file_fails(void **state) {
  (void)state;
  char *dir = tmp_dir();
  char *path = path_in(dir, "empty.onnx");
  write_file(path, "", 0);
  Diag d;
  diag_init(&d, path, NULL);
  assert_null(fe_onnx_load(path, &d));
  assert_int_equal(d.n_errors, 1);
  assert_true(has_msg(&d, "cannot parse: empty file"));
  diag_free(&d);

  diag_init(&d, "missing.onnx", NULL);
  assert_null(fe_onnx_load(path_in(dir, "missing.onnx"), &d));
  assert_int_equal(d.n_errors, 1);
  assert_true(has_msg(&d, strerror(ENOENT)));
  diag_free(&d);

  /* A model written to disk loads the same as from memory. */
  size_t n;
  uint8_t *buf = pack(small_model(), &n);
  char *good = path_in(dir, "good.onnx");
  write_file(good, buf, n);
  diag_init(&d, good, NULL);
  Graph *g = fe_onnx_load(good, &d);
  assert_loads(g, &d);
  assert_string_equal(g->file, good);
  ir_graph_free(g);
  diag_free(&d);
  const char *files[] = {"empty.onnx", "good.onnx"};
  cleanup(dir, files, 2, NULL, 0);
}

static void test_load_undefined_inputs_all_reported(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "n1", "nope", "a");
  add_node(m->graph, "Add", "n2", "a,nada", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 2);
  assert_string_equal(d.msgs[0], "model.onnx: node 'n1' (Relu): input 'nope' is not defined");
  assert_string_equal(d.msgs[1], "model.onnx: node 'n2' (Add): input 'nada' is not defined");
  diag_free(&d);
}

static void test_load_duplicate_definitions_fail(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "a", "x", "y");
  add_node(m->graph, "Neg", "b", "x", "y");
  add_node(m->graph, "Neg", "c", "y", "x");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 2);
  assert_string_equal(d.msgs[0], "model.onnx: node 'b' (Neg): output 'y' is already defined "
                                 "by node 'a'");
  assert_true(has_msg(&d, "node 'c' (Neg): output 'x' is already defined as a graph input"));
  diag_free(&d);

  m = model_new(13);
  float w = 1;
  add_init(m->graph, tensor_raw("w", DT_F32, "", &w, 4));
  add_init(m->graph, tensor_raw("w", DT_F32, "", &w, 4));
  add_input(m->graph, "x", DT_F32, "2");
  add_input(m->graph, "x", DT_F32, "2");
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_true(has_msg(&d, "initializer 'w' is defined more than once"));
  assert_true(has_msg(&d, "graph input 'x' is listed more than once"));
  diag_free(&d);
}

static void test_load_output_not_produced_fails(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "x", DT_F32, "2");
  add_node(m->graph, "Relu", "r", "x", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  add_output(m->graph, "ghost", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 1);
  assert_string_equal(diag_last(&d),
                      "model.onnx: graph output 'ghost' is not produced by any node");
  diag_free(&d);

  /* In a subgraph the message says which one. */
  m = model_new(13);
  add_input(m->graph, "c", DT_BOOL, "");
  Onnx__GraphProto *body = graph_new("then");
  add_output(body, "nothing", DT_F32, NULL);
  Onnx__NodeProto *n = add_node(m->graph, "If", "if", "c", "y");
  add_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = body;
  add_output(m->graph, "y", DT_F32, NULL);
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 1);
  assert_string_equal(diag_last(&d), "model.onnx: graph output 'nothing' in subgraph 'then' "
                                     "is not produced by any node");
  diag_free(&d);
}

static void test_load_bad_input_types_fail(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(13);
  add_input(m->graph, "a", 99, "2");
  add_input(m->graph, "b", DT_F32, "2,-3");
  Onnx__ValueInfoProto *seq = vinfo("c", -1, NULL);
  seq->type = P(sizeof *seq->type);
  onnx__type_proto__init(seq->type);
  /* sequences and optionals load (control-flow lowering resolves them); maps do not */
  seq->type->value_case = ONNX__TYPE_PROTO__VALUE_MAP_TYPE;
  seq->type->map_type = P(sizeof *seq->type->map_type);
  onnx__type_proto__map__init(seq->type->map_type);
  PUSH(m->graph->input, m->graph->n_input, seq);
  add_node(m->graph, "Sum", "s", "a,b,c", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_int_equal(d.n_errors, 2);   /* the uses of a, b, c still link */
  assert_true(has_msg(&d, "graph input 'a' has invalid element type 99"));
  assert_false(has_msg(&d, "graph input 'b'"));   /* -3: an unknown dim, as ORT reads it */
  assert_true(has_msg(&d, "graph input 'c' has a map type; only tensors are supported"));
  diag_free(&d);
}

/* Paddle2ONNX writes dim_value -1 for dynamic extents: on inputs, outputs and
 * value_info it is an unnamed unknown dim (as if absent); a weight's own dims
 * carry data, so a negative one there is still an error. */
static void test_load_negative_dim_value_is_unknown(void **state) {
  (void)state;
  Onnx__ModelProto *m = model_new(11);
  add_input(m->graph, "x", DT_F32, "-1,3,N,-7");
  add_node(m->graph, "Relu", "r", "x", "y");
  add_node(m->graph, "Relu", "r2", "y", "z");
  PUSH(m->graph->value_info, m->graph->n_value_info, vinfo("y", DT_F32, "-1,3,N,-1"));
  add_output(m->graph, "z", DT_F32, "-1,3,-1,-1");
  Diag d;
  diag_init(&d, "model.onnx", NULL);
  Graph *g = load(m, &d);
  assert_loads(g, &d);
  const Value *x = g->inputs[0];
  assert_int_equal(x->shape.rank, 4);
  for (int i = 0; i < 4; i++)
    assert_int_equal(x->shape.d[i], i == 1 ? 3 : DIM_UNKNOWN);
  assert_null(x->shape.sym[0]);
  assert_string_equal(x->shape.sym[2], "N");
  assert_null(x->shape.sym[3]);
  const Value *y = ir_value_find(g, "y");
  assert_int_equal(y->shape.d[0], DIM_UNKNOWN);
  assert_int_equal(y->shape.d[3], DIM_UNKNOWN);
  assert_int_equal(g->outputs[0]->shape.d[2], DIM_UNKNOWN);
  assert_null(g->outputs[0]->shape.sym[2]);
  ir_graph_free(g);
  diag_free(&d);

  m = model_new(11);
  add_input(m->graph, "x", DT_F32, "2");
  float w[2] = {1, 2};
  add_init(m->graph, tensor_raw("w", DT_F32, "-2", w, sizeof w));
  add_node(m->graph, "Add", "a", "x,w", "y");
  add_output(m->graph, "y", DT_F32, NULL);
  diag_init(&d, "model.onnx", NULL);
  assert_null(load(m, &d));
  assert_true(has_msg(&d, "dimension 0 is negative (-2)"));
  diag_free(&d);
}

#ifndef FE_MUTANTS
#define FE_MUTANTS 3000   /* -DFE_MUTANTS=1000000 for a longer soak */
#endif

/* Random damage to a valid model never crashes the loader (run under ASan in
 * the sanitizer build): each mutant either loads or reports an error. */
static void test_load_mutated_models_never_crash(void **state) {
  (void)state;
  Onnx__ModelProto *m = small_model();
  Onnx__TensorProto *t = tensor("k", DT_I64, "2");
  set_int64s(t, 2, (int64_t[]){1, -1});
  add_init(m->graph, t);
  Onnx__GraphProto *br = graph_new("branch");
  add_node(br, "Add", "add", "y,k", "o");
  add_output(br, "o", DT_F32, "1,?");
  Onnx__NodeProto *n = add_node(m->graph, "If", "if", "c", "z,");
  add_attr(n, "then_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = br;
  add_attr(n, "else_branch", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH)->g = br;
  Onnx__AttributeProto *a = add_attr(n, "ints", ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS);
  a->n_ints = 2, a->ints = (int64_t[]){3, 4};
  add_input(m->graph, "c", DT_BOOL, "");
  add_output(m->graph, "z", DT_F32, "N");
  size_t len;
  const uint8_t *orig = pack(m, &len);
  uint8_t *buf = P(len + 8);
  uint32_t seed = 12345;
  int loaded = 0;
  for (int iter = 0; iter < FE_MUTANTS; iter++) {
    memcpy(buf, orig, len);
    size_t n_bytes = len;
    int edits = 1 + iter % 4;
    for (int e = 0; e < edits; e++) {
      seed = seed * 1103515245u + 12345u;
      size_t pos = (seed >> 8) % n_bytes;
      uint8_t val = (uint8_t)(seed >> 24);
      switch ((seed >> 4) % 4) {
      case 0: buf[pos] ^= (uint8_t)(1u << (val % 8)); break;
      case 1: buf[pos] = val; break;
      case 2: buf[pos] = (uint8_t)(val | 0x80); break;   /* long varints, huge lengths */
      default: n_bytes = pos + 1; break;                 /* truncate */
      }
    }
    Diag d;
    diag_init(&d, "model.onnx", NULL);
    Graph *g = fe_onnx_load_buffer(buf, n_bytes, "mem/model.onnx", &d);
    assert_true((g != NULL) == (d.n_errors == 0));
    loaded += g != NULL;
    ir_graph_free(g);
    diag_free(&d);
  }
  if (getenv("FE_VERBOSE"))
    fprintf(stderr, "%d of %d mutants loaded\n", loaded, FE_MUTANTS);
  assert_true(loaded > 0);   /* some damage is harmless (a changed weight) */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_load_valid_model, pool_free),
      cmocka_unit_test_teardown(test_load_initializer_listed_as_input_is_weight, pool_free),
      cmocka_unit_test_teardown(test_load_attributes_of_every_kind, pool_free),
      cmocka_unit_test_teardown(test_load_nested_subgraph_captures, pool_free),
      cmocka_unit_test_teardown(test_load_out_of_order_nodes_link, pool_free),
      cmocka_unit_test_teardown(test_load_omitted_optional_inputs_and_outputs, pool_free),
      cmocka_unit_test_teardown(test_load_unknown_ops_still_load, pool_free),
      cmocka_unit_test_teardown(test_load_missing_opset_warns, pool_free),
      cmocka_unit_test_teardown(test_load_truncated_buffer_fails, pool_free),
      cmocka_unit_test_teardown(test_load_garbage_fails, pool_free),
      cmocka_unit_test_teardown(test_load_empty_or_missing_file_fails, pool_free),
      cmocka_unit_test_teardown(test_load_undefined_inputs_all_reported, pool_free),
      cmocka_unit_test_teardown(test_load_duplicate_definitions_fail, pool_free),
      cmocka_unit_test_teardown(test_load_output_not_produced_fails, pool_free),
      cmocka_unit_test_teardown(test_load_bad_input_types_fail, pool_free),
      cmocka_unit_test_teardown(test_load_negative_dim_value_is_unknown, pool_free),
      cmocka_unit_test_teardown(test_load_mutated_models_never_crash, pool_free),
  };
  return cmocka_run_group_tests_name("frontend", tests, NULL, NULL);
}
