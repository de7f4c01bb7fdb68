#!/usr/bin/env python3
"""Run the CUDA target over the conformance cases the C target passes.

  --mode build  (no GPU needed) `onnxc check --target cuda --build-only`:
                emit NAME.cu, NVRTC-compile it (cubin + PTX), build the host
                code and link the test harness against the driver stub.
  --mode run    (needs a GPU) `onnxc check --target cuda`: the same, then run
                every data set on device 0 and compare with the expected outputs.

Cases come from tests/conformance/passing.txt (the C target's ratchet), or
from --cases FILE (one category/case a line, e.g. tests/cuda/ci_subset.txt).
Exit status 0 when every case passes, 1 otherwise; failures are listed with
the first lines of their output. See docs/cuda.md.
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "conformance"))
import run_conformance as rc  # noqa: E402  (discovery and light-model preparation)


def read_list(path):
    with open(path) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def run_one(key, args, light_dir):
    category, name = key.split("/", 1)
    if category == "light":
        case = rc.Case(category, name, os.path.join(args.data, "light", name + ".onnx"))
        try:
            case_dir = rc.prepare_light(case, light_dir)
        except Exception as e:  # an unpreparable light model is a failure to report
            return key, False, 0.0, f"cannot prepare: {e}"
    else:
        case_dir = os.path.join(args.data, category, name)
    cmd = [args.onnxc, "check", "--target", "cuda"]
    if args.mode == "build":
        cmd.append("--build-only")
    for arch in args.cuda_arch:
        cmd += ["--cuda-arch", arch]
    cmd.append(case_dir)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=args.timeout)
        ok, out = p.returncode == 0, p.stdout + p.stderr
    except subprocess.TimeoutExpired:
        ok, out = False, f"timed out after {args.timeout:.0f} s"
    return key, ok, time.time() - t0, out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--mode", choices=["build", "run"], default="build")
    ap.add_argument("--cases", default=os.path.join(ROOT, "tests", "conformance", "passing.txt"))
    ap.add_argument("--data", default=rc.default_data_dir())
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--cuda-arch", action="append", default=[])
    ap.add_argument("--filter", help="only cases whose category/case contains this text")
    ap.add_argument("--every", type=int, default=1, metavar="K",
                    help="a fixed sample: every K-th case of the sorted list, and every case whose "
                         "operator (the test name up to its first '_' after 'test_') no sampled case "
                         "covers yet; the count is printed (CI uses it, see tests/cuda.cmake)")
    ap.add_argument("-v", "--verbose", action="store_true", help="print each passing case too")
    args = ap.parse_args()

    keys = read_list(args.cases)
    if args.filter:
        keys = [k for k in keys if args.filter in k]
    total = len(keys)
    if args.every > 1:
        keys = rc.sample(keys, args.every)
        print(f"sample: {len(keys)} of {total} cases (1 in {args.every}, and one case of every "
              f"operator stem); the full set runs without --every", flush=True)
    t0 = time.time()
    failures = []
    slowest = []
    with tempfile.TemporaryDirectory(prefix="onnxc-cuda-light-") as light_dir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as ex:
            for key, ok, secs, out in ex.map(lambda k: run_one(k, args, light_dir), keys):
                slowest.append((secs, key))
                if not ok:
                    failures.append((key, out))
                    print(f"FAIL {key}", flush=True)
                elif args.verbose:
                    print(f"ok   {key} ({secs:.1f} s)", flush=True)
    wall = time.time() - t0
    slowest.sort(reverse=True)
    print(f"\n{len(keys) - len(failures)}/{len(keys)} cases pass ({args.mode} mode, {wall:.0f} s wall, "
          f"{args.jobs} jobs)")
    print("slowest: " + ", ".join(f"{k} {s:.1f}s" for s, k in slowest[:5]))
    for key, out in failures:
        lines = out.strip().splitlines()
        print(f"\n--- {key}\n" + "\n".join(lines[:12]) + ("\n..." if len(lines) > 12 else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
