#!/usr/bin/env python3
"""Run `onnxc check` over the ONNX backend test data and classify the results.

Each case directory holds model.onnx and test_data_set_N/{input,output}_M.pb.
`onnxc check CASE_DIR` compiles the model, runs it on every data set and
compares the outputs; its exit status is the verdict:

  0  every output matches                          -> pass
  1  some output differs (worst element printed)    -> mismatch
  2  the model cannot be compiled                   -> unsupported, when the output
                                                       names an "unsupported operator",
                                                       else compile-error
  other exit status or a signal                     -> crash
  no verdict within --timeout seconds               -> timeout

A ratchet file (one `category/case` per line, `#` starts a comment) lists the
cases that must keep passing: with --ratchet the run fails when one of them
does not pass, and --update-ratchet rewrites it from this run.

Example:
  run_conformance.py --onnxc build/bin/onnxc --ratchet tests/conformance/passing.txt \\
      --report docs/conformance.md
"""

import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import numpy_helper

DEFAULT_CATEGORIES = ["node", "simple", "pytorch-converted", "pytorch-operator", "light"]
CLASSES = ["pass", "mismatch", "compile-error", "unsupported", "crash", "timeout", "skipped",
           "excluded"]
UNSUPPORTED_MARK = "unsupported operator"
UNSUPPORTED_OP = re.compile(r"\(([\w.:-]+)\)\s*:\s*" + UNSUPPORTED_MARK)
MAX_REASON = 240

# `onnxc check` processes in flight; each runs in its own session (so that a
# timeout can kill its children), which also hides it from the terminal's
# Ctrl-C, so an interrupted run kills them itself.
_running = set()
_running_lock = threading.Lock()


@dataclass
class Case:
    category: str
    name: str
    path: str  # the case directory; for light, the .onnx file until prepared

    @property
    def key(self):
        return f"{self.category}/{self.name}"


@dataclass
class Result:
    case: Case
    cls: str
    reason: str
    unsupported_ops: tuple = ()
    seconds: float = 0.0


# ------------------------------------------------------------ discovery --

def discover(data_dir, categories, pattern):
    cases = []
    for category in categories:
        root = os.path.join(data_dir, category)
        if category == "light":
            found = [Case(category, f[:-len(".onnx")], os.path.join(root, f))
                     for f in os.listdir(root) if f.endswith(".onnx")]
        else:
            found = [Case(category, d, os.path.join(root, d)) for d in os.listdir(root)
                     if os.path.isfile(os.path.join(root, d, "model.onnx"))]
        cases += [c for c in found if pattern is None or pattern.search(c.key)]
    return sorted(cases, key=lambda c: c.key)


# The light models (data/light/light_<net>.onnx) are the classic model-zoo
# networks with every large weight replaced by a ConstantOfShape node, so the
# files stay small. Next to each model there is only the expected result,
# light_<net>_output_0.pb (its tensor name is empty); there are no inputs.
# The ONNX test runner (onnx/backend/test/runner/__init__.py, the
# "data/light/" branch of _add_model_test, via generate_dummy_data with
# random=False) feeds every graph input that is not an initializer with
#   np.arange(n).reshape(shape) / n   as float32, unknown dimensions taken as 1,
# and checks against the stored output_<i>.pb. (It falls back to the
# ReferenceEvaluator when an output file is missing; none is missing, and that
# fallback is far too slow for these networks, so such a case is skipped.)
# data/real/*/data.json only points at these same files, so 'real' adds
# nothing. prepare_light() rebuilds that feed as a case directory in the
# standard layout so `onnxc check` treats it like any other case.

