#!/usr/bin/env python3
"""End-to-end check of onnxc against onnxruntime on the make_models.py models.

Usage: compare_ort.py --onnxc build/bin/onnxc --models OUTDIR [--timeout S]

Generates the models into OUTDIR with make_models.py when OUTDIR holds none
or they are older than make_models.py, then runs `onnxc check` on every case
directory there. The stored reference outputs were computed by onnxruntime,
so a pass means onnxc agrees with onnxruntime. Prints one line per model and
exits 1 if any model does not pass.
"""

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_MODELS = os.path.join(HERE, "make_models.py")
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))
from run_conformance import run_check  # noqa: E402


def case_dirs(models):
    if not os.path.isdir(models):
        return []
    return sorted(os.path.join(models, d) for d in os.listdir(models)
                  if os.path.isfile(os.path.join(models, d, "model.onnx")))


def up_to_date(cases):
    if not cases:
        return False
    oldest = min(os.path.getmtime(os.path.join(c, "model.onnx")) for c in cases)
    return oldest >= os.path.getmtime(MAKE_MODELS)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True, help="path of the onnxc executable")
    ap.add_argument("--models", required=True, help="directory of generated model cases")
    ap.add_argument("--timeout", type=float, default=300.0,
                    help="seconds allowed per model (default: %(default)s)")
    args = ap.parse_args()
    onnxc = os.path.abspath(args.onnxc)
    if not (os.path.isfile(onnxc) and os.access(onnxc, os.X_OK)):
        ap.error(f"--onnxc {args.onnxc}: not an executable file")

    if not up_to_date(case_dirs(args.models)):
        if subprocess.run([sys.executable, MAKE_MODELS, args.models]).returncode != 0:
            sys.exit("compare_ort.py: make_models.py failed")
    cases = case_dirs(args.models)

    failed = 0
    for case in cases:
        cls, reason, _ = run_check(onnxc, case, args.timeout)
        name = os.path.basename(case)
        if cls == "pass":
            print(f"PASS {name}")
        else:
            failed += 1
            print(f"FAIL {name}: {cls}: {reason}")
        sys.stdout.flush()
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed or not cases else 0


if __name__ == "__main__":
    sys.exit(main())
