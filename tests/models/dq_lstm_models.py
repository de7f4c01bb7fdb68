#!/usr/bin/env python3
"""DynamicQuantizeLSTM (com.microsoft) end to end (docs/int8.md, "Dynamic
LSTM").

onnxruntime.quantization.quantize_dynamic writes every LSTM of a model as a
DynamicQuantizeLSTM: int8 W [D, I, 4H] and R [D, H, 4H] (transposed against
ONNX's) with a scale and zero point per direction or, per_channel=True, per
gate row. onnxc's canonicalize rewrites it into the LSTM of the dequantized
weights. For float LSTMs of every direction, with and without bias, initial
states, peepholes, sequence lengths and a clip, quantized both ways:

  - exactness of the rewrite: onnxc against ONNX Runtime running the same
    model with the node replaced by that LSTM (built here independently with
    numpy), rtol 1e-4, at -O0, -O2 and -O3 --threads 2 (the input projection
    hoisted by rnn-project at -O2 where W is large enough);
  - against ONNX Runtime's own kernel, which also rounds X and h to uint8 at
    run time: no farther than ORT's kernel is from ORT's run of the
    dequantized LSTM (that gap, below 0.15 for hidden values in [-1, 1], is
    the run-time rounding; the largest is printed), and a canary: the
    quantized model's outputs are NOT those of the float model at rtol 1e-4
    (the weights really are the int8 ones);
  - clear errors: a W that is a graph input, a missing scale.

Usage: dq_lstm_models.py --onnxc BIN [--out DIR]
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from checks import expect, failures, run  # noqa: E402


def float_lstm(path, rng, S, B, I, H, direction, bias, init, peep, seqlens, clip):
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    D = 2 if direction == "bidirectional" else 1
    inits = [numpy_helper.from_array((rng.standard_normal((D, 4 * H, I)) * 0.4).astype(np.float32), "W"),
             numpy_helper.from_array((rng.standard_normal((D, 4 * H, H)) * 0.4).astype(np.float32), "R")]
    ins = ["X", "W", "R", "", "", "", "", ""]
    graph_in = [helper.make_tensor_value_info("X", TensorProto.FLOAT, [S, B, I])]
    feeds = {"X": rng.standard_normal((S, B, I)).astype(np.float32)}
    if bias:
        inits.append(numpy_helper.from_array((rng.standard_normal((D, 8 * H)) * 0.2).astype(np.float32), "B"))
        ins[3] = "B"
    if seqlens:
        graph_in.append(helper.make_tensor_value_info("L", TensorProto.INT32, [B]))
        feeds["L"] = rng.integers(1, S + 1, size=B).astype(np.int32)
        ins[4] = "L"
    if init:
        for k, name in ((5, "h0"), (6, "c0")):
            graph_in.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [D, B, H]))
            feeds[name] = (rng.standard_normal((D, B, H)) * 0.5).astype(np.float32)
            ins[k] = name
    if peep:
        inits.append(numpy_helper.from_array((rng.standard_normal((D, 3 * H)) * 0.3).astype(np.float32), "P"))
        ins[7] = "P"
    while ins and ins[-1] == "":
        ins.pop()
    attrs = dict(hidden_size=H, direction=direction)
    if clip:
        attrs["clip"] = clip
    node = helper.make_node("LSTM", ins, ["Y", "Yh", "Yc"], **attrs)
    outs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [S, D, B, H]),
            helper.make_tensor_value_info("Yh", TensorProto.FLOAT, [D, B, H]),
            helper.make_tensor_value_info("Yc", TensorProto.FLOAT, [D, B, H])]
    g = helper.make_graph([node], "lstm", graph_in, outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    onnx.save(m, path)
    return feeds


def dequantized(qpath, out):
    """The quantized model with its DynamicQuantizeLSTM replaced by the LSTM
    of the dequantized weights ((q - zero point) * scale, transposed)."""
    import onnx
    from onnx import helper, numpy_helper
    m = onnx.load(qpath)
    init = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for k, node in enumerate(m.graph.node):
        if node.op_type != "DynamicQuantizeLSTM":
            continue
        ins = list(node.input)
        for slot, (s, z) in ((1, (8, 9)), (2, (10, 11))):
            q = init[ins[slot]].astype(np.float64)
            sc, zp = init[ins[s]].astype(np.float64), init[ins[z]].astype(np.float64)
            shape = (q.shape[0], 1, q.shape[2]) if sc.size == q.shape[0] * q.shape[2] else (q.shape[0], 1, 1)
            f = ((q - zp.reshape(shape)) * sc.reshape(shape)).astype(np.float32).transpose(0, 2, 1)
            name = f"deq_{slot}_{k}"
            m.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(f), name))
            ins[slot] = name
        lstm = helper.make_node("LSTM", ins[:8], list(node.output))
        lstm.attribute.extend(node.attribute)
        m.graph.node[k].CopyFrom(lstm)
    onnx.save(m, out)


def write_case(d, model_path, feeds, outs, names):
    import onnx
    from onnx import numpy_helper
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    m = onnx.load(model_path)
    onnx.save(m, os.path.join(d, "model.onnx"))
    order = [i.name for i in m.graph.input]
    for i, n in enumerate(order):
        with open(os.path.join(d, "test_data_set_0", f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[n], n).SerializeToString())
    for i, (o, n) in enumerate(zip(outs, names)):
        with open(os.path.join(d, "test_data_set_0", f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(o, n).SerializeToString())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic
    import logging
    logging.getLogger().setLevel(logging.ERROR)
    out = a.out or tempfile.mkdtemp(prefix="dq_lstm_")
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    forms = [  # S, B, I, H, direction, bias, init, peep, seqlens, clip
        (6, 2, 24, 32, "forward", True, False, False, False, 0.0),
        (5, 3, 16, 24, "reverse", False, True, False, False, 0.0),
        (7, 2, 40, 48, "bidirectional", True, True, True, False, 0.0),
        (6, 3, 20, 16, "bidirectional", True, False, False, True, 2.5),
        (9, 1, 256, 96, "bidirectional", True, False, False, False, 0.0),  # W of 96 KB: rnn-project
    ]
    worst = 0.0
    so = ort.SessionOptions()
    so.log_severity_level = 3
    for k, form in enumerate(forms):
        fpath = os.path.join(out, f"f{k}.onnx")
        feeds = float_lstm(fpath, rng, *form)
        ref_float = ort.InferenceSession(fpath, so, providers=["CPUExecutionProvider"]).run(None, feeds)
        for pc in (False, True):
            tag = f"{form[4]} S{form[0]} B{form[1]} I{form[2]} H{form[3]}{' per-channel' if pc else ''}"
            qpath = os.path.join(out, f"q{k}{int(pc)}.onnx")
            quantize_dynamic(fpath, qpath, per_channel=pc, weight_type=QuantType.QInt8)
            ops = [(n.domain, n.op_type) for n in onnx.load(qpath).graph.node]
            expect(("com.microsoft", "DynamicQuantizeLSTM") in ops, f"{tag}: quantize_dynamic wrote a DynamicQuantizeLSTM",
                   str(ops))
            dpath = os.path.join(out, f"d{k}{int(pc)}.onnx")
            dequantized(qpath, dpath)
            ref_deq = ort.InferenceSession(dpath, so, providers=["CPUExecutionProvider"]).run(None, feeds)
            ref_q = ort.InferenceSession(qpath, so, providers=["CPUExecutionProvider"]).run(None, feeds)
            names = ["Y", "Yh", "Yc"]
            case_d = os.path.join(out, f"case_deq_{k}{int(pc)}")
            write_case(case_d, qpath, feeds, ref_deq, names)
            for cfg in (["-O0"], ["-O2"], ["-O3", "--threads", "2"]):
                rc, text = run([a.onnxc, "check", "--rtol", "1e-4", "--atol", "1e-6"] + cfg + [case_d])
                expect(rc == 0, f"{tag} {' '.join(cfg)}: the LSTM of the dequantized weights", text)
            # ORT's kernel is as far from onnxc as from its own run of the
            # dequantized LSTM: the gap is ORT's run-time rounding of X and h
            gap = max(float(np.max(np.abs(x - y))) for x, y in zip(ref_q, ref_deq))
            worst = max(worst, gap)
            case_q = os.path.join(out, f"case_ort_{k}{int(pc)}")
            write_case(case_q, qpath, feeds, ref_q, names)
            rc, text = run([a.onnxc, "check", "-v", "--rtol", "0", "--atol", f"{gap + 1e-4:.6g}", case_q])
            expect(rc == 0 and gap < 0.15,
                   f"{tag}: as close to ONNX Runtime's kernel as its own float LSTM of the weights ({gap:.4f})", text)
            case_f = os.path.join(out, f"case_float_{k}{int(pc)}")
            write_case(case_f, qpath, feeds, ref_float, names)
            rc, text = run([a.onnxc, "check", "--rtol", "1e-4", "--atol", "1e-6", case_f])
            expect(rc == 1 and "elements differ" in text,
                   f"{tag}: canary: not the float model's outputs (the int8 weights are used)", text)
    print(f"largest gap between ONNX Runtime's kernel and the dequantized LSTM: {worst:.4f}")

    # errors: W as a graph input, a missing scale
    from onnx import helper, TensorProto
    q = onnx.load(os.path.join(out, "q00.onnx"))
    node = [n for n in q.graph.node if n.op_type == "DynamicQuantizeLSTM"][0]
    wname = node.input[1]
    w = [t for t in q.graph.initializer if t.name == wname][0]
    q.graph.initializer.remove(w)
    q.graph.input.append(helper.make_tensor_value_info(wname, TensorProto.INT8, list(w.dims)))
    bad = os.path.join(out, "bad_w_input.onnx")
    onnx.save(q, bad)
    rc, text = run([a.onnxc, bad, "-o", os.path.join(out, "bad.so")])
    expect(rc != 0 and "DynamicQuantizeLSTM" in text and "must be constants" in text and "W" in text,
           "W given at run time: a clear error naming the node and W", text)
    expect(not os.path.exists(os.path.join(out, "bad.so")), "no output file after the failed compile")
    q = onnx.load(os.path.join(out, "q00.onnx"))
    node = [n for n in q.graph.node if n.op_type == "DynamicQuantizeLSTM"][0]
    node.input[10] = ""
    bad = os.path.join(out, "bad_scale.onnx")
    onnx.save(q, bad)
    rc, text = run([a.onnxc, bad, "-o", os.path.join(out, "bad2.so")])
    expect(rc != 0 and "scale and zero point of R" in text, "a missing R_scale: a clear error", text)

    print(f"{len(failures)} failed" if failures else "all passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
