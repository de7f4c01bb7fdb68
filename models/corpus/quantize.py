"""int8 versions of corpus models, as onnxruntime's quantizer writes them.

`qdq(build)` wraps a float model builder of cnn.py: it builds the float net,
scales its classifier (corpus_lib.calibrate), then runs
onnxruntime.quantization.quant_pre_process (shape inference, BatchNorm folded
into Conv) and quantize_static in QDQ format with ORT's CPU defaults: uint8
activations (asymmetric), int8 weights (symmetric), here per channel, int32
biases, MinMax calibration. The calibration batches are random normal images
from a generator seeded by the model's name, so reruns write the same files.

The case's reference outputs are ONNX Runtime's with graph optimizations on
(make_corpus.py passes reference="optimized"): ORT then runs the QDQ groups
on its integer kernels (QLinearConv, QGemm, QLinearAdd, ...), the numbers an
int8 deployment gets and what onnxc's lowering (passes/fuse_quant.c)
reproduces; docs/int8.md.

`dynamic(build)` wraps the BERT builders the way users quantize transformers:
quant_pre_process, then quantize_dynamic with int8 weights (each MatMul by a
weight becomes DynamicQuantizeLinear + MatMulInteger + Cast + Mul by the
scales, which onnxc lowers to its int8 product kernel, passes/fuse_qmatmul.c).
No calibration: the activations' ranges are taken at run time.
"""

import os
import tempfile

import numpy as np
import onnx

import bert
import cnn
import corpus_lib

CALIB_BATCHES = 8


class _Reader:
    """quantize_static's CalibrationDataReader over fixed random feeds."""

    def __init__(self, feeds_list):
        self.it = iter(feeds_list)

    def get_next(self):
        return next(self.it, None)

    def rewind(self):   # newer ORT versions may call it
        pass


def quantize_model(model, feeds, seed, per_channel=True):
    """The QDQ model of a float model: pre-processing, then quantize_static."""
    from onnxruntime.quantization import (CalibrationMethod, QuantFormat, QuantType,
                                          quantize_static)
    from onnxruntime.quantization.shape_inference import quant_pre_process

    rng = np.random.default_rng(seed)
    calib = []
    for _ in range(CALIB_BATCHES):
        calib.append({k: rng.standard_normal(v.shape).astype(v.dtype) for k, v in feeds.items()})
    with tempfile.TemporaryDirectory() as tmp:
        src, pre, dst = (os.path.join(tmp, n) for n in ("float.onnx", "pre.onnx", "qdq.onnx"))
        onnx.save(model, src)
        quant_pre_process(src, pre, skip_symbolic_shape=True)
        quantize_static(pre, dst, _Reader(calib), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        per_channel=per_channel, calibrate_method=CalibrationMethod.MinMax)
        q = onnx.load(dst)
    q.producer_name = "onnxc-corpus"
    return q


def qdq(build):
    """A corpus builder that returns the QDQ version of build's model."""
    def qbuild(b):
        model, feeds = build(b)
        corpus_lib.calibrate(b, model, feeds)
        b.calibrations = []          # done: build_case's own pass has nothing left
        return quantize_model(model, feeds, b.rng.integers(1 << 31)), feeds
    qbuild.__name__ = build.__name__ + "_int8"
    qbuild.__module__ = __name__
    return qbuild


def small_cnn(b):
    """A small net with every lowered QDQ pattern: 3x3 and 1x1 convs with
    Relu, MaxPool, a residual Add, Concat, depthwise conv, GlobalAveragePool,
    Flatten and Gemm."""
    x = b.op("Relu", [cnn.conv(b, "input", 3, 16, 3, 1, 1)])
    x = b.op("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    y = b.op("Relu", [cnn.conv(b, x, 16, 16, 3, 1, 1)])
    y = cnn.conv(b, y, 16, 16, 1, gain=0.5)
    x = b.op("Relu", [b.op("Add", [x, y])])
    d = b.op("Relu", [cnn.conv(b, x, 16, 16, 3, 2, 1, group=16)])
    p = b.op("Relu", [cnn.conv(b, x, 16, 8, 1, 2)])
    x = b.op("Concat", [d, p], axis=1)
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    probs = cnn.classifier(b, x, 24, n=10)
    rng = np.random.default_rng(b.rng.integers(1 << 31))
    feeds = {"input": rng.standard_normal((1, 3, 32, 32), dtype=np.float32)}
    return (b.model([("input", [1, 3, 32, 32], np.float32)],
                    [(probs, [1, 10], np.float32)], opset=17), feeds)


def dynamic(build):
    """A corpus builder that returns the quantize_dynamic version of build's model."""
    def dbuild(b):
        from onnxruntime.quantization import QuantType, quantize_dynamic
        from onnxruntime.quantization.shape_inference import quant_pre_process
        model, feeds = build(b)
        corpus_lib.calibrate(b, model, feeds)
        b.calibrations = []
        with tempfile.TemporaryDirectory() as tmp:
            src, pre, dst = (os.path.join(tmp, n) for n in ("float.onnx", "pre.onnx", "dyn.onnx"))
            onnx.save(model, src)
            quant_pre_process(src, pre, skip_symbolic_shape=True)
            quantize_dynamic(pre, dst, weight_type=QuantType.QInt8)
            q = onnx.load(dst)
        q.producer_name = "onnxc-corpus"
        return q, feeds
    dbuild.__name__ = build.__name__ + "_int8"
    dbuild.__module__ = __name__
    return dbuild


resnet50_int8 = qdq(cnn.resnet50)
mobilenetv2_int8 = qdq(cnn.mobilenetv2)
small_cnn_int8 = qdq(small_cnn)
bert_tiny_int8 = dynamic(bert.bert_tiny)
bert_base_int8 = dynamic(bert.bert_base)
