"""onnxc.compile: runs the onnxc command line and loads what it built."""
import os
import re
import shutil
import subprocess
import tempfile
import weakref

from .model import Model, OnnxcError


class CompileError(OnnxcError):
    """onnxc exited nonzero; `returncode` and `stderr` are what it said."""

    def __init__(self, cmd, returncode, stderr):
        self.cmd, self.returncode, self.stderr = cmd, returncode, stderr
        super().__init__("onnxc failed (exit %d): %s\n%s" % (returncode, " ".join(cmd), stderr.strip()))


def find_onnxc(onnxc=None):
    """The onnxc executable: the argument, else $ONNXC, else `onnxc` on PATH."""
    exe = onnxc or os.environ.get("ONNXC") or shutil.which("onnxc")
    if not exe:
        raise OnnxcError("cannot find the onnxc compiler: pass onnxc=, set ONNXC, or put onnxc on PATH")
    return exe


def default_name(model_path):
    """The --name onnxc itself would choose: the file name made into an identifier."""
    base = os.path.basename(model_path)
    if base.endswith(".onnx"):
        base = base[:-5]
    name = re.sub(r"[^A-Za-z0-9]", "_", base).lower() or "model"
    return "m" + name if name[0].isdigit() else name


def _dim_spec(v):
    """A dims entry as -D takes it: N fixes the dim; (LO, HI) or (LO, HI, STEP)
    keeps it symbolic within the range (docs/dynamic-shapes.md)."""
    if isinstance(v, str):
        return v
    if isinstance(v, (tuple, list)):
        if len(v) not in (2, 3):
            raise ValueError("a dims range is (LO, HI) or (LO, HI, STEP), got %r" % (v,))
        return "%d..%d" % (int(v[0]), int(v[1])) + (":%d" % int(v[2]) if len(v) == 3 else "")
    return "%d" % int(v)


def compile(model, output=None, name=None, threads=None, shapes=None, dims=None, options=(), onnxc=None):
    """Compiles `model` (an ONNX file's path, or an onnx.ModelProto) into a
    shared library and loads it.

    output: the library's path (default: libNAME.so in a temporary folder
    removed with the returned Model); name: the C prefix (--name); threads:
    --threads N; shapes: {input: (d0, d1, ...)} for --shape (an extent may be
    a dim name); dims: {dim_param: value} for -D, a value N, a range (LO, HI)
    or (LO, HI, STEP) kept symbolic (the Model then takes any extent in it),
    or the -D text ("1..512"); options: further command-line words (e.g. ["-O3"]); onnxc:
    the compiler (default $ONNXC or `onnxc` on PATH)."""
    exe = find_onnxc(onnxc)
    tmp = None
    if hasattr(model, "SerializeToString"):  # an onnx.ModelProto: written to the temporary folder
        tmp = tempfile.mkdtemp(prefix="onnxc-")
        name = name or "model"
        path = os.path.join(tmp, name + ".onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        model = path
    model = os.fspath(model)
    name = name or default_name(model)
    if output is None:
        tmp = tmp or tempfile.mkdtemp(prefix="onnxc-")
        output = os.path.join(tmp, "lib%s.so" % name)
    cmd = [exe, model, "-o", os.fspath(output), "--name", name]
    if threads is not None:
        cmd += ["--threads", str(int(threads))]
    for k, v in (shapes or {}).items():  # an extent may be a dim name, bound by dims
        cmd += ["--shape", "%s=%s" % (k, "x".join(d if isinstance(d, str) else str(int(d)) for d in v))]
    for k, v in (dims or {}).items():
        cmd += ["-D", "%s=%s" % (k, _dim_spec(v))]
    cmd += [str(o) for o in options]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode != 0:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        raise CompileError(cmd, p.returncode, p.stderr)
    m = Model(output, name)
    if tmp:  # the library stays mapped after its file is gone
        weakref.finalize(m, shutil.rmtree, tmp, True)
    return m
