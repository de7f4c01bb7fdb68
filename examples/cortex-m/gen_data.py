#!/usr/bin/env python3
"""Write fw_data.h / fw_data.c: a model's test inputs as const C arrays for main.c.

usage: gen_data.py --header SRC/NAME.h --name NAME --out DIR INPUTS
       gen_data.py --pins MODEL.onnx --pb SET_DIR
INPUTS, one of:
  --raw FILE [--count N]   raw little-endian tensors of input 0, one after the
                           other (models/digits/test_digits.bin); takes N sets
  --pb SET_DIR ...         ONNX test-data folders holding input_<i>.pb (needs the
                           onnx Python package); one input set per folder

Everything about the model comes from its generated header (the ABI in
docs/abi.md): element counts from NAME_INPUTk_NUMEL / NAME_OUTPUTk_NUMEL, C
types from the NAME_run prototype, and the ONNX element type of each tensor
from the header's comment (f16 and bf16 share uint16_t). Values are written
exactly: floats as C99 hex literals, everything else as integers.

--pins prints `-D NAME=VALUE` for every symbolic dimension (dim_param) of the
model's inputs, read from the test data's shapes, for onnxc (which needs every
shape known at compile time).
"""

import argparse
import math
import os
import re
import struct
import sys

# dtype -> (C type, bytes, struct format of one little-endian element)
DTYPES = {
    "f32": ("float", 4, "<f"), "f64": ("double", 8, "<d"),
    "i8": ("int8_t", 1, "<b"), "i16": ("int16_t", 2, "<h"),
    "i32": ("int32_t", 4, "<i"), "i64": ("int64_t", 8, "<q"),
    "u8": ("uint8_t", 1, "<B"), "u16": ("uint16_t", 2, "<H"),
    "u32": ("uint32_t", 4, "<I"), "u64": ("uint64_t", 8, "<Q"),
    "bool": ("uint8_t", 1, "<B"), "f16": ("uint16_t", 2, "<H"),
    "bf16": ("uint16_t", 2, "<H"),
    "f8e4m3fn": ("uint8_t", 1, "<B"), "f8e4m3fnuz": ("uint8_t", 1, "<B"),
    "f8e5m2": ("uint8_t", 1, "<B"), "f8e5m2fnuz": ("uint8_t", 1, "<B"),
    "f8e8m0": ("uint8_t", 1, "<B"),
}
DEFAULT_DTYPE = {"float": "f32", "double": "f64", "int8_t": "i8", "int16_t": "i16",
                 "int32_t": "i32", "int64_t": "i64", "uint8_t": "u8", "uint16_t": "u16",
                 "uint32_t": "u32", "uint64_t": "u64"}


def fail(msg):
    sys.exit(f"gen_data.py: {msg}")


class Tensor:
    def __init__(self, ctype, dtype, numel):
        self.ctype, self.dtype, self.numel = ctype, dtype, numel


def parse_header(path, name):
    """Inputs and outputs of NAME_run as lists of Tensor, plus the arena macro."""
    text = open(path).read()
    up = name.upper()

    def define(macro):
        m = re.search(rf"#define {macro} (\d+)", text)
        if not m:
            fail(f"{path}: no #define {macro}")
        return int(m.group(1))

    proto = re.search(rf"^int {name}_run\((.*?)\);", text, re.S | re.M)
    if not proto:
        fail(f"{path}: no prototype of {name}_run")
    params = [p.strip() for p in proto.group(1).split(",")][1:]  # drop the arena
    comment = dict(re.findall(r"^ \*   ((?:input |output) *\d+): \S+ (\w+)\[", text, re.M))
    ins, outs = [], []
    for p in params:
        m = re.match(r"(const )?(\w+) \*(in|out)_\w+$", p)
        if not m:
            fail(f"{path}: cannot read parameter '{p}' of {name}_run")
        ctype, kind = m.group(2), m.group(3)
        lst = ins if kind == "in" else outs
        i = len(lst)
        label = f"input  {i}" if kind == "in" else f"output {i}"
        dtype = comment.get(label, DEFAULT_DTYPE.get(ctype))
        if dtype not in DTYPES or DTYPES[dtype][0] != ctype:
            fail(f"{path}: {label} has element type {dtype} ({ctype}), which the example does not handle")
        macro = f"{up}_INPUT{i}_NUMEL" if kind == "in" else f"{up}_OUTPUT{i}_NUMEL"
        lst.append(Tensor(ctype, dtype, define(macro)))
    if len(ins) != define(f"{up}_NUM_INPUTS") or len(outs) != define(f"{up}_NUM_OUTPUTS"):
        fail(f"{path}: the prototype of {name}_run disagrees with the NUM_ macros")
    return ins, outs


