"""Convolutional networks of the corpus, at 224x224, batch 1, random weights.

The topologies are the published ones (torchvision's layer tables); the graph
patterns are what exporters write:
  resnet50      opset 13, Conv + explicit BatchNormalization + Relu, residual
                Add, MaxPool with pads, GlobalAveragePool, x.view(x.size(0), -1)
                as Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Gemm.
  mobilenetv2   opset 17, BatchNorm folded into Conv bias (as torch.onnx does),
                depthwise convs (group == channels), Relu6 as Clip with min/max
                inputs, inverted residuals with linear bottlenecks, Flatten.
  squeezenet1_1 opset 12, fire modules (squeeze 1x1, expand 1x1 | 3x3, Concat),
                unpadded convs and ceil_mode MaxPools, inference Dropout.
  inception     opset 13, GoogLeNet with BatchNorm: four-branch modules joined
                by Concat, factorized 1x3/3x1 convs, AveragePool 3x3 with pads
                (count_include_pad both ways), ceil_mode MaxPools.
Every classifier ends in Softmax, so outputs are probabilities whose relative
error is the absolute error of the logits: a float32-robust comparison.
"""

import numpy as np


def _pair(k):
    return (k, k) if isinstance(k, int) else tuple(k)


def conv(b, x, cin, cout, k, stride=1, pads=0, group=1, bias=True, gain=2.0):
    kh, kw = _pair(k)
    if isinstance(pads, int):
        pads = [pads] * 4
    inputs = [x, b.he((cout, cin // group, kh, kw), "weight", gain)]
    if bias:
        inputs.append(b.normal(cout, 0.05, "bias"))
    return b.op("Conv", inputs, kernel_shape=[kh, kw], strides=[stride, stride],
                pads=list(pads), group=group, dilations=[1, 1])


def batchnorm(b, x, c, gamma=(0.5, 1.5), eps=1e-5):
    r = b.rng
    return b.op("BatchNormalization", [
        x,
        b.const(r.uniform(*gamma, c), "bn_scale"),
        b.const(r.standard_normal(c) * 0.1, "bn_bias"),
        b.const(r.standard_normal(c) * 0.1, "bn_mean"),
        b.const(r.uniform(0.5, 1.5, c), "bn_var"),
    ], epsilon=eps)


def conv_bn(b, x, cin, cout, k, stride=1, pads=0, relu=True, gamma=(0.5, 1.5), eps=1e-5):
    y = batchnorm(b, conv(b, x, cin, cout, k, stride, pads, bias=False), cout, gamma, eps)
    return b.op("Relu", [y]) if relu else y


def classifier(b, x, k, n=1000, out="probs"):
    """Gemm + Softmax; the weight is scaled once the features are measured
    (corpus_lib.calibrate) so that the logits have std about 3."""
    w = b.normal((n, k), 1.0, "fc_weight")
    b.calibrations.append((x, w, 3.0, -1))
    logits = b.op("Gemm", [x, w, b.normal(n, 0.1, "fc_bias")], transB=1)
    return b.op("Softmax", [logits], out=out, axis=1)


def image_feeds(b, name="input"):
    rng = np.random.default_rng(b.rng.integers(1 << 31))
    return {name: rng.standard_normal((1, 3, 224, 224), dtype=np.float32)}


# ------------------------------------------------------------ ResNet-50 --

def resnet50(b):
    b.push("stem")
    x = conv_bn(b, "input", 3, 64, 7, 2, 3)
    x = b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    b.pop()
    cin = 64
    for stage, (width, blocks, stride) in enumerate([(64, 3, 1), (128, 4, 2),
                                                     (256, 6, 2), (512, 3, 2)]):
        for i in range(blocks):
            b.push(f"layer{stage + 1}/{i}")
            s = stride if i == 0 else 1
            y = conv_bn(b, x, cin, width, 1)
            y = conv_bn(b, y, width, width, 3, s, 1)             # v1.5: stride on the 3x3
            # a small last gamma keeps the residual sum from growing block by block
            y = conv_bn(b, y, width, 4 * width, 1, relu=False, gamma=(0.1, 0.3))
            shortcut = x if i else conv_bn(b, x, cin, 4 * width, 1, s, relu=False)
            x = b.op("Relu", [b.op("Add", [y, shortcut])])
            cin = 4 * width
            b.pop()
    x = b.op("GlobalAveragePool", [x])
    # x.view(x.size(0), -1) as the tracing exporter writes it
    batch = b.op("Gather", [b.op("Shape", [x]), b.constant(0, np.int64)], axis=0)
    batch = b.op("Unsqueeze", [batch, b.constant([0], np.int64)])
    shape = b.op("Concat", [batch, b.constant([-1], np.int64)], axis=0)
    x = b.op("Reshape", [x, shape])
    probs = classifier(b, x, 2048)
    return (b.model([("input", [1, 3, 224, 224], np.float32)],
                    [(probs, [1, 1000], np.float32)], opset=13), image_feeds(b))


# ---------------------------------------------------------- MobileNetV2 --

MBV2_SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2),
                 (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1)]   # t, c, n, s


def mobilenetv2(b):
    lo, hi = b.const(0.0, "clip_min"), b.const(6.0, "clip_max")

    def relu6(t):
        return b.op("Clip", [t, lo, hi])

    x = relu6(conv(b, "input", 3, 32, 3, 2, 1))
    cin = 32
    for block, (t, c, n, s) in enumerate(MBV2_SETTINGS):
        for i in range(n):
            b.push(f"features/{block}/{i}")
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x if t == 1 else relu6(conv(b, x, cin, hidden, 1))
            y = relu6(conv(b, y, hidden, hidden, 3, stride, 1, group=hidden))
            residual = stride == 1 and cin == c
            y = conv(b, y, hidden, c, 1, gain=0.5 if residual else 1.0)  # linear bottleneck
            x = b.op("Add", [x, y]) if residual else y
            cin = c
            b.pop()
    x = relu6(conv(b, x, 320, 1280, 1))
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    probs = classifier(b, x, 1280)
    return (b.model([("input", [1, 3, 224, 224], np.float32)],
                    [(probs, [1, 1000], np.float32)], opset=17), image_feeds(b))


# -------------------------------------------------------- SqueezeNet 1.1 --

def squeezenet1_1(b):
    def fire(x, cin, squeeze, e1, e3):
        s = b.op("Relu", [conv(b, x, cin, squeeze, 1)])
        left = b.op("Relu", [conv(b, s, squeeze, e1, 1)])
        right = b.op("Relu", [conv(b, s, squeeze, e3, 3, pads=1)])
        return b.op("Concat", [left, right], axis=1)

    def pool(x):
        return b.op("MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    x = pool(b.op("Relu", [conv(b, "input", 3, 64, 3, 2)]))   # 111 -> 55
    x = fire(x, 64, 16, 64, 64)
    x = pool(fire(x, 128, 16, 64, 64))                       # 55 -> 27
    x = fire(x, 128, 32, 128, 128)
    x = pool(fire(x, 256, 32, 128, 128))                     # 27 -> 13
    x = fire(x, 256, 48, 192, 192)
    x = fire(x, 384, 48, 192, 192)
    x = fire(x, 384, 64, 256, 256)
    x = fire(x, 512, 64, 256, 256)
    x = b.op("Dropout", [x, b.const(0.5, "ratio")])
    w = b.normal((1000, 512, 1, 1), 1.0, "conv10_weight")
    b.calibrations.append((x, w, 6.0, 1))   # the GAP of 169 pixels narrows the spread
    x = b.op("Relu", [b.op("Conv", [x, w, b.normal(1000, 0.1, "conv10_bias")],
                           kernel_shape=[1, 1])])
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    probs = b.op("Softmax", [x], out="probs", axis=1)
    return (b.model([("input", [1, 3, 224, 224], np.float32)],
                    [(probs, [1, 1000], np.float32)], opset=12), image_feeds(b))


# ------------------------------------------------- Inception (GoogLeNet) --

# in, 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj
GOOGLENET = {
    "3a": (192, 64, 96, 128, 16, 32, 32), "3b": (256, 128, 128, 192, 32, 96, 64),
    "4a": (480, 192, 96, 208, 16, 48, 64), "4b": (512, 160, 112, 224, 24, 64, 64),
    "4c": (512, 128, 128, 256, 24, 64, 64), "4d": (512, 112, 144, 288, 32, 64, 64),
    "4e": (528, 256, 160, 320, 32, 128, 128), "5a": (832, 256, 160, 320, 32, 128, 128),
    "5b": (832, 384, 192, 384, 48, 128, 128),
}
FACTORIZED = {"4b", "4c", "4d"}   # 3x3 branch as 1x3 then 3x1 (Inception v3 style)


def inception(b):
    def cbr(x, cin, cout, k, stride=1, pads=0):
        return conv_bn(b, x, cin, cout, k, stride, pads, eps=1e-3)

    def module(x, key, idx):
        cin, c1, c3r, c3, c5r, c5, pp = GOOGLENET[key]
        b.push(f"inception{key}")
        b1 = cbr(x, cin, c1, 1)
        b2 = cbr(x, cin, c3r, 1)
        if key in FACTORIZED:
            b2 = cbr(cbr(b2, c3r, c3, (1, 3), pads=[0, 1, 0, 1]), c3, c3, (3, 1),
                     pads=[1, 0, 1, 0])
        else:
            b2 = cbr(b2, c3r, c3, 3, pads=1)
        b3 = cbr(cbr(x, cin, c5r, 1), c5r, c5, 5, pads=2)
        p = b.op("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                 count_include_pad=idx % 2)
        b4 = cbr(p, cin, pp, 1)
        b.pop()
        return b.op("Concat", [b1, b2, b3, b4], axis=1)

    def pool(x, k=3):
        return b.op("MaxPool", [x], kernel_shape=[k, k], strides=[2, 2], ceil_mode=1)

    x = pool(cbr("input", 3, 64, 7, 2, 3))                   # 112 -> 56
    x = pool(cbr(cbr(x, 64, 64, 1), 64, 192, 3, pads=1))       # 56 -> 28
    keys = list(GOOGLENET)
    for idx, key in enumerate(keys):
        if key == "4a":
            x = pool(x)                                        # 28 -> 14
        if key == "5a":
            x = pool(x, 2)                                     # 14 -> 7
        x = module(x, key, idx)
    x = b.op("Flatten", [b.op("GlobalAveragePool", [x])], axis=1)
    x = b.op("Dropout", [x, b.const(0.2, "ratio")])
    probs = classifier(b, x, 1024)
    return (b.model([("input", [1, 3, 224, 224], np.float32)],
                    [(probs, [1, 1000], np.float32)], opset=13), image_feeds(b))
