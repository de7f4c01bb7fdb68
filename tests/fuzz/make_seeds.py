#!/usr/bin/env python3
"""Collect the fuzz target's seed corpus (docs/fuzzing.md).

Usage: make_seeds.py OUTDIR [--max-bytes N] [--no-generated] [--no-light]

Copies every model.onnx of the installed onnx package's backend test data
(data/{node,simple,pytorch-converted,pytorch-operator}/<case>/model.onnx and
data/light/*.onnx) into OUTDIR as <category>__<case>.onnx, plus the bundled
models/ and the multi-op models tests/models/make_models.py builds (skipped
with --no-generated, or when onnxruntime is missing: they need it for their
reference outputs). Models over --max-bytes (default 1 MiB) are left out:
libFuzzer caps an input's length at the largest seed's, and big seeds slow
every mutation. --no-light leaves out data/light (model-zoo networks whose
ConstantOfShape weights fold into up to 500 MB: about a second each under
the sanitizers, too slow for a one-minute run). Prints the count and the
total size.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CATEGORIES = ["node", "simple", "pytorch-converted", "pytorch-operator", "light"]


def backend_models(data, light):
    for cat in CATEGORIES:
        if cat == "light" and not light:
            continue
        base = os.path.join(data, cat)
        if not os.path.isdir(base):
            sys.exit(f"make_seeds: {base} is missing (onnx package without its test data?)")
        if cat == "light":
            for p in sorted(glob.glob(os.path.join(base, "*.onnx"))):
                yield f"{cat}__{os.path.basename(p)[:-5]}", p
            continue
        for case in sorted(os.listdir(base)):
            p = os.path.join(base, case, "model.onnx")
            if os.path.isfile(p):
                yield f"{cat}__{case}", p


def generated_models(tmp):
    try:
        import onnxruntime  # noqa: F401  (make_models.py needs it)
    except ImportError:
        print("make_seeds: onnxruntime missing: tests/models seeds left out", file=sys.stderr)
        return
    out = os.path.join(tmp, "models")
    subprocess.run([sys.executable, os.path.join(ROOT, "tests", "models", "make_models.py"), out],
                   check=True, stdout=subprocess.DEVNULL)
    for p in sorted(glob.glob(os.path.join(out, "*", "model.onnx"))):
        yield "models__" + os.path.basename(os.path.dirname(p)), p


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("--max-bytes", type=int, default=1 << 20)
    ap.add_argument("--no-generated", action="store_true")
    ap.add_argument("--no-light", action="store_true")
    args = ap.parse_args()
    import onnx
    data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    os.makedirs(args.outdir, exist_ok=True)
    sources = list(backend_models(data, not args.no_light))
    sources += [("bundled__" + os.path.basename(p)[:-5], p)
                for p in sorted(glob.glob(os.path.join(ROOT, "models", "*", "*.onnx")))]
    count = total = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_generated:
            sources += list(generated_models(tmp))
        for name, path in sources:
            size = os.path.getsize(path)
            if size > args.max_bytes:
                skipped += 1
                continue
            shutil.copyfile(path, os.path.join(args.outdir, name + ".onnx"))
            count += 1
            total += size
    print(f"make_seeds: {count} seeds, {total} bytes, in {args.outdir}"
          f" ({skipped} over {args.max_bytes} bytes left out)")


if __name__ == "__main__":
    main()
