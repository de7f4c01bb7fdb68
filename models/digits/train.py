#!/usr/bin/env python3
"""Train a tiny CNN on scikit-learn's 8x8 digits and export it to ONNX.

The network is trained in plain numpy so that the exported graph uses only
Conv, Relu, MaxPool, Flatten, Gemm and Softmax, and so that the run is
reproducible from the fixed seed without any deep-learning framework.

Writes, next to this script (or into --out):
  digits.onnx        the model: "image" float32[1,1,8,8] -> "probs" float32[1,10]
  test_digits.bin    held-back images, little-endian float32, N*64 values
  test_labels.bin    held-back labels, N uint8 values
"""

import argparse
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from sklearn.datasets import load_digits

SEED = 0
TEST_FRACTION = 0.2
EPOCHS = 30
BATCH = 32
LEARNING_RATE = 3e-3


# ---------------------------------------------------------------- layers --

def im2col3x3(x):
    """[N,C,H,W] -> [N,H,W,C*9] patches of a 3x3 window with zero padding 1.

    The last axis is ordered (c, ky, kx) so a Conv weight [O,C,3,3] reshaped
    to [O,C*9] lines up with it.
    """
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    patches = np.stack([xp[:, :, ky:ky + h, kx:kx + w]
                        for ky in range(3) for kx in range(3)], axis=2)
    return patches.reshape(n, c * 9, h, w).transpose(0, 2, 3, 1)


def col2im3x3(dcols, c):
    """Adjoint of im2col3x3: scatter-add patch gradients back to the input."""
    n, h, w, _ = dcols.shape
    d = dcols.transpose(0, 3, 1, 2).reshape(n, c, 9, h, w)
    dxp = np.zeros((n, c, h + 2, w + 2), dtype=dcols.dtype)
    for k in range(9):
        ky, kx = divmod(k, 3)
        dxp[:, :, ky:ky + h, kx:kx + w] += d[:, :, k]
    return dxp[:, :, 1:-1, 1:-1]


def conv3x3_forward(x, w, b):
    cols = im2col3x3(x)
    out = cols @ w.reshape(w.shape[0], -1).T + b
    return out.transpose(0, 3, 1, 2), cols


def conv3x3_backward(dout, cols, w, in_channels):
    o = w.shape[0]
    d = dout.transpose(0, 2, 3, 1)
    dw = (d.reshape(-1, o).T @ cols.reshape(-1, cols.shape[-1])).reshape(w.shape)
    db = d.sum(axis=(0, 1, 2))
    dx = col2im3x3(d @ w.reshape(o, -1), in_channels)
    return dx, dw, db


def maxpool2_forward(x):
    n, c, h, w = x.shape
    windows = (x.reshape(n, c, h // 2, 2, w // 2, 2)
                .transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4))
    arg = windows.argmax(axis=-1)
    return np.take_along_axis(windows, arg[..., None], -1)[..., 0], arg


def maxpool2_backward(dout, arg):
    n, c, h2, w2 = dout.shape
    dwin = np.zeros((n, c, h2, w2, 4), dtype=dout.dtype)
    np.put_along_axis(dwin, arg[..., None], dout[..., None], -1)
    return (dwin.reshape(n, c, h2, w2, 2, 2)
                .transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h2 * 2, w2 * 2))


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


# ----------------------------------------------------------------- model --

def init_params(rng):
    def he(shape, fan_in):
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    return {
        "conv1_w": he((8, 1, 3, 3), 9), "conv1_b": np.zeros(8, np.float32),
        "conv2_w": he((16, 8, 3, 3), 72), "conv2_b": np.zeros(16, np.float32),
        "fc_w": he((10, 64), 64), "fc_b": np.zeros(10, np.float32),
    }


def forward(p, x):
    """Returns class probabilities and the activations backward() needs."""
    a1, cols1 = conv3x3_forward(x, p["conv1_w"], p["conv1_b"])
    r1 = np.maximum(a1, 0)
    m1, arg1 = maxpool2_forward(r1)
    a2, cols2 = conv3x3_forward(m1, p["conv2_w"], p["conv2_b"])
    r2 = np.maximum(a2, 0)
    m2, arg2 = maxpool2_forward(r2)
    flat = m2.reshape(len(x), -1)
    probs = softmax(flat @ p["fc_w"].T + p["fc_b"])
    return probs, (cols1, a1, arg1, cols2, a2, arg2, flat, m2.shape)