def prepare_light(case, work_dir):
    """Returns the prepared case directory; raises if the model cannot be fed."""
    model = onnx.load(case.path)
    initializers = {t.name for t in model.graph.initializer}
    inputs = [vi for vi in model.graph.input if vi.name not in initializers]

    expected = [f"{case.path[:-len('.onnx')]}_output_{i}.pb"
                for i in range(len(model.graph.output))]
    missing = [os.path.basename(p) for p in expected if not os.path.isfile(p)]
    if missing:
        raise ValueError(f"no expected output {', '.join(missing)}")

    case_dir = os.path.join(work_dir, case.name)
    data_dir = os.path.join(case_dir, "test_data_set_0")
    shutil.rmtree(case_dir, ignore_errors=True)
    os.makedirs(data_dir)
    shutil.copyfile(case.path, os.path.join(case_dir, "model.onnx"))

    for i, vi in enumerate(inputs):
        if vi.type.tensor_type.elem_type != onnx.TensorProto.FLOAT:
            raise ValueError(f"input '{vi.name}' is not float32")
        shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                      for d in vi.type.tensor_type.shape.dim)
        n = int(np.prod(shape))
        value = (np.arange(n).reshape(shape) / n).astype(np.float32)
        write_tensor(numpy_helper.from_array(value, vi.name),
                     os.path.join(data_dir, f"input_{i}.pb"))

    for i, (vi, path) in enumerate(zip(model.graph.output, expected)):
        tensor = onnx.load_tensor(path)
        tensor.name = vi.name
        write_tensor(tensor, os.path.join(data_dir, f"output_{i}.pb"))
    return case_dir


def write_tensor(tensor, path):
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


# ------------------------------------------------------------- running --

def run_check(onnxc, case_dir, timeout):
    """Runs `onnxc check` on one case directory; returns (class, reason, ops)."""
    try:
        proc = subprocess.Popen([onnxc, "check", case_dir], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError as e:
        return "crash", f"cannot run {onnxc}: {e}", ()
    with _running_lock:
        _running.add(proc)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        return "timeout", f"no verdict after {timeout:g} s", ()
    finally:
        with _running_lock:
            _running.discard(proc)
    out = out.decode("utf-8", errors="replace")
    err = err.decode("utf-8", errors="replace")
    rc = proc.returncode
    first = first_line(err) or first_line(out)

    if rc == 0:
        return "pass", "", ()
    if rc == 1:
        return "mismatch", first or "outputs differ", ()
    if rc == 2:
        lines = [ln for ln in (err + "\n" + out).splitlines() if UNSUPPORTED_MARK in ln]
        if lines:
            return "unsupported", clean(lines[0]), unsupported_ops(lines)
        return "compile-error", first or "exit status 2", ()
    if rc < 0:
        try:
            how = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            how = f"killed by signal {-rc}"
    else:
        how = f"exit status {rc}"
    return "crash", f"{how}: {first}" if first else how, ()


def unsupported_ops(lines):
    """Operator names from lines like "FILE: node 'n' (OpType): unsupported operator"."""
    ops = set()
    for line in lines:
        m = UNSUPPORTED_OP.search(line)
        if m:
            ops.add(m.group(1))
    return tuple(sorted(ops))


def kill_group(proc, wait=True):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if not wait:
        return
    try:
        proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        # a grandchild that left the group still holds the pipes; give up on them
        pass


def first_line(text):
    for line in text.splitlines():
        if line.strip():
            return clean(line)
    return ""


def clean(line):
    # drop the leading "path/to/model.onnx: " that onnxc puts on diagnostics
    line = re.sub(r"^\S*\.onnx:\s*", "", line.strip())
    line = "".join(ch if ch.isprintable() else "?" for ch in line)
    return line if len(line) <= MAX_REASON else line[:MAX_REASON - 3] + "..."


def run_case(case, onnxc, timeout, light_dir, excluded):
    start = time.monotonic()
    r = run_case_untimed(case, onnxc, timeout, light_dir, excluded)
    r.seconds = time.monotonic() - start
    return r


def run_case_untimed(case, onnxc, timeout, light_dir, excluded):
    if case.key in excluded:
        return Result(case, "excluded", excluded[case.key])
    path = case.path
    if case.category == "light":
        try:
            path = prepare_light(case, light_dir)
        except Exception as e:  # an unreadable or unusual model is a skip, not an abort
            return Result(case, "skipped", clean(f"cannot prepare: {e}"))
    cls, reason, ops = run_check(onnxc, path, timeout)
    return Result(case, cls, reason, ops)


def run_all(cases, onnxc, timeout, jobs, light_dir, excluded):
    results = []
    show_progress = sys.stderr.isatty()
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=jobs)
    # The slowest cases first (whole models, the image decoders' runtime), so
    # that none of them starts last and leaves the other workers idle.
    def heavy(c):
        return 0 if c.category == "light" else 1 if "image_decoder" in c.name else 2
    try:
        futures = [pool.submit(run_case, c, onnxc, timeout, light_dir, excluded) for c in sorted(cases, key=heavy)]
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            results.append(future.result())
            if show_progress:
                print(f"\r{done}/{len(cases)}", end="", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        pool.shutdown(wait=False, cancel_futures=True)
        with _running_lock:
            for proc in _running:
                kill_group(proc, wait=False)
        raise
    pool.shutdown()
    if show_progress:
        print("\r", end="", file=sys.stderr)
    return sorted(results, key=lambda r: r.case.key)


# ------------------------------------------------------------- ratchet --

def read_exclusions(path):
    """`category/case  # reason` per line: cases whose expected output cannot be
    reproduced (random sampling the test does not fix) or whose operator is
    training-only. They are not run and count as not passed."""
    excluded = {}
    if not path or not os.path.exists(path):
        return excluded
    with open(path, encoding="utf-8") as f:
        for line in f:
            key, _, reason = line.partition("#")
            key = key.strip()
            if key:
                excluded[key] = "excluded: " + (reason.strip() or "no reason given")
    return excluded


def read_ratchet(path):
    if not os.path.exists(path):
        return set()
    keys = set()
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                keys.add(line)
    return keys


def write_ratchet(path, keys):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# Conformance cases (category/case) that must keep passing.\n"
                "# Regenerate with tests/conformance/run_conformance.py --update-ratchet.\n")
        for key in sorted(keys):
            f.write(key + "\n")