def literal(dtype, v):
    if dtype in ("f32", "f64"):
        suffix = "f" if dtype == "f32" else ""
        if math.isnan(v):
            return "NAN" if suffix else "(double)NAN"
        if math.isinf(v):
            return ("-" if v < 0 else "") + ("INFINITY" if suffix else "(double)INFINITY")
        return float(v).hex() + suffix
    ctype, size = DTYPES[dtype][0], DTYPES[dtype][1]
    v = int(v)
    if ctype.startswith("int"):
        lo = -(1 << (8 * size - 1))
        if v == lo:  # the most negative value is not a literal in C
            return f"({lo + 1} - 1)" if size < 8 else "(-INT64_C(9223372036854775807) - 1)"
        return f"INT64_C({v})" if size == 8 else str(v)
    return f"UINT64_C({v})" if size == 8 else f"{v}u"


def raw_sets(path, count, tensor):
    fmt, size = DTYPES[tensor.dtype][2], DTYPES[tensor.dtype][1]
    data = open(path, "rb").read()
    per_set = tensor.numel * size
    have = len(data) // per_set if per_set else 0
    if have < count:
        fail(f"{path}: holds {have} input sets of {per_set} bytes, {count} wanted")
    return [[[struct.unpack_from(fmt, data, (s * tensor.numel + i) * size)[0]
              for i in range(tensor.numel)]] for s in range(count)]


def pb_sets(dirs, ins):
    try:
        import numpy as np
        import onnx
        from onnx import numpy_helper
    except ImportError:
        fail("--pb needs the onnx and numpy Python packages (scripts/setup.sh --test puts them in .venv)")
    sets = []
    for d in dirs:
        values = []
        for i, t in enumerate(ins):
            path = os.path.join(d, f"input_{i}.pb")
            proto = onnx.TensorProto()
            with open(path, "rb") as f:
                proto.ParseFromString(f.read())
            a = numpy_helper.to_array(proto)
            if a.size != t.numel:
                fail(f"{path}: {a.size} elements, the model's input {i} has {t.numel}")
            a = np.ascontiguousarray(a).reshape(-1)
            if t.dtype in ("f16", "bf16") or t.dtype.startswith("f8"):
                a = a.view(np.uint16 if t.dtype in ("f16", "bf16") else np.uint8)
            values.append(a.tolist())
        sets.append(values)
    return sets


def pins(model_path, set_dir):
    """-D arguments binding the inputs' dim_params to the test data's extents."""
    import onnx
    model = onnx.load(model_path, load_external_data=False)
    inits = {t.name for t in model.graph.initializer}
    found = {}
    inputs = [i for i in model.graph.input if i.name not in inits]
    for k, inp in enumerate(inputs):
        dims = inp.type.tensor_type.shape.dim
        if not any(d.dim_param for d in dims):
            continue
        proto = onnx.TensorProto()
        with open(os.path.join(set_dir, f"input_{k}.pb"), "rb") as f:
            proto.ParseFromString(f.read())
        if len(proto.dims) != len(dims):
            fail(f"input {k} has rank {len(dims)} in the model, {len(proto.dims)} in {set_dir}")
        for d, v in zip(dims, proto.dims):
            if d.dim_param and found.setdefault(d.dim_param, v) != v:
                fail(f"dimension '{d.dim_param}' is both {found[d.dim_param]} and {v} in {set_dir}")
    for name, v in found.items():
        print(f"-D{name}={v}")