def backward(p, probs, cache, labels):
    """Gradients of the mean cross-entropy loss."""
    cols1, a1, arg1, cols2, a2, arg2, flat, m2_shape = cache
    dz = probs.copy()
    dz[np.arange(len(labels)), labels] -= 1
    dz /= len(labels)
    g = {"fc_w": dz.T @ flat, "fc_b": dz.sum(axis=0)}
    d = maxpool2_backward((dz @ p["fc_w"]).reshape(m2_shape), arg2) * (a2 > 0)
    d, g["conv2_w"], g["conv2_b"] = conv3x3_backward(d, cols2, p["conv2_w"], 8)
    d = maxpool2_backward(d, arg1) * (a1 > 0)
    _, g["conv1_w"], g["conv1_b"] = conv3x3_backward(d, cols1, p["conv1_w"], 1)
    return g


def train(x, y, rng):
    params = init_params(rng)
    # Adam state
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(v) for k, v in params.items()}
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0
    for epoch in range(EPOCHS):
        order = rng.permutation(len(x))
        loss = 0.0
        for start in range(0, len(x), BATCH):
            idx = order[start:start + BATCH]
            probs, cache = forward(params, x[idx])
            loss += -np.log(probs[np.arange(len(idx)), y[idx]] + 1e-12).sum()
            grads = backward(params, probs, cache, y[idx])
            step += 1
            for k in params:
                m[k] = beta1 * m[k] + (1 - beta1) * grads[k]
                v[k] = beta2 * v[k] + (1 - beta2) * grads[k] ** 2
                mhat = m[k] / (1 - beta1 ** step)
                vhat = v[k] / (1 - beta2 ** step)
                update = LEARNING_RATE * mhat / (np.sqrt(vhat) + eps)
                params[k] = (params[k] - update).astype(np.float32)
        if epoch % 5 == 4 or epoch == EPOCHS - 1:
            print(f"epoch {epoch + 1:2d}: mean train loss {loss / len(x):.4f}")
    return params


# ------------------------------------------------------------------ ONNX --

def export_onnx(p):
    inits = [numpy_helper.from_array(v, name=k) for k, v in p.items()]
    nodes = [
        helper.make_node("Conv", ["image", "conv1_w", "conv1_b"], ["conv1"],
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"]),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2_w", "conv2_b"], ["conv2"],
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"]),
        helper.make_node("MaxPool", ["relu2"], ["pool2"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool2"], ["flat"], axis=1),
        helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "digits_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 1, 8, 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="onnxc-digits-train")
    model.ir_version = 8
    model.doc_string = ("8x8 handwritten digit classifier (scikit-learn digits). "
                        "Input: pixel values / 16, shape [1,1,8,8].")
    onnx.checker.check_model(model, full_check=True)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.dirname(os.path.abspath(__file__)),
                    help="output directory (default: next to this script)")
    args = ap.parse_args()

    digits = load_digits()
    x_all = (digits.data / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y_all = digits.target.astype(np.int64)

    rng = np.random.default_rng(SEED)
    perm = rng.permutation(len(x_all))
    n_train = len(x_all) - int(round(len(x_all) * TEST_FRACTION))
    train_idx, test_idx = perm[:n_train], perm[n_train:]
    x_train, y_train = x_all[train_idx], y_all[train_idx]
    x_test, y_test = x_all[test_idx], y_all[test_idx]

    params = train(x_train, y_train, rng)
    np_probs, _ = forward(params, x_test)
    np_pred = np_probs.argmax(axis=1)
    np_acc = (np_pred == y_test).mean()

    model = export_onnx(params)
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ort_probs = np.concatenate([sess.run(None, {"image": x_test[i:i + 1]})[0]
                                for i in range(len(x_test))])
    ort_pred = ort_probs.argmax(axis=1)
    ort_acc = (ort_pred == y_test).mean()
    max_diff = float(np.abs(ort_probs - np_probs).max())

    print(f"train {len(x_train)}, test {len(x_test)}")
    print(f"test accuracy: numpy {np_acc:.4f}, onnxruntime {ort_acc:.4f}")
    print(f"max |p_numpy - p_ort| = {max_diff:.3g}")
    if not np.array_equal(np_pred, ort_pred) or max_diff > 1e-4:
        raise SystemExit("onnxruntime does not reproduce the numpy model")

    os.makedirs(args.out, exist_ok=True)
    onnx.save(model, os.path.join(args.out, "digits.onnx"))
    x_test.astype("<f4").tofile(os.path.join(args.out, "test_digits.bin"))
    y_test.astype(np.uint8).tofile(os.path.join(args.out, "test_labels.bin"))


if __name__ == "__main__":
    main()