# -------------------------------------------------------------- report --

def counts_by_category(results, categories):
    table = {c: collections.Counter() for c in categories}
    for r in results:
        table[r.case.category][r.cls] += 1
    return table


def write_report(path, results, categories, args):
    def cell(text):
        return text.replace("\\", "\\\\").replace("|", "\\|") or " "

    table = counts_by_category(results, categories)
    total = collections.Counter(r.cls for r in results)
    lines = [
        "# ONNX backend conformance",
        "",
        f"`onnxc check` over the backend test data of onnx {onnx.__version__}"
        f" (categories: {', '.join(categories)}"
        + (f"; filter `{args.filter}`" if args.filter else "")
        + (f"; only the cases in `{args.ratchet}`" if args.only_listed else "")
        + "), written by `tests/conformance/run_conformance.py`.",
        "",
        "| category | cases | " + " | ".join(CLASSES) + " |",
        "|---|---:|" + "---:|" * len(CLASSES),
    ]
    for category in categories + ["**total**"]:
        counts = total if category == "**total**" else table[category]
        lines.append(f"| {category} | {sum(counts.values())} | "
                     + " | ".join(str(counts[c]) for c in CLASSES) + " |")

    npass = total["pass"]
    if results:
        lines += ["", f"Pass rate: {npass}/{len(results)} = {100.0 * npass / len(results):.2f}%"
                  " (excluded and skipped cases count as not passed)."]
    excluded = [r for r in results if r.cls == "excluded"]
    if excluded:
        lines += ["", "## Excluded cases", "",
                  "Not run: the expected output cannot be reproduced (random sampling the test"
                  " does not fix) or the operator is training-only. Listed in"
                  " `tests/conformance/excluded.txt`.", "",
                  "| case | reason |", "|---|---|"]
        lines += [f"| {cell(r.case.key)} | {cell(r.reason[len('excluded: '):])} |" for r in excluded]

    ops = collections.Counter(op for r in results for op in r.unsupported_ops)
    if ops:
        lines += ["", "## Unsupported operators", "",
                  "| operator | cases |", "|---|---:|"]
        lines += [f"| {op} | {n} |" for op, n in sorted(ops.items(), key=lambda x: (-x[1], x[0]))]

    failing = [r for r in results if r.cls not in ("pass", "excluded")]
    lines += ["", "## Cases that do not pass", ""]
    if failing:
        lines += ["| case | class | reason |", "|---|---|---|"]
        lines += [f"| {cell(r.case.key)} | {r.cls} | {cell(r.reason)} |" for r in failing]
    else:
        lines.append("None.")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


