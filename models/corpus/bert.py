"""BERT encoders with the graph patterns of a traced PyTorch (HuggingFace) export.

Inputs input_ids, attention_mask, token_type_ids: int64 [1, seq]. Outputs
last_hidden_state [1, seq, hidden] and pooler_output [1, hidden].

  embeddings   Gather from word, position and token-type tables, Add, LayerNorm
  mask         Unsqueeze, Unsqueeze, Cast, Sub(1, m), Mul(m, -10000): [1, 1, 1, seq]
  heads        Shape -> Gather -> Unsqueeze (batch, seq) -> Concat with Constant
               [heads], [head_dim] -> Reshape -> Transpose; merged back the same way
  attention    MatMul(Q, K^T), Div by sqrt(head_dim), Add mask, Softmax, MatMul V
  linear       MatMul + Add (Gemm for the 2-D pooler)
  GELU         x * 0.5 * (1 + erf(x / sqrt 2)): Div, Erf, Add, Mul, Mul
  LayerNorm    one LayerNormalization (opset 17), or decomposed as opset < 17
               exports it: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt,
               Div, Mul gamma, Add beta
With opset < 13 Unsqueeze takes axes as an attribute; from 13 as an input.
"""

import math

import numpy as np

VOCAB = 30522


class Bert:
    def __init__(self, b, layers, hidden, heads, inter, seq, decomposed, dynamic=False):
        self.b, self.layers, self.hidden, self.heads = b, layers, hidden, heads
        self.inter, self.seq, self.decomposed = inter, seq, decomposed
        self.opset = 12 if decomposed else 17
        # dynamic: inputs [1, "seq"], positions sliced from a [1, 512] buffer by
        # the run-time length (a dynamic-axes export); the data sets keep seq.
        self.dynamic = dynamic

    # ---- small exporter idioms
    def unsqueeze(self, x, axes):
        b = self.b
        if self.opset >= 13:
            return b.op("Unsqueeze", [x, b.constant(axes, np.int64)])
        return b.op("Unsqueeze", [x], axes=axes)

    def dim(self, shape, i):
        b = self.b
        return self.unsqueeze(b.op("Gather", [shape, b.constant(i, np.int64)], axis=0), [0])

    def linear(self, x, n_in, n_out, hint):
        b = self.b
        y = b.op("MatMul", [x, b.normal((n_in, n_out), 1.0 / math.sqrt(n_in), hint + ".weight")])
        return b.op("Add", [y, b.normal(n_out, 0.02, hint + ".bias")])

    def layernorm(self, x, hint):
        b, h = self.b, self.hidden
        gamma = b.const(b.rng.uniform(0.8, 1.2, h), hint + ".weight")
        beta = b.normal(h, 0.05, hint + ".bias")
        if not self.decomposed:
            return b.op("LayerNormalization", [x, gamma, beta], axis=-1, epsilon=1e-12)
        mean = b.op("ReduceMean", [x], axes=[-1], keepdims=1)
        d = b.op("Sub", [x, mean])
        var = b.op("ReduceMean", [b.op("Pow", [d, b.constant(2.0)])], axes=[-1], keepdims=1)
        y = b.op("Div", [d, b.op("Sqrt", [b.op("Add", [var, b.constant(1e-12)])])])
        return b.op("Add", [b.op("Mul", [y, gamma]), beta])

    def gelu(self, x):
        b = self.b
        e = b.op("Erf", [b.op("Div", [x, b.constant(1.4142135381698608)])])
        return b.op("Mul", [b.op("Mul", [x, b.op("Add", [e, b.constant(1.0)])]),
                            b.constant(0.5)])

    # ---- blocks
    def embeddings(self):
        b, h = self.b, self.hidden
        b.push("embeddings")
        words = b.op("Gather", [b.normal((VOCAB, h), 1.0, "word_embeddings"), "input_ids"])
        types = b.op("Gather", [b.normal((2, h), 0.5, "token_type_embeddings"),
                                "token_type_ids"])
        if self.dynamic:
            buf = b.const(np.arange(512)[None, :], "position_ids", np.int64)
            length = self.dim(b.op("Shape", ["input_ids"]), 1)
            pos_ids = b.op("Slice", [buf, b.constant([0], np.int64), length,
                                     b.constant([1], np.int64)])
        else:
            pos_ids = b.const(np.arange(self.seq)[None, :], "position_ids", np.int64)
        pos = b.op("Gather", [b.normal((512, h), 0.5, "position_embeddings"), pos_ids])
        x = self.layernorm(b.op("Add", [b.op("Add", [words, types]), pos]), "LayerNorm")
        b.pop()
        return x

    def extended_mask(self):
        b = self.b
        m = self.unsqueeze(self.unsqueeze("attention_mask", [1]), [2])
        m = b.op("Cast", [m], to=1)
        return b.op("Mul", [b.op("Sub", [b.constant(1.0), m]), b.constant(-10000.0)])

    def split_heads(self, x, perm):
        b = self.b
        shape = b.op("Shape", [x])
        new_shape = b.op("Concat", [self.dim(shape, 0), self.dim(shape, 1),
                                    b.constant([self.heads], np.int64),
                                    b.constant([self.hidden // self.heads], np.int64)], axis=0)
        return b.op("Transpose", [b.op("Reshape", [x, new_shape])], perm=perm)

    def merge_heads(self, ctx):
        b = self.b
        ctx = b.op("Transpose", [ctx], perm=[0, 2, 1, 3])
        shape = b.op("Shape", [ctx])
        new_shape = b.op("Concat", [self.dim(shape, 0), self.dim(shape, 1),
                                    b.constant([self.hidden], np.int64)], axis=0)
        return b.op("Reshape", [ctx, new_shape])

    def layer(self, x, mask, i):
        b, h = self.b, self.hidden
        b.push(f"encoder/layer.{i}/attention")
        q = self.split_heads(self.linear(x, h, h, "query"), [0, 2, 1, 3])
        k = self.split_heads(self.linear(x, h, h, "key"), [0, 2, 3, 1])
        v = self.split_heads(self.linear(x, h, h, "value"), [0, 2, 1, 3])
        scores = b.op("MatMul", [q, k])
        scores = b.op("Div", [scores, b.constant(math.sqrt(h // self.heads))])
        probs = b.op("Softmax", [b.op("Add", [scores, mask])], axis=3 if self.opset < 13 else -1)
        ctx = self.merge_heads(b.op("MatMul", [probs, v]))
        x = self.layernorm(b.op("Add", [self.linear(ctx, h, h, "output.dense"), x]),
                           "output.LayerNorm")
        b.pop()
        b.push(f"encoder/layer.{i}")
        y = self.gelu(self.linear(x, h, self.inter, "intermediate.dense"))
        x = self.layernorm(b.op("Add", [self.linear(y, self.inter, h, "output.dense"), x]),
                           "output.LayerNorm")
        b.pop()
        return x

    def build(self):
        b, h, s = self.b, self.hidden, self.seq
        x = self.embeddings()
        mask = self.extended_mask()
        for i in range(self.layers):
            x = self.layer(x, mask, i)
        b.op("Identity", [x], out="last_hidden_state")
        b.push("pooler")
        first = b.op("Gather", ["last_hidden_state", b.constant(0, np.int64)], axis=1)
        pooled = b.op("Gemm", [first, b.normal((h, h), 1.0 / math.sqrt(h), "dense.weight"),
                               b.normal(h, 0.02, "dense.bias")], transB=1)
        b.pop()
        b.op("Tanh", [pooled], out="pooler_output")
        if self.dynamic:
            s = "seq"
        ints = [(n, [1, s], np.int64) for n in ("input_ids", "attention_mask", "token_type_ids")]
        model = b.model(ints, [("last_hidden_state", [1, s, h], np.float32),
                               ("pooler_output", [1, h], np.float32)], self.opset)
        return model, self.feeds()

    def feeds(self):
        """[CLS] + random tokens, the last eighth padding (mask 0, id 0), two segments."""
        s = self.seq
        rng = np.random.default_rng(self.b.rng.integers(1 << 31))
        valid = s - s // 8
        ids = np.zeros((1, s), np.int64)
        ids[0, :valid] = rng.integers(1000, VOCAB, valid)
        ids[0, 0] = 101
        mask = np.zeros((1, s), np.int64)
        mask[0, :valid] = 1
        types = np.zeros((1, s), np.int64)
        types[0, valid // 2:valid] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def bert_tiny(b):
    return Bert(b, 2, 128, 2, 512, 128, decomposed=False).build()


def bert_tiny_decomposed(b):
    return Bert(b, 2, 128, 2, 512, 128, decomposed=True).build()


def bert_tiny_dynamic(b):
    """bert_tiny exported with a dynamic sequence axis; data sets at seq 128."""
    return Bert(b, 2, 128, 2, 512, 128, decomposed=False, dynamic=True).build()


def bert_base(b):
    return Bert(b, 12, 768, 12, 3072, 128, decomposed=False).build()


def bert_base_decomposed(b):
    return Bert(b, 12, 768, 12, 3072, 128, decomposed=True).build()
