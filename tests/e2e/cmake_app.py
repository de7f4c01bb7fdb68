"""Reference side of test_cmake_package.sh: ONNX Runtime on the same digits.

  cmake_app.py check MODEL DIGITS_BIN APP_LOG   compare the app's lines with ORT
  cmake_app.py bump MODEL OUT DIGITS_BIN        a copy whose last Gemm's bias favours
                                                the class ORT ranks second for image 0
`check` prints the predicted digits; it fails on a missing line, a different
digit, or a probability off by more than 1e-5 + 1e-3 * |expected|.
"""
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def ort_probs(model, images):
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    return [sess.run(None, {name: img.reshape(1, 1, 8, 8)})[0].reshape(-1) for img in images]


def read_images(path, count):
    return np.fromfile(path, dtype=np.float32).reshape(-1, 64)[:count]


def parse_log(path):
    rows = []
    for line in open(path):
        if line.startswith("image "):
            head, probs = line.split(" probs ")
            rows.append((int(head.split("digit ")[1]), [float(p) for p in probs.split()]))
    return rows


def check(model, digits_bin, log):
    rows = parse_log(log)
    if not rows:
        sys.exit(f"FAIL: no 'image N: digit D probs ...' lines in {log}")
    want = ort_probs(model, read_images(digits_bin, len(rows)))
    if len(want) != len(rows):
        sys.exit(f"FAIL: {len(rows)} lines for {len(want)} images")
    for i, ((digit, got), ref) in enumerate(zip(rows, want)):
        if digit != int(np.argmax(ref)):
            sys.exit(f"FAIL: image {i}: app says digit {digit}, onnxruntime {int(np.argmax(ref))}")
        err = np.abs(np.array(got) - ref) - (1e-5 + 1e-3 * np.abs(ref))
        if len(got) != len(ref) or (err > 0).any():
            sys.exit(f"FAIL: image {i}: probabilities {got} differ from onnxruntime's {ref.tolist()}")
    print("digits:", " ".join(str(d) for d, _ in rows), f"(= onnxruntime on {len(rows)} images)")


def bump(model, out, digits_bin):
    m = onnx.load(model)
    gemm = [n for n in m.graph.node if n.op_type == "Gemm"][-1]
    init = {t.name: t for t in m.graph.initializer}
    bias = numpy_helper.to_array(init[gemm.input[2]]).copy()
    second = int(np.argsort(ort_probs(model, read_images(digits_bin, 1))[0])[-2])
    bias[second] += 100.0
    init[gemm.input[2]].CopyFrom(numpy_helper.from_array(bias, gemm.input[2]))
    onnx.save(m, out)
    print(second)


if __name__ == "__main__":
    if sys.argv[1] == "check":
        check(*sys.argv[2:5])
    elif sys.argv[1] == "bump":
        bump(*sys.argv[2:5])
    else:
        sys.exit(__doc__)