# ---------------------------------------------------------------- main --

def default_data_dir():
    return os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True, help="path of the onnxc executable")
    ap.add_argument("--data", default=default_data_dir(),
                    help="backend test data directory (default: the installed onnx package's)")
    ap.add_argument("--categories", default=",".join(DEFAULT_CATEGORIES),
                    help="comma-separated subdirectories of DATA (default: %(default)s)")
    ap.add_argument("--filter", help="only cases whose category/case matches this regex")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                    help="cases run in parallel (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=120.0,
                    help="seconds allowed per case (default: %(default)s)")
    ap.add_argument("--ratchet", help="file of cases that must pass")
    ap.add_argument("--update-ratchet", action="store_true",
                    help="rewrite the ratchet file: cases in this run's scope are replaced "
                         "by those that passed, the others are kept")
    ap.add_argument("--only-listed", action="store_true",
                    help="run only the cases listed in the ratchet file")
    ap.add_argument("--every", type=int, default=1, metavar="K",
                    help="a fixed sample: every K-th selected case (sorted), one case of every "
                         "operator stem and every whole model (light); the count is printed")
    ap.add_argument("--rest", action="store_true",
                    help="with --every: the selected cases that sample leaves out instead")
    ap.add_argument("--slowest", type=int, default=0, metavar="N",
                    help="print the N slowest cases and the sum of all cases' times")
    ap.add_argument("--report", help="write a markdown report to this file")
    ap.add_argument("--exclusions",
                    default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "excluded.txt"),
                    help="file of excluded cases with their reasons (default: %(default)s)")
    ap.add_argument("--light-dir",
                    help="where to write the light models as standard case directories "
                         "(default: a temporary directory, removed at exit)")
    args = ap.parse_args(argv)

    onnxc = shutil.which(args.onnxc) or args.onnxc
    if not (os.path.isfile(onnxc) and os.access(onnxc, os.X_OK)):
        ap.error(f"--onnxc {args.onnxc}: not an executable file")
    args.onnxc = os.path.abspath(onnxc)
    if not os.path.isdir(args.data):
        ap.error(f"--data {args.data}: no such directory")
    args.categories = [c for c in args.categories.split(",") if c]
    for c in args.categories:
        if not os.path.isdir(os.path.join(args.data, c)):
            ap.error(f"no category {c!r} in {args.data}")
    try:
        args.pattern = re.compile(args.filter) if args.filter else None
    except re.error as e:
        ap.error(f"--filter: {e}")
    if (args.update_ratchet or args.only_listed) and not args.ratchet:
        ap.error("--update-ratchet and --only-listed need --ratchet FILE")
    if args.jobs < 1:
        ap.error("--jobs must be at least 1")
    if args.every < 1:
        ap.error("--every must be at least 1")
    if args.rest and args.every < 2:
        ap.error("--rest needs --every K with K >= 2")
    if args.update_ratchet and args.every > 1:
        ap.error("--update-ratchet needs every case (no --every)")
    return args


def stem(key):
    """The operator part of a case name: node/test_conv_with_strides -> node/conv."""
    name = key.split("/", 1)[1]
    name = name[5:] if name.startswith("test_") else name
    return key.split("/", 1)[0] + "/" + name.split("_", 1)[0]


def sample(keys, every, whole_models=False):
    """Every `every`-th key of the sorted list, plus the first key of each stem
    not covered by one (and, with whole_models, every light model)."""
    keys = sorted(keys)
    picked = [k for i, k in enumerate(keys) if i % every == 0 or (whole_models and k.startswith("light/"))]
    seen = {stem(k) for k in picked}
    for k in keys:
        if stem(k) not in seen:
            seen.add(stem(k))
            picked.append(k)
    return sorted(set(picked))


