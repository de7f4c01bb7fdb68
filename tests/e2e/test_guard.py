#!/usr/bin/env python3
"""Guard mode (docs/guard.md) end to end.

Usage: test_guard.py ONNXC

Writes a small CNN case (Conv -> Relu -> Conv -> Sigmoid -> MatMul, with
ONNX Runtime's outputs) and checks that:
  - `onnxc check --guard` passes at -O0, -O2 and -O3 --threads 2;
  - a library built with --guard computes the same bytes as one built
    without, and returns 0;
  - with a buffer shrunk by 4 bytes in the plan (the test hook
    ONNXC_GUARD_TEST_SHRINK), check exits 1 and names the node that wrote
    it, the tensor and the red zone after it;
  - the same for a graph output (the harness's red zones around the caller's
    buffers);
  - --guard with --target cuda is refused.
"""
import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import onnxruntime as ort


def write_case(d):
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((4, 8, 3, 3)).astype(np.float32), "w2")
    wm = numpy_helper.from_array(rng.standard_normal((6, 5)).astype(np.float32), "wm")
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv_a", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu_b"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv_c", strides=[2, 2], pads=[0, 1, 1, 0]),
        helper.make_node("Sigmoid", ["c2"], ["s2"], name="sig_d"),
        helper.make_node("MatMul", ["s2", "wm"], ["y"], name="mm_e"),
    ]
    graph = helper.make_graph(
        nodes, "guard_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 13, 13])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], initializer=[w1, w2, wm])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    os.makedirs(os.path.join(d, "test_data_set_0"))
    onnx.save(model, os.path.join(d, "model.onnx"))
    x = rng.standard_normal((2, 3, 13, 13)).astype(np.float32)
    (y,) = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    for name, arr in (("input_0", x), ("output_0", y)):
        with open(os.path.join(d, "test_data_set_0", name + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr).SerializeToString())
    return x, y


def run(cmd, env=None):
    if cmd[1] == "check":  # float32 sums in another order than ONNX Runtime's
        cmd = cmd + ["--atol", "1e-5"]
    e = dict(os.environ)
    e.pop("ONNXC_CHECK_GUARD", None)
    e.pop("ONNXC_GUARD_TEST_SHRINK", None)
    e.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=e)


def run_library(onnxc, case, tmp, x, shape, guard):
    tag = "g" if guard else "n"
    lib, rep = os.path.join(tmp, f"{tag}.so"), os.path.join(tmp, f"{tag}.json")
    r = run([onnxc, os.path.join(case, "model.onnx"), "-o", lib, "--name", "m", "--memory-report", rep]
            + (["--guard"] if guard else []))
    assert r.returncode == 0, r.stderr
    import json
    with open(rep) as f:
        arena = json.load(f)["arena_bytes"]
    raw = np.zeros(arena + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    out = np.zeros(shape, np.float32)
    fn = ctypes.CDLL(os.path.abspath(lib)).m_run_v
    ip = (ctypes.c_void_p * 1)(x.ctypes.data)
    op = (ctypes.c_void_p * 1)(out.ctypes.data)
    rc = fn(ctypes.c_void_p(raw.ctypes.data + off), ip, op)
    return rc, out, arena


def main():
    onnxc = os.path.abspath(sys.argv[1])
    fails = 0

    def expect(ok, what, detail=""):
        nonlocal fails
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            fails += 1
            print("     | " + detail.strip().replace("\n", "\n     | "))

    with tempfile.TemporaryDirectory() as tmp:
        case = os.path.join(tmp, "case")
        x, y = write_case(case)
        for flags in (["-O0"], ["-O2"], ["-O3", "--threads", "2"]):
            r = run([onnxc, "check", "--guard", case] + flags)
            expect(r.returncode == 0, f"check --guard {' '.join(flags)} passes", r.stderr)
        r = run([onnxc, "check", case], {"ONNXC_CHECK_GUARD": "1", "ONNXC_GUARD_TEST_SHRINK": "c1"})
        expect(r.returncode == 1, "ONNXC_CHECK_GUARD=1 turns the guard on", r.stderr)

        rc_n, out_n, arena_n = run_library(onnxc, case, tmp, x, y.shape, False)
        rc_g, out_g, arena_g = run_library(onnxc, case, tmp, x, y.shape, True)
        expect(rc_n == 0 and rc_g == 0, f"both libraries run (status {rc_n}, {rc_g})")
        expect(out_n.tobytes() == out_g.tobytes(), "guard output is bit-identical to normal output")
        expect(arena_g > arena_n, f"the guarded arena is larger ({arena_g} > {arena_n} bytes)")

        # c1 is written by conv_a at -O0; at -O2 Relu is fused into it and
        # the buffer holds r1, still written by conv_a. c2 is conv_c's.
        for flags, tensor, node in ((["-O0"], "c1", "conv_a"), (["-O2"], "c2", "conv_c"),
                                    (["-O3", "--threads", "2"], "c2", "conv_c")):
            r = run([onnxc, "check", "--guard", case] + flags, {"ONNXC_GUARD_TEST_SHRINK": tensor})
            want = f"guard: node '{node}' (Conv) wrote out of bounds: red zone after tensor '{tensor}'"
            expect(r.returncode == 1 and want in r.stderr,
                   f"{' '.join(flags)}: a shrunk '{tensor}' is reported against '{node}'", r.stderr)
        r = run([onnxc, "check", case], {"ONNXC_GUARD_TEST_SHRINK": "c2"})
        expect(r.returncode == 0, "without --guard the hook does nothing", r.stderr)

        r = run([onnxc, "check", "--guard", case], {"ONNXC_GUARD_TEST_SHRINK": "y"})
        want = "guard: output 'y' (written by node 'mm_e' (MatMul)) wrote out of bounds: red zone after the caller's buffer"
        expect(r.returncode == 1 and want in r.stderr, "a shrunk output buffer is reported", r.stderr)

        r = run([onnxc, "--guard", "--target", "cuda", os.path.join(case, "model.onnx"), "-o",
                 os.path.join(tmp, "c.so")])
        expect(r.returncode == 2 and "--guard is for the C target" in r.stderr, "--guard --target cuda is refused",
               r.stderr)
    print("all passed" if not fails else f"{fails} failures")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
