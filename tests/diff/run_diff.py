#!/usr/bin/env python3
"""Differential testing of whole models: random graphs, onnxc against ONNX Runtime.

    run_diff.py --onnxc build/bin/onnxc --seeds 0:200 [-j 2] [--shrink]

For every seed in A:B, gen_model.py makes a valid random model and its inputs,
ONNX Runtime computes the reference outputs, and the model is written as an
ONNX backend case (model.onnx, test_data_set_0/input_*.pb, output_*.pb) that
`onnxc check` compiles and runs under each configuration (default: -O0, -O2,
and -O3 --threads 2; rtol 1e-3, atol 1e-5; a configuration with :bf16 adds
--precision bf16 and is judged at `onnxc check`'s tolerance for it: rtol 1/32
and atol 1/32 of the output's largest magnitude, docs/precision.md). With
--cuda-every K, every K-th
seed is also built for --target cuda and run on the CPU emulation of
tests/cuda/emu. A model fails when any configuration does not match.

With --float16, each model is converted to float16 (gen_model.to_float16) and
ONNX Runtime's run of the float16 model is the reference, judged at float16's
scaled tolerance (rtol 2^-8 plus 2^-8 of the largest expected magnitude over
the case's outputs; docs/precision.md, "Float16 models").

With --shrink, each failing model is reduced (shrink.py) to a minimal graph
that fails the same way and kept as a regression case under --regressions
(default tests/diff/regressions). --keep DIR keeps the failing cases as
generated.

    run_diff.py --onnxc build/bin/onnxc --cases tests/diff/regressions

checks every case folder under DIR (the kept regressions) under the same
configurations instead.

Prints one line per failing model, per-configuration counts, the rate, and a
last line `N passed, N failed` (models); exits 1 on any failure.
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_dynamic  # noqa: E402
import gen_model  # noqa: E402

RTOL, ATOL = "1e-3", "1e-5"
# Verdicts that are not failures: a match, and the two refereed disagreements.
PASSING = ("ok", "ort-differs", "ill-conditioned")
DEFAULT_CONFIGS = "O0,O2,O3:t2"


def lowp(spec):
    """The reduced precision a configuration asks for ('O2:bf16' -> 'bf16'), or None."""
    return next((p for p in spec.split(":")[1:] if p in ("bf16", "fp16")), None)


def parse_config(spec):
    """'O3:t2' -> ['-O3', '--threads', '2']; 'O2:bf16' -> ['-O2', '--precision', 'bf16'];
    'O2:b16' -> ['-O2', '--layout', 'nchw16c']; 'O2:generic' -> ['-O2', '--cpu', 'generic']
    (':haswell': '--cpu haswell', the AVX2 kernels);
    ':gmaj' adds ['--conv-order', 'group'], ':l2k32' ['--l2-kb', '32'];
    'cuda' -> the emulated CUDA target."""
    if spec == "cuda":
        return None
    parts = spec.split(":")
    args = ["-" + parts[0]]
    for p in parts[1:]:
        if p.startswith("t"):
            args += ["--threads", p[1:]]
        elif p in ("bf16", "fp16"):
            args += ["--precision", p]
        elif p == "b16":  # every region with a conv channel-blocked (docs/layout.md)
            args += ["--layout", "nchw16c"]
        elif p == "nchw":
            args += ["--layout", "nchw"]
        elif p == "gmaj":  # every blocked conv's items group-major (docs/layout.md)
            args += ["--conv-order", "group"]
        elif p.startswith("l2k"):  # a small L2 for the blocked convs' loop order (group-major items)
            args += ["--l2-kb", p[3:]]
        elif p == "generic":  # the portable C of every kernel
            args += ["--cpu", "generic"]
        elif p == "haswell":  # the AVX2 kernels, also on an AVX-512 machine
            args += ["--cpu", "haswell"]
        else:
            raise SystemExit(f"bad config '{spec}'")
    return args


def write_data_set(model, ds, feeds, outs):
    """test_data_set folder ds: input_*.pb and output_*.pb (emptied first)."""
    os.makedirs(ds, exist_ok=True)
    for f in os.listdir(ds):
        os.unlink(os.path.join(ds, f))
    for i, vi in enumerate(model.graph.input):
        with open(os.path.join(ds, f"input_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(feeds[vi.name], vi.name).SerializeToString())
    for i, (vi, arr) in enumerate(zip(model.graph.output, outs)):
        with open(os.path.join(ds, f"output_{i}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(arr, vi.name).SerializeToString())


def write_case(case_dir, model, feeds, outs):
    """The ONNX backend layout `onnxc check` reads."""
    os.makedirs(case_dir, exist_ok=True)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    write_data_set(model, os.path.join(case_dir, "test_data_set_0"), feeds, outs)


def write_dynamic_case(case_dir, model, sets):
    """A case of gen_dynamic: one data set per length, and the -D range its
    check takes, in case_dir/onnxc_args (read by check())."""
    os.makedirs(case_dir, exist_ok=True)
    onnx.save(model, os.path.join(case_dir, "model.onnx"))
    for k, (feeds, outs) in enumerate(sets):
        write_data_set(model, os.path.join(case_dir, f"test_data_set_{k}"), feeds, outs)
    with open(os.path.join(case_dir, "onnxc_args"), "w") as f:
        f.write(f"-D n=1..{gen_dynamic.N_MAX}\n")


def case_args(case_dir):
    """Extra `onnxc check` arguments a case asks for (onnxc_args: -D ranges,
    a float16 case's tolerance; its marker --float16-case is not passed on)."""
    p = os.path.join(case_dir, "onnxc_args")
    return [a for a in open(p).read().split() if a != "--float16-case"] if os.path.exists(p) else []


def classify(rc, text):
    if rc == 0:
        return "ok"
    if rc == "timeout":
        return "timeout"
    if rc == 2:
        return "compile"
    if "elements differ" in text or "the model produced" in text:
        return "mismatch"
    if "generated code failed" in text:
        return "crash"
    return "error"


def check(onnxc, case_dir, spec, timeout=300):
    """(category, message) of one configuration on one case."""
    if spec == "cuda":
        return check_cuda(onnxc, case_dir, timeout)
    extra = case_args(case_dir)
    # lowp: check's scaled default; a float16 case names its own (onnxc_args)
    tol = [] if lowp(spec) or "--rtol" in extra else ["--rtol", RTOL, "--atol", ATOL]
    cmd = [onnxc, "check"] + parse_config(spec) + extra + tol + [case_dir]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "timeout", f"over {timeout} s"
    text = (p.stdout + p.stderr).strip()
    return classify(p.returncode, text), summary(text)


def summary(text):
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "elements differ" in ln or "error" in ln.lower() or "the model produced" in ln:
            return ln.strip()[:400]
    return lines[-1][:400] if lines else ""


_EMU = {}


def check_cuda(onnxc, case_dir, timeout):
    sys.path.insert(0, os.path.join(HERE, "..", "cuda"))
    import emu_check  # noqa: E402
    if "dir" not in _EMU:
        _EMU["dir"] = emu_check.build_emu_lib(tempfile.mkdtemp(prefix="onnxc-diff-emu-"))
    p = subprocess.run([onnxc, "check", "--target", "cuda", "--build-only", "--keep-temps", case_dir],
                       capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    m = re.search(r"onnxc check: kept (\S+)", p.stderr)
    if p.returncode or not m:
        return "compile", summary(p.stderr)
    # judged at the tolerance of the other configurations: the case's own when
    # it names one (a float16 case: float16's scaled tolerance), else RTOL/ATOL
    extra = case_args(case_dir)
    tol = (float(RTOL), float(ATOL))
    if "--rtol" in extra and "--atol" in extra:
        tol = (float(extra[extra.index("--rtol") + 1]), float(extra[extra.index("--atol") + 1]))
    try:
        _, status, msg = emu_check.run_built("diff", m.group(1), case_dir, _EMU["dir"], tol)
    finally:
        shutil.rmtree(m.group(1), ignore_errors=True)
    return ("ok" if status == "ok" else status), msg.strip()[:400]


def referee(case, model, feeds, res, args):
    """A mismatch with ONNX Runtime is judged again against onnx.reference
    (the ONNX spec's own evaluator): configurations that then match become
    "ort-differs" (ONNX Runtime disagrees with the spec and onnxc agrees with
    it, e.g. a rounding tie ONNX Runtime takes through its float32 scales).
    They are reported apart and not counted as failures; onnxc disagreeing
    with both stays a mismatch."""
    bad = [c for c, (cat, _) in res.items() if cat == "mismatch" and c != "cuda"]
    if not bad:
        return
    try:
        from onnx.reference import ReferenceEvaluator
        ref = ReferenceEvaluator(model, new_ops=reference_ops()).run(None, feeds)
    except Exception:  # the reference cannot run the model: the mismatch stands
        return
    ref_case = case + "_reference"
    write_case(ref_case, model, feeds, [np.asarray(r) for r in ref])
    if os.path.exists(os.path.join(case, "onnxc_args")):
        shutil.copy(os.path.join(case, "onnxc_args"), ref_case)
    for c in bad:
        cat, msg = check(args.onnxc, ref_case, c, args.timeout)
        if cat == "ok":
            res[c] = ("ort-differs", res[c][1])


def promote_f64(model, F=onnx.TensorProto.FLOAT):
    """The model with every float32 (F: float16) tensor (inputs, outputs,
    initializers, Constant values, Cast targets) made float64."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    D = onnx.TensorProto.DOUBLE

    def tensor64(t):
        if t.data_type == F:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float64), t.name))

    g = m.graph
    for t in g.initializer:
        tensor64(t)
    for v in list(g.input) + list(g.output) + list(g.value_info):
        if v.type.tensor_type.elem_type == F:
            v.type.tensor_type.elem_type = D
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                tensor64(a.t)
            if n.op_type in ("Cast", "CastLike", "RandomNormal", "RandomUniform", "EyeLike") \
                    and a.name in ("to", "dtype") and a.i == F:
                a.i = D
    return m


def reference_ops():
    """Operators onnx.reference lacks at the versions the generator writes:
    its DequantizeLinear starts at opset 19, whose integer semantics are
    opset 10-18's (19 added float8 inputs and 21 blocked scales, unused
    here)."""
    from onnx.reference.ops.op_dequantize_linear import DequantizeLinear_19

    class DequantizeLinear(DequantizeLinear_19):
        op_domain = ""

        def _run(self, x, x_scale, x_zero_point=None, axis=1, **_):
            return DequantizeLinear_19._run(self, x, x_scale, x_zero_point, axis=1 if axis is None else axis)

    return [DequantizeLinear] + recurrent_reference_ops()


def recurrent_reference_ops():
    """onnx.reference's RNN, GRU and LSTM ignore `direction` (a reverse one
    runs forward) and refuse two directions: these run the reference's
    one-direction step per direction, the reverse one over X flipped in time,
    and stack the results as the op does. sequence_lens shorter than the
    sequence and layout 1 are refused (the generators write neither)."""
    from onnx.reference.ops.op_gru import GRU as RefGRU
    from onnx.reference.ops.op_lstm import LSTM as RefLSTM
    from onnx.reference.ops.op_rnn import RNN_14 as RefRNN

    def wrap(base, name, has_c):
        def _run(self, X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, **attrs):
            if attrs.get("layout") or (sequence_lens is not None and np.any(sequence_lens != X.shape[0])):
                raise NotImplementedError(f"{name}: layout 1 or short sequence_lens")
            direction = attrs.get("direction") or getattr(self, "direction", "forward")
            direction = direction.decode() if isinstance(direction, bytes) else direction
            ys, hs = [], []
            for d in range(W.shape[0]):
                rev = direction == "reverse" or d == 1
                one = dict(B=None if B is None else B[d:d + 1],
                           initial_h=None if initial_h is None else initial_h[d:d + 1])
                if has_c:
                    one.update(initial_c=None if initial_c is None else initial_c[d:d + 1],
                               P=None if P is None else P[d:d + 1])
                keep = self.n_outputs
                self.n_outputs = 2
                try:
                    y, yh = base._run(self, X[::-1] if rev else X, W[d:d + 1], R[d:d + 1],
                                      hidden_size=attrs.get("hidden_size"), layout=0, **one)
                finally:
                    self.n_outputs = keep
                ys.append(y[::-1] if rev else y)
                hs.append(np.asarray(yh).reshape(1, X.shape[1], -1))
            outs = (np.concatenate(ys, axis=1).astype(X.dtype), np.concatenate(hs, axis=0).astype(X.dtype))
            return outs[:self.n_outputs] + (None,) * max(0, self.n_outputs - 2)

        if not has_c:
            def run_no_c(self, X, W, R, B=None, sequence_lens=None, initial_h=None, **attrs):
                return _run(self, X, W, R, B, sequence_lens, initial_h, **attrs)
            return type(name, (base,), {"op_domain": "", "_run": run_no_c})
        return type(name, (base,), {"op_domain": "", "_run": _run})

    return [wrap(RefGRU, "GRU", False), wrap(RefLSTM, "LSTM", True), wrap(RefRNN, "RNN", False)]


def float64_referee(case, model, feeds, res, args):
    """A mismatch left after the first referee is judged against the exact
    answer: the model promoted to float64 and evaluated by onnx.reference.
    Rows normalized over a spread near float32's resolution (a LayerNorm of
    exps of a softmax) amplify a one-ulp difference upstream past the
    tolerance: two correct float32 results then differ by more than the
    tolerance, and ONNX Runtime is itself far from the exact value. Such an
    output's own conditioning is measured by ONNX Runtime's worst error
    against the float64 result over the output, E. onnxc's outputs (saved by
    `onnxc check --save-outputs`) pass when every element is within
    atol + rtol * |exact| + 2 E of the float64 result: as close to the exact
    answer as ONNX Runtime, within a factor of two. For a well-conditioned
    output E is a few ulps and this is the usual tolerance against the exact
    value. Passing, the configuration is "ill-conditioned": reported apart,
    not a failure. Any other mismatch stands, as does one where the model
    cannot be evaluated in float64."""
    bad = [c for c, (cat, _) in res.items() if cat == "mismatch" and c != "cuda"]
    if not bad:
        return
    try:
        from onnx.reference import ReferenceEvaluator
        f16 = float16_case(case)
        exact = ReferenceEvaluator(promote_f64(model, onnx.TensorProto.FLOAT16 if f16 else onnx.TensorProto.FLOAT),
                                   new_ops=reference_ops()).run(
            None, {k: (v.astype(np.float64) if v.dtype in (np.float32, np.float16) else v) for k, v in feeds.items()})
    except Exception:  # no float64 evaluation: the mismatch stands
        return
    ds = os.path.join(case, "test_data_set_0")
    ort = [numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"output_{i}.pb"))) for i in range(len(exact))]
    exact = [np.asarray(x) for x in exact]
    if any(x.shape != o.shape for x, o in zip(exact, ort)):
        return
    for c in bad:
        saved = case + "_outputs_" + c.replace(":", "_")
        cmd = [args.onnxc, "check", "--save-outputs", saved] + parse_config(c) + case_args(case) + [case]
        subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, stdin=subprocess.DEVNULL)
        ok = True
        for i, (x, o) in enumerate(zip(exact, ort)):
            path = os.path.join(saved, "test_data_set_0", f"output_{i}.pb")
            if not os.path.exists(path):
                ok = False
                break
            got = numpy_helper.to_array(onnx.load_tensor(path))
            if o.dtype.kind != "f":
                ok = ok and np.array_equal(got, o)
                continue
            x = x.astype(np.float64)
            fin = np.isfinite(x)
            rtol, atol = float(RTOL), float(ATOL)
            if lowp(c) or f16:  # the tolerance `onnxc check` takes for the precision
                rtol = 1 / 32 if lowp(c) == "bf16" else 1 / 256
                atol = max(float(ATOL), rtol * float(np.max(np.abs(x[fin]), initial=0.0)))
            same = np.array_equal(np.isnan(got), np.isnan(x)) and np.array_equal(got[~fin & ~np.isnan(x)], x[~fin & ~np.isnan(x)])
            e = float(np.max(np.abs(o[fin].astype(np.float64) - x[fin]), initial=0.0))
            ok = ok and same and bool(np.all(np.abs(got[fin].astype(np.float64) - x[fin])
                                                <= atol + rtol * np.abs(x[fin]) + 2 * e))
        if ok:
            res[c] = ("ill-conditioned", res[c][1])


def run_dynamic_seed(seed, args, configs):
    """--dynamic: a gen_dynamic model, checked once per configuration with -D n=1..N_MAX
    over its data sets at several n (no referees: they judge one data set)."""
    model, sets, _ = gen_dynamic.generate(seed)
    work = tempfile.mkdtemp(prefix=f"onnxc-diff-dyn-{seed}-")
    case = os.path.join(work, "case")
    write_dynamic_case(case, model, sets)
    res = {spec: check(args.onnxc, case, spec, args.timeout) for spec in configs if spec != "cuda"}
    if any(cat == "mismatch" for cat, _ in res.values()):
        dynamic_referees(case, model, sets, res, args)
    if any(c not in PASSING for c, _ in res.values()) and args.keep:
        dst = os.path.join(args.keep, f"dyn{seed}")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(case, dst)
    shutil.rmtree(work, ignore_errors=True)
    return seed, len(model.graph.node), res


def dynamic_referees(case, model, sets, res, args):
    """A mismatch of a dynamic case is judged data set by data set, each as a
    case of its own (still compiled with the -D range), by the referees of
    the static cases; a configuration passes when every data set matches or
    is refereed so, and takes the worst verdict otherwise."""
    order = ["ok", "ort-differs", "ill-conditioned", "mismatch"]
    for c in [c for c, (cat, _) in res.items() if cat == "mismatch"]:
        worst, msg = "ok", res[c][1]
        for k, (feeds, outs) in enumerate(sets):
            one = f"{case}_set{k}"
            write_case(one, model, feeds, outs)
            shutil.copy(os.path.join(case, "onnxc_args"), one)
            r = {c: check(args.onnxc, one, c, args.timeout)}
            referee(one, model, feeds, r, args)
            float64_referee(one, model, feeds, r, args)
            cat = r[c][0]
            if cat not in order:
                worst, msg = cat, r[c][1]
                break
            if order.index(cat) > order.index(worst):
                worst, msg = cat, r[c][1]
        res[c] = (worst, msg)


def float16_case(case_dir):
    p = os.path.join(case_dir, "onnxc_args")
    return os.path.exists(p) and "--float16-case" in open(p).read().split()


def write_float16_args(case_dir, outs):
    """A float16 case is judged at float16's scaled tolerance: rtol 2^-8 plus
    2^-8 of the largest expected magnitude (over its outputs), as `onnxc check`
    judges --precision fp16. The first word marks the case as float16 (the
    referees read it); check ignores it (see check())."""
    scale = max((float(np.max(np.abs(o.astype(np.float64)), initial=0.0)) for o in outs
                 if o.dtype.kind == "f"), default=0.0)
    with open(os.path.join(case_dir, "onnxc_args"), "w") as f:
        f.write(f"--float16-case --rtol {1 / 256!r} --atol {max(float(ATOL), scale / 256)!r}\n")


def run_seed(seed, args, configs):
    """Generates, checks under every configuration; returns (seed, nodes, {config: (cat, msg)})."""
    if args.dynamic:
        return run_dynamic_seed(seed, args, configs)
    model, feeds, outs = gen_model.generate(seed, args.profile, float16=args.float16)
    work = tempfile.mkdtemp(prefix=f"onnxc-diff-{seed}-")
    case = os.path.join(work, "case")
    write_case(case, model, feeds, outs)
    if args.float16:
        write_float16_args(case, outs)
    res = {}
    for spec in configs:
        if spec == "cuda" and seed % args.cuda_every:
            continue
        res[spec] = check(args.onnxc, case, spec, args.timeout)
    referee(case, model, feeds, res, args)
    float64_referee(case, model, feeds, res, args)
    failed = any(c not in PASSING for c, _ in res.values())
    if failed and args.keep:
        dst = os.path.join(args.keep, f"seed{seed}")
        shutil.rmtree(dst, ignore_errors=True)
        shutil.copytree(case, dst)
    shutil.rmtree(work, ignore_errors=True)
    return seed, len(model.graph.node), res


def run_case_dir(case, args, configs):
    """Checks a stored case under every configuration, with the same referees
    as run_seed (they work in a temporary copy: the case folder stays as it is)."""
    model = onnx.load(os.path.join(case, "model.onnx"), load_external_data=False)
    res = {c: check(args.onnxc, case, c, args.timeout) for c in configs}
    if any(cat == "mismatch" for cat, _ in res.values()):
        init = {t.name for t in model.graph.initializer}
        ds = os.path.join(case, "test_data_set_0")
        feeds = {v.name: numpy_helper.to_array(onnx.load_tensor(os.path.join(ds, f"input_{i}.pb")))
                 for i, v in enumerate(x for x in model.graph.input if x.name not in init)}
        work = tempfile.mkdtemp(prefix="onnxc-diff-case-")
        copy = os.path.join(work, "case")
        shutil.copytree(case, copy)
        referee(copy, model, feeds, res, args)
        float64_referee(copy, model, feeds, res, args)
        shutil.rmtree(work, ignore_errors=True)
    return os.path.basename(case), len(model.graph.node), res


def parse_seeds(s):
    a, _, b = s.partition(":")
    return range(int(a), int(b)) if b else range(int(a), int(a) + 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", default=os.path.join(HERE, "..", "..", "build", "bin", "onnxc"))
    ap.add_argument("--seeds", default="0:50", help="A:B, B excluded")
    ap.add_argument("-j", "--jobs", type=int, default=2)
    ap.add_argument("--configs", default=DEFAULT_CONFIGS,
                    help="comma-separated: On[:tN] (-On, --threads N), cuda (emulated); default " + DEFAULT_CONFIGS)
    ap.add_argument("--cuda-every", type=int, default=0, help="also the CUDA target (emulated) on every K-th seed")
    ap.add_argument("--profile", choices=gen_model.PROFILES, help="default: by seed (cnn half of the time)")
    ap.add_argument("--avoid", default="", help="comma-separated operator types the generator leaves out "
                    "(to look past a known failure class; the seeds then name other models)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per onnxc check")
    ap.add_argument("--keep", help="copy failing cases here")
    ap.add_argument("--shrink", action="store_true", help="shrink failures into --regressions")
    ap.add_argument("--regressions", default=os.path.join(HERE, "regressions"))
    ap.add_argument("--log", help="append one line per model here")
    ap.add_argument("--cases", help="check the case folders under this folder instead of random seeds")
    ap.add_argument("--float16", action="store_true",
                    help="the models converted to float16 (gen_model.to_float16), against ONNX Runtime's float16 "
                    "run, at float16's scaled tolerance (rtol 2^-8 plus 2^-8 of the largest expected magnitude)")
    ap.add_argument("--dynamic", action="store_true",
                    help="models with a dynamic dim n (gen_dynamic.py), compiled once with -D n=1..N_MAX")
    args = ap.parse_args()
    args.onnxc = os.path.abspath(args.onnxc)
    configs = args.configs.split(",")
    gen_model.AVOID.update(x for x in args.avoid.split(",") if x)
    if args.cuda_every:
        configs.append("cuda")
    else:
        args.cuda_every = 1
    for c in configs:
        parse_config(c)
    if args.cases:
        seeds = sorted(os.path.join(args.cases, d) for d in os.listdir(args.cases)
                       if os.path.isfile(os.path.join(args.cases, d, "model.onnx")))
        if not seeds:
            sys.exit(f"no case folders under {args.cases}")
        args.shrink = False
    else:
        seeds = parse_seeds(args.seeds)
    counts = {c: {} for c in configs}
    failures, nodes, n_differs, n_ill = [], 0, 0, 0
    log = open(args.log, "a") if args.log else None
    t0 = time.time()
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as ex:
        futs = [ex.submit(run_case_dir if args.cases else run_seed, s, args, configs) for s in seeds]
        for fut in concurrent.futures.as_completed(futs):
            try:
                seed, n, res = fut.result()
            except Exception as e:  # the generator itself: a bug in this script, counted as a failure
                print(f"FAIL generator: {type(e).__name__}: {e}", flush=True)
                failures.append((None, {}))
                continue
            nodes += n
            for c, (cat, _) in res.items():
                counts[c][cat] = counts[c].get(cat, 0) + 1
            bad = {c: r for c, r in res.items() if r[0] not in PASSING}
            differs = sorted(c for c, r in res.items() if r[0] == "ort-differs")
            illc = sorted(c for c, r in res.items() if r[0] == "ill-conditioned")
            line = f"{'' if args.cases else 'seed '}{seed} ({n} nodes): " + (", ".join(f"{c} {r[0]}" for c, r in sorted(bad.items()))
                                                   if bad else "ok")
            if differs:
                line += " (ONNX Runtime differs from onnx.reference, onnxc matches it: " + ", ".join(differs) + ")"
                n_differs += 1
            if illc:
                line += " (ill-conditioned: onnxc as close to the float64 evaluation as ONNX Runtime: " \
                    + ", ".join(illc) + ")"
                n_ill += 1
            if log:
                log.write(line + "\n")
                log.flush()
            if bad:
                failures.append((seed, res))
                print("FAIL " + line, flush=True)
                for c, (cat, msg) in sorted(bad.items()):
                    print(f"    {c}: {msg}", flush=True)
    dt = time.time() - t0
    n_models = len(seeds)
    for c in configs:
        cs = counts[c]
        print(f"config {c:7s}: " + ", ".join(f"{k} {v}" for k, v in sorted(cs.items())))
    print(f"{n_models} models ({nodes} nodes) in {dt:.1f} s: {n_models / dt:.2f} models/s with -j {args.jobs}")
    if n_differs:
        print(f"{n_differs} models where ONNX Runtime differs from onnx.reference and onnxc matches the reference")
    if n_ill:
        print(f"{n_ill} models ill-conditioned in float32 (ONNX Runtime and onnxc differ beyond the tolerance; "
              "onnxc is within it, plus twice ONNX Runtime's own error, of the float64 evaluation)")
    if args.shrink:
        import shrink
        for seed, res in sorted(failures, key=lambda f: -1 if f[0] is None else f[0]):  # seeds, not cases
            if seed is None:
                continue
            path = shrink.shrink_seed(seed, res, args)
            print(f"shrunk seed {seed} -> {path}", flush=True)
    print(f"{n_models - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