def main(argv=None):
    args = parse_args(argv)
    listed = read_ratchet(args.ratchet) if args.ratchet else set()
    excluded = read_exclusions(args.exclusions)

    sampled = None  # with --every: the keys run, and the only ones the ratchet checks

    def in_scope(key):
        category = key.split("/", 1)[0]
        return (category in args.categories
                and (args.pattern is None or args.pattern.search(key) is not None)
                and (sampled is None or key in sampled))

    cases = discover(args.data, args.categories, args.pattern)
    if args.only_listed:
        cases = [c for c in cases if c.key in listed]
    if args.every > 1:
        picked = set(sample([c.key for c in cases], args.every, whole_models=True))
        total = len(cases)
        found = {c.key for c in cases}
        cases = [c for c in cases if (c.key in picked) != args.rest]
        # listed cases missing from the test data still fail the sample's run
        lost = set() if args.rest else {k for k in listed if in_scope(k)} - found
        sampled = {c.key for c in cases} | lost
        what = (f"those --every {args.every} leaves out" if args.rest else
                f"1 in {args.every}, one of every operator stem, every whole model")
        print(f"sample: {len(cases)} of {total} cases ({what}); without --every all of them run", flush=True)
    if not cases:
        print("warning: no case selected", file=sys.stderr)

    with tempfile.TemporaryDirectory(prefix="onnxc-light-") as tmp:
        light_dir = args.light_dir or tmp
        os.makedirs(light_dir, exist_ok=True)
        results = run_all(cases, args.onnxc, args.timeout, args.jobs, light_dir, excluded)

    for r in results:
        if r.cls in ("skipped", "excluded"):
            print(f"SKIP {r.case.key}: {r.reason}")
        elif r.cls != "pass":
            print(f"FAIL {r.case.key}: {r.cls}: {r.reason}")

    status = 0
    passing = {r.case.key for r in results if r.cls == "pass"}
    if args.ratchet:
        run_keys = {r.case.key for r in results}
        checked = {k for k in listed if in_scope(k)}
        regressed = sorted(checked - passing)
        if args.update_ratchet:
            updated = {k for k in listed if not in_scope(k)} | passing
            write_ratchet(args.ratchet, updated)
            print(f"ratchet: {len(updated - listed)} added, {len(listed - updated)} removed, "
                  f"{len(updated)} listed in {args.ratchet}")
        elif regressed:
            for key in regressed:
                why = "not found in the test data" if key not in run_keys else "does not pass"
                print(f"RATCHET {key}: {why}")
            print(f"ratchet: {len(regressed)} of {len(checked)} listed cases do not pass")
            status = 1

    if args.slowest:
        print(f"slowest {args.slowest} cases (wall seconds; total {sum(r.seconds for r in results):.0f} s):")
        for r in sorted(results, key=lambda r: -r.seconds)[:args.slowest]:
            print(f"  {r.seconds:7.2f}  {r.case.key}")

    if args.report:
        write_report(args.report, results, args.categories, args)

    for category, counts in counts_by_category(results, args.categories).items():
        if not counts:
            continue
        detail = ", ".join(f"{counts[c]} {c}" for c in CLASSES[1:] if counts[c])
        print(f"  {category}: {counts['pass']}/{sum(counts.values())} passed"
              + (f" ({detail})" if detail else ""))
    # Excluded cases are reported as skipped and count as not passed in the rate.
    skipped = sum(1 for r in results if r.cls in ("skipped", "excluded"))
    if results:
        print(f"pass rate: {len(passing)}/{len(results)} = {100.0 * len(passing) / len(results):.2f}% "
              "(skipped and excluded cases count as not passed)")
    summary = f"{len(passing)} passed, {len(results) - len(passing) - skipped} failed"
    print(summary + (f", {skipped} skipped" if skipped else ""))
    return status


if __name__ == "__main__":
    sys.exit(main())
