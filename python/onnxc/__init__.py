"""onnxc: run libraries compiled by onnxc (ahead-of-time ONNX to C) from Python.

    import onnxc
    m = onnxc.load("libnet.so")          # or onnxc.compile("net.onnx")
    y = m(x)                             # numpy in, numpy out
    outs = m.run({"image": x})           # {output name: array}

See python/README.md and docs/python.md.
"""
from .compiler import CompileError, compile, default_name, find_onnxc
from .model import LoadError, Model, OnnxcError, RunError, TensorInfo, load

__version__ = "0.1.0"
__all__ = ["load", "compile", "Model", "TensorInfo", "OnnxcError", "LoadError", "RunError", "CompileError",
           "find_onnxc", "default_name"]
