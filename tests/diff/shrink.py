#!/usr/bin/env python3
"""Shrink a model on which onnxc disagrees with ONNX Runtime to a minimal one.

    shrink.py CASE_DIR [--onnxc build/bin/onnxc] [--configs O0,O2,O3:t2] [--name NAME]
    shrink.py --seed N ...            (the model run_diff.py generates for seed N)

The failure's signature is the outcome of each configuration (ok, mismatch,
compile, crash, ...). Reductions are kept when the reduced model is still
valid (onnx.checker, ONNX Runtime) and has the same signature, so a
miscompile at -O2 that is right at -O0 stays exactly that:

  1. truncate: one intermediate value becomes the only graph output, and
     everything after it goes;
  2. bypass: a node goes, its consumers read one of its inputs of the same
     shape and type instead (a chain stays a chain, values stay in the arena);
  3. cut: a node goes, its outputs become graph inputs fed with the values
     ONNX Runtime computed for them in the original model;
  4. drop outputs: one graph output at a time;
  5. batch: the batch dimension of the inputs goes to 1 where the graph allows.

Repeated until nothing applies. The result is written as a regression case,
REGRESSIONS/NAME/ (model.onnx, test_data_set_0 with ONNX Runtime's outputs,
case.json: seed, failing and passing configs, the first failure message).
"""
import argparse
import copy
import json
import os
import shutil
import sys
import tempfile

import numpy as np
import onnx
from onnx import helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_model  # noqa: E402
import run_diff  # noqa: E402


