"""An OCR-style text-line recognizer with a dynamic width, as PP-OCR/CRNN-style
exports with dynamic axes write them.

Input x: float32 [1, 3, 48, "W"] (a text line of any width); output probs
[1, T, 97] with T = the width after the backbone's strides. The backbone is
MobileNetV3-flavored: a stride-2 stem (HardSwish), a depthwise conv with a
squeeze-excite block (GlobalAveragePool, 1x1 convs, HardSigmoid, Mul), a
stride-(2, 1) conv that halves the height only, a MaxPool and an AveragePool
(count_include_pad 0) with pads, then a conv whose kernel spans the remaining
height, Squeeze, Transpose to [1, T, C], MatMul + Add and Softmax. BatchNorm
stays explicit. The data set is at W = 320; the dynamic-shape test adds more.
"""

import numpy as np

from cnn import batchnorm

CLASSES = 97


def _conv(b, x, cin, cout, k, strides, pads, group=1, bias=False):
    kh, kw = (k, k) if isinstance(k, int) else k
    fan = cin // group * kh * kw
    ins = [x, b.normal((cout, cin // group, kh, kw), np.sqrt(2.0 / fan), "weight")]
    if bias:
        ins.append(b.normal(cout, 0.05, "bias"))
    return b.op("Conv", ins, kernel_shape=[kh, kw], strides=list(strides), pads=list(pads), group=group)


def ocr_rec_dynamic(b):
    b.push("backbone")
    x = batchnorm(b, _conv(b, "x", 3, 16, 3, (2, 2), (1, 1, 1, 1)), 16)
    x = b.op("HardSwish", [x])                                    # [16, 24, W1]
    y = b.op("Relu", [batchnorm(b, _conv(b, x, 16, 16, 3, (1, 1), (1, 1, 1, 1), group=16), 16)])
    s = b.op("GlobalAveragePool", [y])
    s = b.op("Relu", [_conv(b, s, 16, 4, 1, (1, 1), (0, 0, 0, 0), bias=True)])
    s = b.op("HardSigmoid", [_conv(b, s, 4, 16, 1, (1, 1), (0, 0, 0, 0), bias=True)], alpha=0.2, beta=0.5)
    y = b.op("Mul", [y, s])
    y = b.op("Relu", [batchnorm(b, _conv(b, y, 16, 32, 1, (1, 1), (0, 0, 0, 0)), 32)])
    y = b.op("Relu", [batchnorm(b, _conv(b, y, 32, 48, 3, (2, 1), (1, 1, 1, 1)), 48)])  # [48, 12, W1]
    y = b.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2])                      # [48, 6, W1 / 2]
    y = b.op("AveragePool", [y], kernel_shape=[3, 3], strides=[2, 1], pads=[1, 1, 1, 1],
             count_include_pad=0)                                                      # [48, 3, W2]
    y = b.op("Relu", [_conv(b, y, 48, 64, (3, 1), (1, 1), (0, 0, 0, 0), bias=True)])    # [64, 1, W2]
    b.pop()
    b.push("head")
    seq = b.op("Squeeze", [y, b.const(np.array([2], np.int64), "axes", np.int64)])
    seq = b.op("Transpose", [seq], perm=[0, 2, 1])                                     # [1, T, 64]
    logits = b.op("Add", [b.op("MatMul", [seq, b.normal((64, CLASSES), 0.3, "fc.weight")]),
                          b.normal(CLASSES, 0.1, "fc.bias")])
    b.op("Softmax", [logits], out="probs", axis=-1)
    b.pop()
    model = b.model([("x", [1, 3, 48, "W"], np.float32)], [("probs", [1, "T", CLASSES], np.float32)], 17)
    rng = np.random.default_rng(b.rng.integers(1 << 31))
    return model, {"x": rng.standard_normal((1, 3, 48, 320), dtype=np.float32)}
