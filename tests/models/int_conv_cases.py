#!/usr/bin/env python3
"""ConvInteger edge cases against an exact integer reference (numpy).

quantize_dynamic writes each Conv of a model as DynamicQuantizeLinear +
ConvInteger (int32 out) + a float rescale. onnxc's generic 2-D ConvInteger sums
one weight tap at a time over runs of output rows (codegen/emit_quant.c); these
cases cover what its bounds arithmetic special-cases: strides 1-3, pads on
each side (asymmetric, and larger than the kernel's reach), dilations,
groups and depthwise, 1x1, 3x3, 5x2 and 7x7 kernels, maps narrower than the
kernel's span, batch 2, uint8 and int8 data and weights, zero points absent,
per tensor and per output channel. The reference is the integer convolution
computed here with numpy (int64, exact). At -O1 and above, on a CPU with
AVX-512 VNNI, a 2-D ConvInteger with group 1 and uint8 data runs the int8
lanes kernel instead
(QIntConvInteger, passes/fuse_qmatmul.c; the last three cases reach its
64-channel blocks); `onnxc check` compares int32
exactly, at -O0, -O2 in guard mode, -O3 --threads 2 and -O2 --cpu generic (the
generic loops), and under
ASan+UBSan (--sanitize) at -O2.

Usage: int_conv_cases.py --onnxc BIN [--out DIR]
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from checks import expect, failures, run  # noqa: E402


def ref_conv(x, w, xz, wz, stride, pads, dil, group):
    N, C, H, W = x.shape
    M, cg, KH, KW = w.shape
    xs = x.astype(np.int64) - np.int64(xz)
    ws = w.astype(np.int64) - (wz.astype(np.int64).reshape(-1, 1, 1, 1) if np.ndim(wz) else np.int64(wz))
    xp = np.zeros((N, C, H + pads[0] + pads[2], W + pads[1] + pads[3]), np.int64)
    xp[:, :, pads[0]:pads[0] + H, pads[1]:pads[1] + W] = xs
    OH = (H + pads[0] + pads[2] - dil[0] * (KH - 1) - 1) // stride[0] + 1
    OW = (W + pads[1] + pads[3] - dil[1] * (KW - 1) - 1) // stride[1] + 1
    y = np.zeros((N, M, OH, OW), np.int64)
    mg = M // group
    for m in range(M):
        g = m // mg
        for ky in range(KH):
            for kx in range(KW):
                patch = xp[:, g * cg:(g + 1) * cg, ky * dil[0]:ky * dil[0] + stride[0] * (OH - 1) + 1:stride[0],
                           kx * dil[1]:kx * dil[1] + stride[1] * (OW - 1) + 1:stride[1]]
                y[:, m] += np.einsum("nchw,c->nhw", patch, ws[m, :, ky, kx])
    return ((y + 2**31) % 2**32 - 2**31).astype(np.int32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    out = a.out or tempfile.mkdtemp(prefix="int_conv_")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    cases = [  # name, N, C, H, W, M, (KH, KW), stride, pads (t, l, b, r), dil, group, xt, wt, zp
        ("k3_pad1", 1, 8, 9, 11, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "u8", "s8", "tensor"),
        ("k3_s2_asym", 2, 5, 13, 10, 7, (3, 3), (2, 2), (1, 0, 1, 2), (1, 1), 1, "u8", "u8", "channel"),
        ("k1", 1, 24, 7, 7, 12, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "u8", "s8", "none"),
        ("k1_s2", 1, 9, 9, 9, 5, (1, 1), (2, 2), (0, 0, 0, 0), (1, 1), 1, "s8", "s8", "tensor"),
        ("k5x2_dil_s3", 1, 4, 17, 20, 6, (5, 2), (3, 1), (2, 3, 0, 1), (2, 3), 1, "u8", "s8", "channel"),
        ("k7_s2_stem", 1, 3, 23, 37, 8, (7, 7), (2, 2), (3, 3, 3, 3), (1, 1), 1, "u8", "s8", "tensor"),
        ("group2", 1, 8, 7, 7, 6, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, "u8", "s8", "channel"),
        ("depthwise_s2", 2, 6, 12, 11, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 6, "u8", "s8", "tensor"),
        ("narrow_map", 1, 4, 3, 2, 5, (3, 3), (1, 1), (2, 2, 2, 2), (1, 1), 1, "u8", "u8", "channel"),
        ("big_pads", 1, 3, 5, 6, 4, (3, 3), (3, 1), (4, 5, 3, 4), (1, 2), 1, "s8", "s8", "tensor"),
        ("one_col", 1, 4, 8, 1, 3, (3, 1), (1, 1), (1, 0, 1, 0), (1, 1), 1, "u8", "s8", "tensor"),
        ("wide_s3", 1, 2, 5, 70, 4, (2, 4), (1, 3), (0, 2, 1, 1), (1, 1), 1, "u8", "s8", "channel"),
        # (the lanes kernel's edges: 64-channel blocks and a remainder, pixel runs over threads)
        ("k3_cout130_u8", 1, 40, 12, 14, 130, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1, "u8", "u8", "channel"),
        ("k1_cout72", 1, 64, 10, 10, 72, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, "u8", "s8", "tensor"),
        ("k3_s2_cout64_b2", 2, 17, 15, 16, 64, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, "u8", "u8", "tensor"),
    ]
    dts = {"u8": (np.uint8, TensorProto.UINT8, 0, 255), "s8": (np.int8, TensorProto.INT8, -128, 127)}
    for (name, N, C, H, W, M, (KH, KW), st, pads, dil, group, xt, wt, zp) in cases:
        xnp, xpt, xlo, xhi = dts[xt]
        wnp, wpt, wlo, whi = dts[wt]
        x = rng.integers(xlo, xhi + 1, size=(N, C, H, W)).astype(xnp)
        w = rng.integers(wlo, whi + 1, size=(M, C // group, KH, KW)).astype(wnp)
        xz, wz = 0, np.int64(0)
        if zp != "none":
            xz = int(rng.integers(xlo, xhi + 1))
            wz = (rng.integers(wlo, whi + 1, size=M) if zp == "channel" else np.array(rng.integers(wlo, whi + 1)))
            wz = wz.astype(wnp)
        # a tap equal to its zero point (a zero weight, which the kernel skips)
        w[0, 0, 0, 0] = wz.flat[0] if np.ndim(wz) else wz
        inits = [numpy_helper.from_array(w, "w")]
        ins = ["x", "w"]
        if zp != "none":
            inits += [numpy_helper.from_array(np.array(xz, xnp), "xz"), numpy_helper.from_array(wz, "wz")]
            ins += ["xz", "wz"]
        y = ref_conv(x, w, xz, wz, st, pads, dil, group)
        node = helper.make_node("ConvInteger", ins, ["y"], kernel_shape=[KH, KW], strides=list(st),
                                pads=[pads[0], pads[1], pads[2], pads[3]], dilations=list(dil), group=group)
        g = helper.make_graph([node], name, [helper.make_tensor_value_info("x", xpt, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT32, list(y.shape))], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        d = os.path.join(out, name)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        onnx.save(m, os.path.join(d, "model.onnx"))
        with open(os.path.join(d, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        with open(os.path.join(d, "test_data_set_0", "output_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(y, "y").SerializeToString())
        for cfg in (["-O0"], ["-O2", "--guard"], ["-O3", "--threads", "2"], ["-O2", "--sanitize"],
                    ["-O2", "--cpu", "generic"]):
            rc, text = run([a.onnxc, "check"] + cfg + [d])
            expect(rc == 0, f"{name} {' '.join(cfg)}: exact int32", text)
    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