def write(out, name, ins, outs, sets):
    up = name.upper()
    h = [f"/* fw_data.h - written by gen_data.py for model '{name}'. Do not edit. */",
         "#ifndef FW_DATA_H", "#define FW_DATA_H", "",
         f'#include "{name}.h"', "",
         f'#define FW_MODEL "{name}"',
         f"#define FW_ARENA_BYTES {up}_ARENA_BYTES",
         f"#define FW_RUN_V {name}_run_v",
         f"#define FW_NUM_INPUTS {len(ins)}",
         f"#define FW_NUM_OUTPUTS {len(outs)}",
         f"#define FW_NUM_SETS {len(sets)}", "",
         "typedef struct FwOutput {",
         "  const char *dtype;         /* ONNX element type: f32, i64, ... */",
         "  unsigned elem_bytes;",
         "  unsigned long numel;",
         "} FwOutput;", "",
         "/* Arrays get one spare slot so that none is empty. */",
         "extern const void *const fw_inputs[FW_NUM_SETS][FW_NUM_INPUTS + 1];",
         "extern void *const fw_outputs[FW_NUM_OUTPUTS + 1];",
         "extern const FwOutput fw_output_info[FW_NUM_OUTPUTS + 1];", "",
         "#endif", ""]
    c = [f"/* fw_data.c - written by gen_data.py for model '{name}'. Do not edit. */",
         "#include <math.h>", "#include <stdint.h>", "", '#include "fw_data.h"', ""]
    for s, values in enumerate(sets):
        for i, (t, vals) in enumerate(zip(ins, values)):
            c.append(f"static const {t.ctype} in_{s}_{i}[{max(t.numel, 1)}] = {{")
            lits = [literal(t.dtype, v) for v in vals] or ["0"]
            for k in range(0, len(lits), 8):
                c.append("  " + ", ".join(lits[k:k + 8]) + ",")
            c.append("};")
    c.append("")
    c.append("const void *const fw_inputs[FW_NUM_SETS][FW_NUM_INPUTS + 1] = {")
    for s in range(len(sets)):
        c.append("  {" + "".join(f"in_{s}_{i}, " for i in range(len(ins))) + "0},")
    c.append("};")
    c.append("")
    for k, t in enumerate(outs):
        c.append(f"static {t.ctype} out_{k}[{max(t.numel, 1)}];")
    c.append("void *const fw_outputs[FW_NUM_OUTPUTS + 1] = {"
             + "".join(f"out_{k}, " for k in range(len(outs))) + "0};")
    c.append("const FwOutput fw_output_info[FW_NUM_OUTPUTS + 1] = {")
    for t in outs:
        c.append(f'  {{"{t.dtype}", {DTYPES[t.dtype][1]}, {t.numel}}},')
    c.append("  {0, 0, 0},")
    c.append("};")
    c.append("")
    with open(os.path.join(out, "fw_data.h"), "w") as f:
        f.write("\n".join(h))
    with open(os.path.join(out, "fw_data.c"), "w") as f:
        f.write("\n".join(c))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--header")
    ap.add_argument("--name")
    ap.add_argument("--out")
    ap.add_argument("--raw")
    ap.add_argument("--count", type=int, default=4)
    ap.add_argument("--pb", nargs="+")
    ap.add_argument("--pins")
    a = ap.parse_args()
    if a.pins:
        if not a.pb:
            fail("--pins needs --pb SET_DIR")
        pins(a.pins, a.pb[0])
        return
    if not (a.header and a.name and a.out):
        fail("--header, --name and --out are required")
    ins, outs = parse_header(a.header, a.name)
    if bool(a.raw) == bool(a.pb):
        fail("give either --raw FILE or --pb SET_DIR...")
    if a.raw:
        if len(ins) != 1:
            fail(f"--raw feeds one input; the model has {len(ins)}")
        sets = raw_sets(a.raw, a.count, ins[0])
    else:
        sets = pb_sets(a.pb, ins)
    write(a.out, a.name, ins, outs, sets)


if __name__ == "__main__":
    main()
