"""A compiled onnxc library loaded with ctypes (docs/python.md).

The library's NAME_info() (docs/abi.md, "The model description") gives the
names, element types and shapes of the inputs and outputs, so a model is run
through NAME_run_v with numpy buffers and no header. The Model owns its
arena (a 64-byte aligned numpy buffer) and a lock: ctypes releases the GIL
during the call, and one arena serves one run at a time.
"""
import ctypes
import os
import re
import threading
from dataclasses import dataclass
from typing import Optional, Tuple

import numpy as np

from . import _abi


class OnnxcError(Exception):
    """Base class of the errors of this package."""


class LoadError(OnnxcError):
    """The file is not a library onnxc built for the C target, or its name is unknown."""


class RunError(OnnxcError):
    """NAME_run returned a nonzero status; `status` is the code, `code` its ONNXC_ERR_ name."""

    def __init__(self, model, status):
        self.status = status
        self.code, meaning = _abi.STATUS.get(status, ("unknown status", "not a status of docs/abi.md"))
        super().__init__("%s_run returned %d (%s): %s" % (model, status, self.code, meaning))


@dataclass(frozen=True)
class DimRange:
    """A dim the library takes at run time (onnxc -D NAME=LO..HI[:STEP]): inputs
    may have any extent in lo..hi (a multiple of step) there."""
    name: str
    lo: int
    hi: int
    step: int


@dataclass(frozen=True)
class TensorInfo:
    """One input or output. `shape` is the static shape; for a dynamic output
    (`dynamic` true) it is the upper bound, and each run returns an array of the
    actual shape. `dtype` is None for elements numpy cannot hold here (strings,
    complex, packed 4-bit and 2-bit types); `elem_type` is the ONNX code."""
    name: str
    dtype: Optional[np.dtype]
    shape: Tuple[int, ...]
    elem_type: int
    elem_type_name: str
    numel: int
    nbytes: int
    dynamic_dims: Tuple[int, ...]
    ranges: Tuple[int, ...] = ()  # per dim: the index in Model.dims of its range, -1 static, -2 an expression

    @property
    def dynamic(self):
        return bool(self.dynamic_dims)


def _tensor_info(t):
    name = t.name.decode("utf-8", "surrogateescape")
    shape = tuple(int(t.dims[k]) for k in range(t.rank))
    type_name, dtype = _abi.ELEM_TYPES.get(t.elem_type, ("type %d" % t.elem_type, None))
    if t.kind != _abi.KIND_TENSOR:
        dtype = None
    dyn = tuple(k for k in range(t.rank) if t.dynamic_dims >> k & 1)
    return TensorInfo(name, None if dtype is None else np.dtype(dtype), shape, int(t.elem_type), type_name,
                      int(t.numel), int(t.bytes), dyn)


def _names_in_file(path):
    """Prefixes NAME for which the file holds both NAME_info and NAME_run_v
    (the symbol names of the dynamic symbol table, read as plain bytes)."""
    with open(path, "rb") as f:
        data = f.read()
    infos = set(re.findall(rb"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)_info\x00", data))
    runs = set(re.findall(rb"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*)_run_v\x00", data))
    return sorted(n.decode() for n in infos & runs)


def _candidate_names(path):
    base = os.path.basename(path)
    stem = re.sub(r"\.(so|dylib|dll)(\.[0-9.]+)?$", "", base)
    out = [stem]
    if stem.startswith("lib") and len(stem) > 3:
        out.insert(0, stem[3:])
    return [re.sub(r"[^A-Za-z0-9_]", "_", s) for s in out]


