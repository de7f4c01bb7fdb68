"""The C side of a compiled library, as ctypes sees it (docs/abi.md).

Mirrors onnxc_tensor_info / onnxc_model_info of runtime/onnxc_rt.h, the
status codes of NAME_run, and the ONNX element types numpy can hold.
"""
import ctypes

import numpy as np

INFO_VERSION = 2  # the ONNXC_INFO_VERSION this module reads (1 has no ranges)
KIND_TENSOR = 0
KIND_STRING = 1


class TensorInfoC(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("dims", ctypes.POINTER(ctypes.c_int64)),
        ("numel", ctypes.c_int64),
        ("bytes", ctypes.c_int64),
        ("elem_type", ctypes.c_int32),
        ("elem_bits", ctypes.c_int32),
        ("kind", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("dynamic_dims", ctypes.c_uint32),
    ]


class DimInfoC(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("lo", ctypes.c_int64),
        ("hi", ctypes.c_int64),
        ("step", ctypes.c_int64),
    ]


DIMS_P = ctypes.POINTER(ctypes.c_int64)
OUTPUT_SHAPES = ctypes.CFUNCTYPE(ctypes.c_int, DIMS_P, DIMS_P)
RUN_DIMS_V = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, DIMS_P, ctypes.POINTER(ctypes.c_void_p),
                              ctypes.POINTER(ctypes.c_void_p))
ARENA_BYTES_AT = ctypes.CFUNCTYPE(ctypes.c_int64, DIMS_P)


class ModelInfoC(ctypes.Structure):
    _fields_ = [
        ("info_version", ctypes.c_int32),
        ("n_inputs", ctypes.c_int32),
        ("n_outputs", ctypes.c_int32),
        ("threads", ctypes.c_int32),
        ("name", ctypes.c_char_p),
        ("onnxc_version", ctypes.c_char_p),
        ("arena_bytes", ctypes.c_int64),
        ("arena_align", ctypes.c_int64),
        ("inputs", ctypes.POINTER(TensorInfoC)),
        ("outputs", ctypes.POINTER(TensorInfoC)),
        ("n_dynamic_outputs", ctypes.c_int32),
        # version 2: -D ranges (read only when info_version >= 2)
        ("n_dims", ctypes.c_int32),
        ("dims", ctypes.POINTER(DimInfoC)),
        ("input_dims", ctypes.POINTER(ctypes.c_int32)),
        ("output_shapes", OUTPUT_SHAPES),
        ("run_dims_v", RUN_DIMS_V),
        ("arena_bytes_at", ARENA_BYTES_AT),
    ]


# ONNX TensorProto.DataType -> (ONNX spelling, numpy dtype of the C buffer or
# None when the binding cannot hold it). float16 is numpy's float16 (the same
# bits as the C side's uint16_t); bfloat16 and the float8 types travel as
# their bit patterns (uint16 / uint8).
ELEM_TYPES = {
    1: ("float", np.float32),
    2: ("uint8", np.uint8),
    3: ("int8", np.int8),
    4: ("uint16", np.uint16),
    5: ("int16", np.int16),
    6: ("int32", np.int32),
    7: ("int64", np.int64),
    8: ("string", None),
    9: ("bool", np.bool_),
    10: ("float16", np.float16),
    11: ("double", np.float64),
    12: ("uint32", np.uint32),
    13: ("uint64", np.uint64),
    14: ("complex64", None),
    15: ("complex128", None),
    16: ("bfloat16", np.uint16),
    17: ("float8e4m3fn", np.uint8),
    18: ("float8e4m3fnuz", np.uint8),
    19: ("float8e5m2", np.uint8),
    20: ("float8e5m2fnuz", np.uint8),
    21: ("uint4", None),
    22: ("int4", None),
    23: ("float4e2m1", None),
    24: ("float8e8m0", np.uint8),
    25: ("uint2", None),
    26: ("int2", None),
}

# Status codes of NAME_run (runtime/onnxc_rt.h, docs/abi.md).
STATUS = {
    1: ("ONNXC_ERR_NULL_ARG", "a required pointer (arena, input or output) was NULL"),
    2: ("ONNXC_ERR_BAD_INDEX", "a data-dependent index (e.g. Gather's indices) is out of range"),
    3: ("ONNXC_ERR_UNSUPPORTED", "a run-time input selects behaviour the compiled code cannot provide "
        "(e.g. training-mode Dropout, an ImageDecoder format variant)"),
    4: ("ONNXC_ERR_CUDA", "a CUDA driver call failed"),
    5: ("ONNXC_ERR_NO_CUDA_IMAGE", "no embedded cubin or PTX loads on this device"),
    6: ("ONNXC_ERR_NO_MEMORY", "the host context could not be allocated"),
    7: ("ONNXC_ERR_BAD_IMAGE", "ImageDecoder's bytes are malformed or hold an image of another size "
        "than the model declares"),
    8: ("ONNXC_ERR_CAPACITY", "the strings an op makes need more than the compiled character "
        "capacity (--string-bytes)"),
    9: ("ONNXC_ERR_BRANCH", "the inputs select an If branch that could not be compiled for the "
        "model's static shapes (the compiler warned about it)"),
    10: ("ONNXC_ERR_GUARD", "guard mode: a node wrote into a red zone (NAME_guard_report names it)"),
    11: ("ONNXC_ERR_NONFINITE", "--check-numerics: a kernel's output held NaN or an infinity"),
    12: ("ONNXC_ERR_DIM", "a dim kept symbolic (-D NAME=LO..HI) is outside its range or off its step"),
}


def elem_type_name(code):
    return ELEM_TYPES.get(code, ("type %d" % code, None))[0]
