"""Writes models with an If on a run-time input whose one branch cannot run
with the static shapes a user compiles for, as Silero VAD's 8 / 16 kHz If.

Usage: make_if_models.py OUTDIR
  good_else.onnx   then (sr == 16000) runs for x=1x8; else needs x=1x6 (MatMul
                   of [1,8] by [6,4] fails). Outputs y [1,4] and s [1,3].
  good_then.onnx   the same with the branches swapped (sr != 16000 is good).
  neither.onnx     both branches fail for x=1x8.
  good_else_case/  backend-test case for `onnxc check` of good_else.onnx:
                   test_data_set_0 takes the good branch, outputs from ONNX
                   Runtime (x is [1,'T'] in the model: ORT compiles any T).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def branch(tag, rows, scale):
    """y = Relu(x @ W[rows,4]) and s = state * scale; x must be [1,rows]."""
    w = np.arange(rows * 4, dtype=np.float32).reshape(rows, 4) / 10 - 1
    wc = helper.make_node("Constant", [], [f"w_{tag}"], name=f"w_{tag}",
                          value=numpy_helper.from_array(w, f"w_{tag}"))
    mm = helper.make_node("MatMul", ["x", f"w_{tag}"], [f"mm_{tag}"], name=f"mm_{tag}")
    relu = helper.make_node("Relu", [f"mm_{tag}"], [f"y_{tag}"], name=f"relu_{tag}")
    kc = helper.make_node("Constant", [], [f"k_{tag}"], name=f"k_{tag}",
                          value=numpy_helper.from_array(np.array(scale, np.float32), f"k_{tag}"))
    # A nested If on the outer condition (both arms pass state through): in
    # the branch that fails, its lowering (a Where) is undone with the rest.
    arm = lambda k: helper.make_graph(
        [helper.make_node("Identity", ["state"], [f"st_{tag}{k}"], name=f"arm_{tag}{k}")], f"arm_{tag}{k}",
        [], [helper.make_tensor_value_info(f"st_{tag}{k}", TensorProto.FLOAT, None)])
    inner = helper.make_node("If", ["is16k"], [f"st_{tag}"], name=f"inner_{tag}",
                             then_branch=arm(0), else_branch=arm(1))
    mul = helper.make_node("Mul", [f"st_{tag}", f"k_{tag}"], [f"s_{tag}"], name=f"mul_{tag}")
    return helper.make_graph([inner, wc, mm, relu, kc, mul], f"{tag}_body", [],
                             [helper.make_tensor_value_info(f"y_{tag}", TensorProto.FLOAT, None),
                              helper.make_tensor_value_info(f"s_{tag}", TensorProto.FLOAT, None)])


def model(then_rows, else_rows):
    sr_c = helper.make_node("Constant", [], ["sr16k"], name="sr16k",
                            value=numpy_helper.from_array(np.array(16000, np.int64), "sr16k"))
    eq = helper.make_node("Equal", ["sr", "sr16k"], ["is16k"], name="is16k")
    iff = helper.make_node("If", ["is16k"], ["y_if", "s_if"], name="pick_rate",
                           then_branch=branch("a", then_rows, 2.0), else_branch=branch("b", else_rows, 3.0))
    out_y = helper.make_node("Identity", ["y_if"], ["y"], name="out_y")
    out_s = helper.make_node("Identity", ["s_if"], ["s"], name="out_s")
    g = helper.make_graph([sr_c, eq, iff, out_y, out_s], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "T"]),
                           helper.make_tensor_value_info("state", TensorProto.FLOAT, [1, 3]),
                           helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]),
                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [1, 3])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def write_case(m, folder, sr):
    import onnxruntime as ort
    rng = np.random.default_rng(7)
    feeds = {"x": rng.normal(size=(1, 8)).astype(np.float32),
             "state": rng.normal(size=(1, 3)).astype(np.float32),
             "sr": np.array(sr, np.int64)}
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    outs = sess.run(None, feeds)
    data = os.path.join(folder, "test_data_set_0")
    os.makedirs(data, exist_ok=True)
    onnx.save(m, os.path.join(folder, "model.onnx"))
    for i, name in enumerate(["x", "state", "sr"]):
        open(os.path.join(data, f"input_{i}.pb"), "wb").write(
            numpy_helper.from_array(feeds[name], name).SerializeToString())
    for i, (name, v) in enumerate(zip(["y", "s"], outs)):
        open(os.path.join(data, f"output_{i}.pb"), "wb").write(
            numpy_helper.from_array(v, name).SerializeToString())


def main(out):
    os.makedirs(out, exist_ok=True)
    good_else = model(8, 6)
    onnx.save(good_else, os.path.join(out, "good_else.onnx"))
    onnx.save(model(6, 8), os.path.join(out, "good_then.onnx"))
    onnx.save(model(6, 5), os.path.join(out, "neither.onnx"))
    write_case(good_else, os.path.join(out, "good_else_case"), 16000)


if __name__ == "__main__":
    main(sys.argv[1])