class Model:
    """A compiled model: call it with arrays, or run({name: array})."""

    def __init__(self, path, name=None):
        self.path = os.path.abspath(path)
        try:
            self._lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise LoadError("cannot load %s: %s" % (path, e)) from None
        self.name = self._find_name(name)
        lib = self._lib
        info_fn = getattr(lib, self.name + "_info")
        info_fn.restype = ctypes.POINTER(_abi.ModelInfoC)
        info_fn.argtypes = []
        info = info_fn().contents
        if info.info_version < 1:
            raise LoadError("%s: %s_info() has version %d, not a model description" %
                            (path, self.name, info.info_version))
        self.onnxc_version = info.onnxc_version.decode()
        self.threads = int(info.threads)
        self.arena_bytes = int(info.arena_bytes)
        self.arena_align = int(info.arena_align)
        self.inputs = tuple(_tensor_info(info.inputs[i]) for i in range(info.n_inputs))
        self.outputs = tuple(_tensor_info(info.outputs[i]) for i in range(info.n_outputs))
        # -D ranges (NAME_info version 2): the inputs' extents there are the caller's choice
        self.dims = ()
        if info.info_version >= 2 and info.n_dims > 0:
            self.dims = tuple(DimRange(info.dims[k].name.decode("utf-8", "surrogateescape"), int(info.dims[k].lo),
                                       int(info.dims[k].hi), int(info.dims[k].step)) for k in range(info.n_dims))
            at, ins = 0, []
            for t in self.inputs:
                r = tuple(int(info.input_dims[at + k]) for k in range(len(t.shape)))
                at += len(t.shape)
                ins.append(TensorInfo(t.name, t.dtype, t.shape, t.elem_type, t.elem_type_name, t.numel, t.nbytes,
                                      t.dynamic_dims, r))
            self.inputs = tuple(ins)
            self._output_shapes = info.output_shapes
            self._run_dims_v = info.run_dims_v
        self._run_v = getattr(lib, self.name + "_run_v")
        self._run_v.restype = ctypes.c_int
        self._run_v.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
        self._free = getattr(lib, self.name + "_free_threads", None)
        if self._free is not None:
            self._free.restype = None
            self._free.argtypes = []
        # The arena: arena_bytes at an arena_align boundary of a buffer this object owns.
        align = max(self.arena_align, 1)
        self._arena_buf = np.empty(self.arena_bytes + align, dtype=np.uint8)
        addr = self._arena_buf.ctypes.data
        self._arena = ctypes.c_void_p(addr + (-addr) % align if self.arena_bytes else None)
        self._lock = threading.Lock()
        self._closed = False

    def _find_name(self, name):
        lib = self._lib
        if name is not None:
            if not hasattr(lib, name + "_info"):
                hint = " (built by an onnxc without NAME_info, or for --target cuda?)" \
                    if hasattr(lib, name + "_run_v") else ""
                raise LoadError("%s exports no %s_info%s" % (self.path, name, hint))
            return name
        for cand in _candidate_names(self.path):
            if hasattr(lib, cand + "_info") and hasattr(lib, cand + "_run_v"):
                return cand
        found = [n for n in _names_in_file(self.path) if hasattr(lib, n + "_info")]
        if len(found) == 1:
            return found[0]
        if not found:
            raise LoadError("%s exports no NAME_info/NAME_run_v pair: not a library onnxc built for the "
                            "C target (or built before NAME_info existed)" % self.path)
        raise LoadError("%s holds several models (%s): pass name=" % (self.path, ", ".join(found)))

    # -- metadata -------------------------------------------------------------
    @property
    def input_names(self):
        return [t.name for t in self.inputs]

    @property
    def output_names(self):
        return [t.name for t in self.outputs]

    def __repr__(self):
        def dim(t, k):  # a range's name where an input takes one (its upper bound otherwise)
            r = t.ranges[k] if k < len(t.ranges) else -1
            return self.dims[r].name if r >= 0 else str(t.shape[k])

        def fmt(ts):
            return ", ".join("%s: %s[%s]" % (t.name, t.elem_type_name, ", ".join(dim(t, k) for k in range(len(t.shape))))
                             for t in ts)
        return "<onnxc.Model %s (%s) -> (%s)>" % (self.name, fmt(self.inputs), fmt(self.outputs))

    # -- running --------------------------------------------------------------
    def _check_usable(self):
        if self._closed:
            raise OnnxcError("model %s is closed" % self.name)
        for kind, ts in (("input", self.inputs), ("output", self.outputs)):
            for t in ts:
                if t.dtype is None:
                    raise NotImplementedError(
                        "%s '%s' has element type %s, which the Python binding does not handle; "
                        "call %s_run from C (docs/abi.md)" % (kind, t.name, t.elem_type_name, self.name))

    def _prepare(self, t, x):
        want = t.dtype
        if isinstance(x, np.ndarray):
            if x.dtype != want:
                if t.elem_type == 16 and x.dtype.itemsize == 2 and x.dtype.name == "bfloat16":
                    x = x.view(np.uint16)  # ml_dtypes' bfloat16: the same bits
                else:
                    raise TypeError("input '%s' of %s: expected dtype %s (ONNX %s), got %s" %
                                    (t.name, self.name, want, t.elem_type_name, x.dtype))
        else:
            x = np.asarray(x, dtype=want)
        ranged = [k for k, r in enumerate(t.ranges) if r >= 0]
        if len(x.shape) != len(t.shape) or any(x.shape[k] != t.shape[k] for k in range(len(t.shape))
                                               if k not in ranged):
            want = tuple(self.dims[t.ranges[k]].name if k in ranged else d for k, d in enumerate(t.shape))
            raise ValueError("input '%s' of %s: expected shape %s, got %s" %
                             (t.name, self.name, want, tuple(x.shape)))
        return np.require(x, requirements=["C", "A"])

    def _dims_of(self, ins):
        """The ranges' values the inputs give (docs/python.md, "Ranges")."""
        vals = [None] * len(self.dims)
        for t, x in zip(self.inputs, ins):
            for k, r in enumerate(t.ranges):
                if r == -2:
                    raise NotImplementedError("input '%s' of %s: extent %d is an expression of the ranges; "
                                              "call %s_run_dims from C" % (t.name, self.name, k, self.name))
                if r < 0:
                    continue
                if vals[r] is not None and vals[r] != x.shape[k]:
                    raise ValueError("%s: inputs disagree on '%s' (%d and %d)" %
                                     (self.name, self.dims[r].name, vals[r], x.shape[k]))
                vals[r] = int(x.shape[k])
        for r, v in enumerate(vals):
            d = self.dims[r]
            if v is None:
                raise ValueError("%s: no input gives the value of '%s'" % (self.name, d.name))
            if v < d.lo or v > d.hi or v % d.step:
                raise ValueError("%s: '%s' is %d, outside %d..%d%s" % (
                    self.name, d.name, v, d.lo, d.hi, " in steps of %d" % d.step if d.step > 1 else ""))
        return (ctypes.c_int64 * max(len(vals), 1))(*vals)

    def _run(self, arrays):
        self._check_usable()
        ins = [self._prepare(t, x) for t, x in zip(self.inputs, arrays)]
        rdims = None
        shapes = [t.shape for t in self.outputs]
        if self.dims:  # this run's dims, and the outputs' shapes at them
            rdims = self._dims_of(ins)
            ext = (ctypes.c_int64 * max(sum(len(s) for s in shapes), 1))()
            status = self._output_shapes(rdims, ext)
            if status != 0:
                raise RunError(self.name, status)
            at, shapes = 0, []
            for t in self.outputs:
                shapes.append(tuple(int(ext[at + k]) for k in range(len(t.shape))))
                at += len(t.shape)
        outs = [np.empty(s, dtype=t.dtype) for t, s in zip(self.outputs, shapes)]
        dims = [np.zeros(len(t.shape), dtype=np.int64) for t in self.outputs if t.dynamic]
        in_p = (ctypes.c_void_p * max(len(ins), 1))(*[a.ctypes.data for a in ins])
        out_p = (ctypes.c_void_p * max(len(outs) + len(dims), 1))(
            *[a.ctypes.data for a in outs + dims])
        with self._lock:
            if rdims is not None:
                status = self._run_dims_v(self._arena, rdims, in_p, out_p)
            else:
                status = self._run_v(self._arena, in_p, out_p)
        if status != 0:
            raise RunError(self.name, status)
        result, k = [], 0
        for t, buf in zip(self.outputs, outs):
            if t.dynamic:
                shape = tuple(int(d) for d in dims[k])
                k += 1
                n = int(np.prod(shape, dtype=np.int64))
                buf = buf.reshape(-1)[:n].reshape(shape)
            result.append(buf)
        return result

    def __call__(self, *arrays):
        """Runs the model on the inputs in graph order; one output array, or a tuple."""
        if len(arrays) != len(self.inputs):
            raise TypeError("%s takes %d inputs (%s), got %d" %
                            (self.name, len(self.inputs), ", ".join(self.input_names), len(arrays)))
        out = self._run(arrays)
        return out[0] if len(out) == 1 else tuple(out)

    def run(self, feeds):
        """Runs the model on {input name: array}; returns {output name: array}."""
        missing = [n for n in self.input_names if n not in feeds]
        extra = [n for n in feeds if n not in self.input_names]
        if missing or extra:
            raise KeyError("%s: %s%s%s (inputs are %s)" % (
                self.name, "missing " + ", ".join(missing) if missing else "",
                "; " if missing and extra else "", "unknown " + ", ".join(map(str, extra)) if extra else "",
                ", ".join(self.input_names)))
        out = self._run([feeds[n] for n in self.input_names])
        return {t.name: a for t, a in zip(self.outputs, out)}

    # -- threads and lifetime ---------------------------------------------------
    def free_threads(self):
        """Stops and joins the library's worker threads (--threads N > 1); the
        next run starts them again. Does nothing for single-threaded builds."""
        if self._free is not None:
            with self._lock:
                self._free()

    def close(self):
        """Frees the worker threads and the arena; the model cannot run afterwards."""
        if self._closed:
            return
        self.free_threads()
        self._closed = True
        self._arena_buf = None
        self._arena = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def load(path, name=None):
    """Loads a library built by `onnxc MODEL.onnx -o PATH.so`. `name` is the
    --name it was built with; by default it is taken from the file name
    (libNAME.so or NAME.so) or, failing that, from the symbols the file exports."""
    return Model(path, name)
