"""One-node kernels for the micro-benchmark, and the ONNX suite's light models.

The micro models isolate the kernels that dominate the real models: SGEMM
1024^3 (the peak-fraction target), ResNet's 3x3 and 1x1 convolutions at
56x56, MobileNetV2's depthwise 3x3, and BERT-base's FFN MatMul. The weight is
an initializer, so a compiler may pack it ahead of time as it would in a model.

The light models ship inside the onnx package (onnx/backend/test/data/light):
real topologies (AlexNet, DenseNet-121, Inception v1/v2, ResNet-50,
ShuffleNet, SqueezeNet, VGG-19, ZFNet-512) whose weights are ConstantOfShape
fills. They were not written for onnxc, which makes them a check on models
never seen during development. They are copied unchanged; only the inputs
(fixed seed) and ONNX Runtime's outputs are generated.
"""

import os

import numpy as np
import onnx

from cnn import conv


def _feeds(b, shapes):
    rng = np.random.default_rng(b.rng.integers(1 << 31))
    return {n: rng.standard_normal(s, dtype=np.float32) for n, s in shapes.items()}


def _one(b, x_shape, build, y_shape, opset=13):
    y = build("X")
    b.op("Identity", [y], out="Y")
    return (b.model([("X", x_shape, np.float32)], [("Y", y_shape, np.float32)], opset),
            _feeds(b, {"X": x_shape}))


def sgemm_1024(b):
    return _one(b, [1024, 1024],
                lambda x: b.op("MatMul", [x, b.normal((1024, 1024), 1 / 32, "B")]),
                [1024, 1024])


def matmul_128_768_3072(b):
    def build(x):
        y = b.op("MatMul", [x, b.normal((768, 3072), 768 ** -0.5, "W")])
        return b.op("Add", [y, b.normal(3072, 0.02, "bias")])
    return _one(b, [1, 128, 768], build, [1, 128, 3072])


def conv3x3_64_56(b):
    return _one(b, [1, 64, 56, 56], lambda x: conv(b, x, 64, 64, 3, pads=1), [1, 64, 56, 56])


def conv1x1_256_64_56(b):
    return _one(b, [1, 256, 56, 56], lambda x: conv(b, x, 256, 64, 1), [1, 64, 56, 56])


def dwconv3x3_144_56(b):
    return _one(b, [1, 144, 56, 56], lambda x: conv(b, x, 144, 144, 3, pads=1, group=144),
                [1, 144, 56, 56])


# ------------------------------------------------------------- light --

LIGHT = ["bvlc_alexnet", "densenet121", "inception_v1", "inception_v2", "resnet50",
         "shufflenet", "squeezenet", "vgg19", "zfnet512"]


def light_path(name):
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light",
                        f"light_{name}.onnx")


def light(name):
    def build(b):
        model = onnx.load(light_path(name))
        inits = {t.name for t in model.graph.initializer}
        shapes = {vi.name: [d.dim_value for d in vi.type.tensor_type.shape.dim]
                  for vi in model.graph.input if vi.name not in inits}
        return model, _feeds(b, shapes)
    build.__name__ = f"light_{name}"
    return build
