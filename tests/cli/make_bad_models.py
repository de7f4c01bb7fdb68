"""Writes malformed and unsupported ONNX models for the CLI error tests.

Usage: make_bad_models.py OUTDIR
Each model exercises one way a user's input can be wrong; test_cli.sh checks
that onnxc reports it on one line naming file, node and op, exits 1, and leaves
no output behind.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(inits))
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])


def vi(name, shape, dt=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dt, shape)


def main(out):
    os.makedirs(out, exist_ok=True)
    good = model([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x", [2, 3])], [vi("y", [2, 3])])
    data = good.SerializeToString()
    open(os.path.join(out, "good.onnx"), "wb").write(data)
    open(os.path.join(out, "truncated.onnx"), "wb").write(data[: len(data) // 2])
    open(os.path.join(out, "garbage.onnx"), "wb").write(bytes((i * 97 + 13) % 256 for i in range(300)))
    open(os.path.join(out, "empty.onnx"), "wb").write(b"")

    # As Paddle2ONNX writes dynamic dims: dim_value -1 and two dims named '?'
    # (loads; compiles with --shape). Also as a backend test case for check.
    dyn = model([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [vi("x", [-1, 3, "?", "?"])], [vi("y", [-1, 3, "?", "?"])], opset=11)
    onnx.save(dyn, os.path.join(out, "paddle_dyn.onnx"))
    case = os.path.join(out, "paddle_case", "test_data_set_0")
    os.makedirs(case, exist_ok=True)
    onnx.save(dyn, os.path.join(out, "paddle_case", "model.onnx"))
    x = np.linspace(-1, 1, 1 * 3 * 4 * 5, dtype=np.float32).reshape(1, 3, 4, 5)
    for name, arr in (("input_0", x), ("output_0", np.maximum(x, 0))):
        t = numpy_helper.from_array(arr, "x" if name == "input_0" else "y")
        open(os.path.join(case, name + ".pb"), "wb").write(t.SerializeToString())

    unknown = model(
        [
            helper.make_node("FrobnicateA", ["x"], ["a"], name="frob_a"),
            helper.make_node("Relu", ["a"], ["b"], name="relu"),
            helper.make_node("FrobnicateB", ["b"], ["y"], name="frob_b"),
        ],
        [vi("x", [2])], [vi("y", [2])])
    onnx.save(unknown, os.path.join(out, "unknown_ops.onnx"))

    # unsupported operators inside an If branch are listed with the top
    # level's, in one run
    frob_then = helper.make_graph([helper.make_node("FrobBranch", ["x"], ["t"], name="frob_then")],
                                  "then", [], [vi("t", [2])])
    keep_else = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="keep_else")],
                                  "else", [], [vi("e", [2])])
    unknown_branch = model(
        [
            helper.make_node("ReduceSum", ["x"], ["s"], keepdims=0, name="sum"),
            helper.make_node("Greater", ["s", "s"], ["c"], name="gt"),
            helper.make_node("If", ["c"], ["b"], name="branch", then_branch=frob_then, else_branch=keep_else),
            helper.make_node("FrobTop", ["b"], ["y"], name="frob_top"),
        ],
        [vi("x", [2])], [vi("y", [2])])
    onnx.save(unknown_branch, os.path.join(out, "unknown_ops_branch.onnx"))

    missing = model([helper.make_node("Add", ["x", "nowhere"], ["y"], name="add_missing")],
                    [vi("x", [2])], [vi("y", [2])])
    onnx.save(missing, os.path.join(out, "missing_input.onnx"))

    # An empty name where a required input goes, inside an If branch: the
    # lowering of control flow checks the branch's nodes as the top level does.
    cast_empty = helper.make_graph(
        [helper.make_node("Cast", [""], ["t"], to=TensorProto.FLOAT, name="cast_empty")],
        "then", [], [vi("t", [1])])
    keep_x = helper.make_graph([helper.make_node("Identity", ["x"], ["e"], name="keep")],
                               "else", [], [vi("e", [1])])
    # The condition is a constant, so the branch is lowered at compile time
    # (a branch chosen at run time that cannot be built only warns).
    branch = model([helper.make_node("Constant", [], ["c"], name="cond",
                                     value=helper.make_tensor("t", TensorProto.BOOL, [], [1])),
                    helper.make_node("If", ["c"], ["y"], name="branch",
                                     then_branch=cast_empty, else_branch=keep_x)],
                   [vi("x", [1])], [vi("y", [1])])
    onnx.save(branch, os.path.join(out, "branch_required_input_empty.onnx"))

    cycle = model(
        [
            helper.make_node("Add", ["x", "b"], ["a"], name="cyc_a"),
            helper.make_node("Relu", ["a"], ["b"], name="cyc_b"),
            helper.make_node("Relu", ["b"], ["y"], name="out"),
        ],
        [vi("x", [2])], [vi("y", [2])])
    onnx.save(cycle, os.path.join(out, "cycle.onnx"), )

    big = model([helper.make_node("Relu", ["x"], ["y"], name="relu_big")],
                [vi("x", [1 << 40, 1 << 40])], [vi("y", [1 << 40, 1 << 40])])
    onnx.save(big, os.path.join(out, "overflow.onnx"))

    w = numpy_helper.from_array(np.ones(4, np.float32), "w")
    w.data_location = TensorProto.EXTERNAL
    w.ClearField("raw_data")
    for k, v in (("location", "../outside.bin"), ("offset", "0"), ("length", "16")):
        e = w.external_data.add()
        e.key, e.value = k, v
    ext = model([helper.make_node("Add", ["x", "w"], ["y"], name="add_w")], [vi("x", [4])], [vi("y", [4])], [w])
    # onnx.save would try to resolve the external file; serialize directly.
    open(os.path.join(out, "external_escape.onnx"), "wb").write(ext.SerializeToString())

    bad_shape = model([helper.make_node("MatMul", ["x", "m"], ["y"], name="mm")],
                      [vi("x", [2, 3]), vi("m", [4, 5])], [vi("y", [2, 5])])
    onnx.save(bad_shape, os.path.join(out, "bad_shape.onnx"))

    # A model-local function that calls itself: inlining must stop with an error.
    rec = helper.make_function("loop.dom", "Rec", ["x"], ["y"],
                               [helper.make_node("Rec", ["x"], ["y"], domain="loop.dom", name="again")],
                               [helper.make_opsetid("", 13), helper.make_opsetid("loop.dom", 1)])
    recursive = model([helper.make_node("Rec", ["x"], ["y"], domain="loop.dom", name="call_rec")],
                      [vi("x", [2])], [vi("y", [2])])
    recursive.functions.append(rec)
    recursive.opset_import.append(helper.make_opsetid("loop.dom", 1))
    open(os.path.join(out, "recursive_function.onnx"), "wb").write(recursive.SerializeToString())

    # Gradient through an op without a derivative rule: one error naming it.
    grad = model([helper.make_node("Floor", ["x"], ["f"], name="floor"),
                  helper.make_node("Gradient", ["x"], ["dx"], domain="ai.onnx.preview.training",
                                   name="grad", xs=["x"], y="f")],
                 [vi("x", [2])], [vi("dx", [2])])
    grad.opset_import.append(helper.make_opsetid("ai.onnx.preview.training", 1))
    onnx.save(grad, os.path.join(out, "gradient_floor.onnx"))

    # -D ranges: an axes-less Squeeze over a ranged dim that may be 1 builds
    # with a warning; a stepped Slice whose bounds some values would clamp is
    # refused with the bounds it needs.
    sq = model([helper.make_node("Squeeze", ["x"], ["y"], name="sq_all")], [vi("x", ["T", 1])], [vi("y", ["T"])])
    onnx.save(sq, os.path.join(out, "squeeze_ranged.onnx"))
    ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)  # noqa: E731
    rev = model([helper.make_node("Slice", ["x", "s", "e", "a", "p"], ["y"], name="rev3")],
                [vi("x", ["T", 4])], [vi("y", [None, 4])],
                [ints("s", [3]), ints("e", [-(2**63)]), ints("a", [0]), ints("p", [-1])])
    onnx.save(rev, os.path.join(out, "slice_step_clamped.onnx"))


if __name__ == "__main__":
    main(sys.argv[1])
