"""Machine description and markdown tables for bench/run.py."""

import datetime
import os
import platform
import subprocess


def _first_line(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        text = (out.stdout or out.stderr).strip()
        return text.splitlines()[0] if text else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "not found"


def _cpuinfo():
    model, flags, mhz = "?", set(), None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key, value = key.strip(), value.strip()
                if key == "model name" and model == "?":
                    model = value
                elif key == "flags" and not flags:
                    flags = set(value.split())
                elif key == "cpu MHz" and mhz is None:
                    mhz = value
    except OSError:
        model = platform.processor() or "?"
    return model, flags, mhz


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def machine(onnxc, cc_cmd, repo):
    import numpy
    import onnx
    import onnxruntime
    model, flags, mhz = _cpuinfo()
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "neon", "asimd")
           if f in flags]
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    commit = _first_line(["git", "-C", repo, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", repo, "diff", "--quiet", "HEAD"],
                           capture_output=True).returncode
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": model,
        "cpu_mhz": mhz,
        "isa": " ".join(isa) or "?",
        "cores_online": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "memory": mem,
        "kernel": f"{platform.system()} {platform.release()}",
        "load_start": loadavg(),
        "cc": _first_line(cc_cmd.split() + ["--version"]),
        "onnxc": _first_line([onnxc, "--version"]),
        "commit": commit + (" (with uncommitted changes)" if dirty == 1 else ""),
        "onnxruntime": onnxruntime.__version__,
        "onnx": onnx.__version__,
        "numpy": numpy.__version__,
        "python": platform.python_version(),
    }


def machine_md(m):
    rows = [("date", m["date"]), ("CPU", f"{m['cpu']} ({m['isa']})"),
            ("cores", f"{m['cores_usable']} usable of {m['cores_online']} online"),
            ("memory", m["memory"]), ("kernel", m["kernel"]),
            ("load average (1/5/15 min)", f"start {m['load_start']}, end {m.get('load_end', '?')}"),
            ("C compiler", m["cc"]), ("generated-code flags", m.get("cflags", "?")),
            ("onnxc", f"{m['onnxc']}, commit {m['commit']}"),
            ("ONNX Runtime", f"{m['onnxruntime']} (CPU EP, ORT_ENABLE_ALL, sequential)"),
            ("onnx / numpy / Python", f"{m['onnx']} / {m['numpy']} / {m['python']}")]
    if m.get("peak"):
        p = m["peak"]
        paths = ", ".join(f"{k} {v:.1f}" for k, v in p.get("paths", {}).items())
        rows.append(("peak probe (bench/peak.c)",
                     f"{p['gflops']:.1f} GFLOP/s single core, {p['isa']} (per ISA: {paths})"))
    return "\n".join(["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows])


def _ms(x):
    if x is None:
        return "-"
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


def _ratio(a, b):
    return f"{a / b:.2f}" if a and b else "-"


def models_md(results, threads, onnxc_threads, stat="median"):
    """One row per model; stat "median", "min" or "cpu" (median CPU time of
    the calling thread, 1 thread only) picks the latency statistic."""
    key = {"median": "_ms", "min": "_min_ms", "cpu": "_cpu_ms"}[stat]
    head = ["model", "GFLOP", "compile s"]
    for t in threads:
        head += [f"onnxc {t}T ms", f"ORT {t}T ms", f"ratio {t}T"]
    head += ["onnxc GFLOP/s 1T", "matches ORT"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = set()
    for r in results:
        flops = r.get("flops")
        row = [r["name"], f"{flops / 1e9:.2f}" if flops else "?"]
        c = r.get("compile") or {}
        row.append(f"{c['wall_s']:.1f}" if c.get("ok") else "fail")
        for t in threads:
            o = r.get("onnxc" + key, {}).get(str(t))
            ort_ms = r.get("ort" + key, {}).get(str(t))
            if o is None and t > 1 and not onnxc_threads:
                o = r.get("onnxc" + key, {}).get(str(threads[0]))
            mark = ""
            if o is not None and t > 1 and not onnxc_threads:
                mark = " *"
                notes.add("threads")
            row += [_ms(o) + mark, _ms(ort_ms), _ratio(o, ort_ms)]
        o1 = r.get("onnxc" + key, {}).get(str(threads[0]))
        row.append(f"{flops / o1 / 1e6:.1f}" if flops and o1 else "-")
        row.append(r.get("verdict", "-"))
        lines.append("| " + " | ".join(row) + " |")
    if "threads" in notes:
        lines.append("")
        lines.append("\\* onnxc generates single-threaded code today: the column repeats its "
                     "1-thread latency.")
    return "\n".join(lines)


def int8_md(results, stat="median"):
    """Per model with an int8 twin (NAME and NAME_int8 both timed), at 1
    thread: onnxc and ORT latencies of both, the int8 speedup of each engine
    and onnxc int8 / ORT int8."""
    key = {"median": "_ms", "min": "_min_ms", "cpu": "_cpu_ms"}[stat]
    by = {r["name"]: r for r in results}
    head = ["model", "onnxc f32 ms", "onnxc int8 ms", "onnxc f32/int8", "ORT f32 ms", "ORT int8 ms",
            "ORT f32/int8", "int8: onnxc/ORT"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r8 in by.items():
        if not name.endswith("_int8") or name[:-5] not in by:
            continue
        r = by[name[:-5]]
        of, oi = r.get("onnxc" + key, {}).get("1"), r8.get("onnxc" + key, {}).get("1")
        rf, ri = r.get("ort" + key, {}).get("1"), r8.get("ort" + key, {}).get("1")
        lines.append("| " + " | ".join([name[:-5], _ms(of), _ms(oi), _ratio(of, oi), _ms(rf), _ms(ri),
                                        _ratio(rf, ri), _ratio(oi, ri)]) + " |")
    return "\n".join(lines)


def micro_md(results, peak, prototype=None):
    """Kernels at one thread: median wall time, and GFLOP/s and % of the peak
    probe from the median CPU time of the calling thread (load-robust)."""
    head = ["kernel", "GFLOP"]
    for eng in ("onnxc", "ORT"):
        head += [f"{eng} ms wall", f"{eng} ms CPU", f"{eng} GFLOP/s", f"{eng} % peak"]
    head.append("matches ORT")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def cells(f, wall, cpu):
        if not (f and wall and cpu):
            return ["-"] * 4
        g = f / cpu / 1e6
        return [_ms(wall), _ms(cpu), f"{g:.1f}", f"{100 * g / peak:.0f}%" if peak else "-"]
    for r in results:
        f = r.get("flops") or 0
        row = [r["name"], f"{f / 1e9:.3f}"]
        for eng in ("onnxc", "ort"):
            row += cells(f, r.get(f"{eng}_ms", {}).get("1"), r.get(f"{eng}_cpu_ms", {}).get("1"))
        row.append(r.get("verdict", "-"))
        lines.append("| " + " | ".join(row) + " |")
    if prototype:
        p = prototype
        f = 2.0 * p["size"] ** 3
        row = [f"sgemm_{p['size']}: bench/gemm.c prototype ({p['isa']}, {p['mr']}x{p['nr']})",
               f"{f / 1e9:.3f}"] + cells(f, p["median_ms"], p["cpu_median_ms"])
        row += ["-"] * 4 + [f"max rel err {p['max_rel_err']:.1e}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)