def load_case(case_dir):
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    ds = os.path.join(case_dir, "test_data_set_0")
    feeds = {}
    for i, vi in enumerate(model.graph.input):
        t = onnx.TensorProto()
        with open(os.path.join(ds, f"input_{i}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        feeds[vi.name] = numpy_helper.to_array(t)
    return model, feeds


def all_values(model, feeds):
    """ORT's value of every tensor of the model, and its type (name -> (array))."""
    m = copy.deepcopy(model)
    known = {o.name for o in m.graph.output}
    inits = {i.name for i in m.graph.initializer}
    names = []
    for n in m.graph.node:
        for o in n.output:
            if o and o not in known and o not in inits:
                names.append(o)
    m.graph.output.extend(helper.ValueInfoProto(name=n) for n in names)
    outs = gen_model.run_ort(m, feeds)
    vals = dict(feeds)
    vals.update({o.name: a for o, a in zip(m.graph.output, outs)})
    return vals


def value_info(name, arr):
    return helper.make_tensor_value_info(name, helper.np_dtype_to_tensor_dtype(arr.dtype), list(arr.shape))


class Shrinker:
    def __init__(self, model, feeds, args, configs, signature):
        self.args, self.configs, self.signature = args, configs, signature
        self.vals = all_values(model, feeds)
        self.model, self.feeds = model, feeds
        self.work = tempfile.mkdtemp(prefix="onnxc-shrink-")
        self.tries = 0
        self.message = ""

    # ---- rebuilding --------------------------------------------------------
    def rebuild(self, nodes, outputs, extra_inputs=(), feeds=None):
        """A model of these nodes with these output names; prunes dead nodes,
        unused initializers and inputs. None when nothing is left."""
        g = self.model.graph
        feeds = dict(self.feeds if feeds is None else feeds)
        inputs = [vi.name for vi in g.input] + [n for n in extra_inputs if n not in feeds]
        for n in extra_inputs:
            feeds.setdefault(n, self.vals[n])
        outputs = list(dict.fromkeys(outputs))
        live, keep = set(outputs), []
        for n in reversed(nodes):
            if any(o in live for o in n.output):
                keep.append(n)
                live.update(i for i in n.input if i)
        keep.reverse()
        if not keep or not outputs:
            return None
        produced = {o for n in keep for o in n.output}
        if any(o not in produced and o not in inputs for o in outputs):
            return None
        ins = [n for n in inputs if n in live or n in outputs]
        inits = [t for t in g.initializer if t.name in live]
        graph = helper.make_graph(keep, g.name, [value_info(n, feeds[n]) for n in ins],
                                  [value_info(n, self.vals[n]) for n in outputs], inits)
        m = helper.make_model(graph, opset_imports=self.model.opset_import, producer_name="onnxc-diff-shrink")
        m.ir_version = self.model.ir_version
        return m, {n: feeds[n] for n in ins}

    # ---- the predicate ----------------------------------------------------
    def still_fails(self, cand):
        if cand is None:
            return False
        model, feeds = cand
        try:
            onnx.checker.check_model(model, full_check=True)
            outs = gen_model.run_ort(model, feeds)
        except Exception:
            return False
        self.tries += 1
        case = os.path.join(self.work, "case")
        run_diff.write_case(case, model, feeds, outs)
        # The failing configurations first: most candidates stop there.
        order = sorted(self.signature, key=lambda c: self.signature[c] == "ok")
        msg = ""
        for c in order:
            cat, m = run_diff.check(self.args.onnxc, case, c, self.args.timeout)
            if cat != self.signature[c]:
                return False
            if cat != "ok" and not msg:
                msg = m
        self.model, self.feeds, self.outs, self.message = model, feeds, outs, msg
        return True

    # ---- reductions --------------------------------------------------------
    def nodes(self):
        return list(self.model.graph.node)

    def outputs(self):
        return [o.name for o in self.model.graph.output]

    def try_truncate(self):
        """The earliest value that alone still fails, by bisection over the
        node order, then checked one by one backwards from there."""
        nodes = self.nodes()
        cands = [o for n in nodes for o in n.output if o in self.vals and o not in self.outputs()]
        if not cands:
            return False
        lo, hi, changed = 0, len(cands), False
        while lo < hi:
            mid = (lo + hi) // 2
            if self.still_fails(self.rebuild(self.nodes(), [cands[mid]])):
                hi, changed = mid, True
            else:
                lo = mid + 1
        return changed

    def try_bypass(self):
        changed = False
        i = len(self.model.graph.node) - 1
        while i >= 0:
            nodes = self.nodes()
            if i >= len(nodes):
                i = len(nodes) - 1
                continue
            n = nodes[i]
            i -= 1
            if len(n.output) != 1:
                continue
            out = n.output[0]
            if out not in self.vals:
                continue
            for src in n.input:
                if not src or src not in self.vals or src == out:
                    continue
                a, b = self.vals[src], self.vals[out]
                if a.shape != b.shape or a.dtype != b.dtype:
                    continue
                rest = []
                for m in nodes:
                    if m is n:
                        continue
                    m2 = copy.deepcopy(m)
                    for k, x in enumerate(m2.input):
                        if x == out:
                            m2.input[k] = src
                    rest.append(m2)
                outs = [src if o == out else o for o in self.outputs()]
                if src in [vi.name for vi in self.model.graph.input] and src in outs:
                    continue
                if self.still_fails(self.rebuild(rest, outs)):
                    changed = True
                    break
        return changed

    def try_cut(self):
        changed = False
        i = 0
        while True:
            nodes = self.nodes()
            if i >= len(nodes):
                return changed
            n = nodes[i]
            if any(o in self.outputs() for o in n.output) or any(o not in self.vals for o in n.output if o):
                i += 1
                continue
            rest = [m for m in nodes if m is not n]
            if self.still_fails(self.rebuild(rest, self.outputs(), [o for o in n.output if o])):
                changed = True
            else:
                i += 1

    def try_drop_outputs(self):
        changed = False
        for o in list(self.outputs()):
            outs = [x for x in self.outputs() if x != o]
            if outs and self.still_fails(self.rebuild(self.nodes(), outs)):
                changed = True
        return changed

    def try_batch(self):
        """All graph inputs with the same leading dimension B > 1 take row 0 only."""
        ins = list(self.feeds)
        bs = {self.feeds[n].shape[0] for n in ins if self.feeds[n].ndim >= 1}
        if len(bs) != 1 or bs.pop() <= 1:
            return False
        feeds = {n: a[:1] for n, a in self.feeds.items()}
        m = copy.deepcopy(self.model)
        for vi in m.graph.input:
            vi.type.tensor_type.shape.dim[0].dim_value = 1
        for vi in m.graph.output:
            vi.type.tensor_type.ClearField("shape")
        try:
            outs = gen_model.run_ort(m, feeds)
        except Exception:
            return False
        for vi, a, was in zip(m.graph.output, outs, gen_model.run_ort(self.model, self.feeds)):
            if was.ndim and was.shape[0] == len(self.feeds[ins[0]]) and (not a.ndim or a.shape[0] != 1):
                return False  # a constant still names the old batch (Reshape, Resize sizes): not a batch of 1
            vi.CopyFrom(value_info(vi.name, a))
        old = (self.model, self.feeds, self.vals)
        self.vals = all_values(m, feeds)
        if self.still_fails((m, feeds)):
            return True
        self.model, self.feeds, self.vals = old
        return False

    def run(self):
        for _ in range(20):
            changed = False
            for step in (self.try_truncate, self.try_drop_outputs, self.try_bypass, self.try_cut, self.try_batch):
                changed |= bool(step())
            if not changed:
                break
        return self.model, self.feeds


def signature_of(onnxc, case, configs, timeout):
    return {c: run_diff.check(onnxc, case, c, timeout) for c in configs}


def write_regression(root, name, model, feeds, info):
    d = os.path.join(root, name)
    shutil.rmtree(d, ignore_errors=True)
    outs = gen_model.run_ort(model, feeds)
    run_diff.write_case(d, model, feeds, outs)
    with open(os.path.join(d, "case.json"), "w") as f:
        json.dump(info, f, indent=1)
        f.write("\n")
    return d


def short_name(model, sig, seed):
    fail = [c for c, s in sig.items() if s != "ok"]
    ops = []
    for n in model.graph.node:
        if n.op_type not in ops:
            ops.append(n.op_type)
    stem = "-".join(op.lower() for op in ops[:4])
    return f"s{seed}_{stem}_{'-'.join(f.replace(':', '') for f in fail)}".replace("/", "")


def shrink(model, feeds, args, configs, seed=None, name=None, source=""):
    work = tempfile.mkdtemp(prefix="onnxc-shrink0-")
    outs = gen_model.run_ort(model, feeds)
    run_diff.write_case(work, model, feeds, outs)
    first = signature_of(args.onnxc, work, configs, args.timeout)
    shutil.rmtree(work, ignore_errors=True)
    sig = {c: r[0] for c, r in first.items()}
    if all(s == "ok" for s in sig.values()):
        print("the model passes every configuration: nothing to shrink", file=sys.stderr)
        return None
    n0 = len(model.graph.node)
    s = Shrinker(model, feeds, args, configs, sig)
    s.message = next(m for c, (cat, m) in first.items() if cat != "ok")
    model, feeds = s.run()
    shutil.rmtree(s.work, ignore_errors=True)
    name = name or short_name(model, sig, seed if seed is not None else "x")
    info = {"seed": seed, "source": source, "failing": {c: v for c, v in sig.items() if v != "ok"},
            "passing": [c for c, v in sig.items() if v == "ok"], "nodes_before": n0,
            "nodes_after": len(model.graph.node), "ops": [n.op_type for n in model.graph.node],
            "what": s.message.split("test_data_set_0: ")[-1], "shrink_tries": s.tries}
    if gen_model.AVOID and seed is not None:
        info["generator_avoid"] = sorted(gen_model.AVOID)
    return write_regression(args.regressions, name, model, feeds, info)


def shrink_seed(seed, res, args):
    model, feeds, _ = gen_model.generate(seed, args.profile)
    configs = [c for c in res]
    return shrink(model, feeds, args, configs, seed=seed, source=f"run_diff.py seed {seed}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("case", nargs="?")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--profile", choices=gen_model.PROFILES)
    ap.add_argument("--avoid", default="", help="as run_diff.py --avoid, for --seed")
    ap.add_argument("--onnxc", default=os.path.join(HERE, "..", "..", "build", "bin", "onnxc"))
    ap.add_argument("--configs", default=run_diff.DEFAULT_CONFIGS)
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--regressions", default=os.path.join(HERE, "regressions"))
    ap.add_argument("--name")
    args = ap.parse_args()
    args.onnxc = os.path.abspath(args.onnxc)
    configs = args.configs.split(",")
    gen_model.AVOID.update(x for x in args.avoid.split(",") if x)
    if args.seed is not None:
        model, feeds, _ = gen_model.generate(args.seed, args.profile)
        src = f"run_diff.py seed {args.seed}"
    elif args.case:
        model, feeds = load_case(args.case)
        src = os.path.relpath(args.case, os.path.join(HERE, "..", ".."))
    else:
        ap.error("give CASE_DIR or --seed")
    d = shrink(model, feeds, args, configs, seed=args.seed, name=args.name, source=src)
    if d:
        print(d)
    return 0 if d else 1


if __name__ == "__main__":
    sys.exit(main())
