"""Counts the backend node tests that use only a given set of operators and how
many of them are in the ratchet (tests/conformance/passing.txt).

Usage: count_by_ops.py [--ratchet FILE] OP [OP ...]
Example (the operator list of the foundation issue):
  count_by_ops.py Conv MaxPool AveragePool GlobalAveragePool GlobalMaxPool \
    BatchNormalization Gemm MatMul Relu LeakyRelu Sigmoid Tanh Clip Softmax \
    LogSoftmax Add Sub Mul Div Reshape Flatten Transpose Concat Squeeze \
    Unsqueeze Identity Dropout Constant Shape Gather Cast
Prints the counts and every such case that is not in the ratchet.
"""
import argparse
import os

import onnx


def ops_of(graph):
    for n in graph.node:
        yield n.op_type, n.domain
        for a in n.attribute:
            if a.g.node:
                yield from ops_of(a.g)
            for g in a.graphs:
                yield from ops_of(g)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ratchet", default=os.path.join(os.path.dirname(__file__), "passing.txt"))
    ap.add_argument("ops", nargs="+")
    a = ap.parse_args()
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    wanted = set(a.ops)
    passing = {l.strip() for l in open(a.ratchet) if l.strip() and not l.startswith("#")}
    cases, missing = [], []
    for case in sorted(os.listdir(data)):
        m = onnx.load(os.path.join(data, case, "model.onnx"), load_external_data=False)
        if all(d in ("", "ai.onnx") and o in wanted for o, d in ops_of(m.graph)):
            cases.append(case)
            if "node/" + case not in passing:
                missing.append(case)
    print(f"{len(cases)} node tests use only these operators; {len(cases) - len(missing)} are in the ratchet")
    for case in missing:
        print("  not passing:", case)


if __name__ == "__main__":
    main()
