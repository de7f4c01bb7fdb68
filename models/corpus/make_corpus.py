#!/usr/bin/env python3
"""Build the model corpus: real network topologies with random weights.

Usage: make_corpus.py OUTDIR [--only NAME|GROUP ...] [--force] [--list]

Every model becomes a case directory OUTDIR/NAME (layout in corpus_lib.py)
that `onnxc check OUTDIR/NAME` verifies and bench/run.py times. Weights and
inputs come from generators seeded by the model name, so reruns write the
same files; a case whose generator scripts are unchanged is skipped (--force
rebuilds it). Nothing is downloaded: the nets are written with onnx.helper.

Groups: bench (the models the benchmark times by default), cnn, bert, micro
(one-node kernels), int8 (QDQ models of quantize.py), light (the ONNX suite's light models), extra (large
variants built only on request), all. Without --only, everything but extra
is built. BERT-base is ~440 MB of weights: keep OUTDIR out of the repository
(build/corpus is ignored by git).
"""

import argparse
import os
import sys
import time
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import bert  # noqa: E402
import ocr  # noqa: E402
import cnn  # noqa: E402
import corpus_lib  # noqa: E402
import micro  # noqa: E402
import quantize  # noqa: E402


@dataclass
class Entry:
    build: object
    groups: set
    rtol: float
    atol: float
    about: str
    extra: dict = field(default_factory=dict)


# Tolerances: rtol 1e-3 as `onnxc check` uses; atol is scaled to the outputs
# (probabilities, or unit-variance activations after dozens of float32 dot
# products of up to 3072 terms), and write_case records how much of it ONNX
# Runtime's own optimized graph uses (ort_optimized_excess, must stay < 1).
MODELS = {
    "resnet50": Entry(cnn.resnet50, {"bench", "cnn"}, 1e-3, 1e-6,
                      "ResNet-50 v1.5, 224x224, explicit BatchNormalization"),
    "mobilenetv2": Entry(cnn.mobilenetv2, {"bench", "cnn"}, 1e-3, 1e-6,
                         "MobileNetV2 1.0, 224x224, folded BN, Clip as Relu6"),
    "squeezenet1_1": Entry(cnn.squeezenet1_1, {"bench", "cnn"}, 1e-3, 1e-6,
                           "SqueezeNet 1.1, 224x224, fire modules, ceil_mode pools"),
    "inception": Entry(cnn.inception, {"bench", "cnn"}, 1e-3, 1e-6,
                       "GoogLeNet-BN, 224x224, AveragePool with pads, 1x3/3x1"),
    "bert_tiny": Entry(bert.bert_tiny, {"bench", "bert"}, 1e-3, 1e-4,
                       "BERT 2 layers, hidden 128, 2 heads, seq 128, LayerNormalization op"),
    "bert_tiny_dynamic": Entry(bert.bert_tiny_dynamic, {"dynamic", "extra"}, 1e-3, 1e-4,
                               "bert_tiny with a dynamic sequence axis (input [1, seq])"),
    "ocr_rec_dynamic": Entry(ocr.ocr_rec_dynamic, {"dynamic", "extra"}, 1e-3, 1e-5,
                             "OCR-style recognizer, input [1, 3, 48, W], stride-2 and (2, 1) windows"),
    "bert_tiny_decomposed": Entry(bert.bert_tiny_decomposed, {"bert"}, 1e-3, 1e-4,
                                  "bert_tiny at opset 12, LayerNorm decomposed"),
    "bert_base": Entry(bert.bert_base, {"bench", "bert"}, 1e-3, 1e-4,
                       "BERT 12 layers, hidden 768, 12 heads, seq 128, LayerNormalization op"),
    "bert_base_decomposed": Entry(bert.bert_base_decomposed, {"bert", "extra"}, 1e-3, 1e-4,
                                  "bert_base at opset 12, LayerNorm decomposed"),
    "sgemm_1024": Entry(micro.sgemm_1024, {"micro"}, 1e-3, 1e-4,
                        "MatMul [1024,1024] x weight [1024,1024]"),
    "matmul_128_768_3072": Entry(micro.matmul_128_768_3072, {"micro"}, 1e-3, 1e-4,
                                 "BERT-base FFN: MatMul [1,128,768] x [768,3072] + Add"),
    "conv3x3_64_56": Entry(micro.conv3x3_64_56, {"micro"}, 1e-3, 1e-4,
                           "Conv 3x3 64->64 at 56x56, pads 1 (ResNet layer1)"),
    "conv1x1_256_64_56": Entry(micro.conv1x1_256_64_56, {"micro"}, 1e-3, 1e-4,
                               "Conv 1x1 256->64 at 56x56 (ResNet bottleneck)"),
    "dwconv3x3_144_56": Entry(micro.dwconv3x3_144_56, {"micro"}, 1e-3, 1e-4,
                              "depthwise Conv 3x3, 144 channels at 56x56 (MobileNetV2)"),
}
# int8 QDQ versions (quantize.py); reference = ONNX Runtime with its graph
# optimizations, i.e. its integer kernels. onnxc matches them exactly up to the
# final Softmax, which ORT runs as QLinearSoftmax (an exp table) and onnxc in
# float between DQ and Q (docs/int8.md), so the tolerance is one quantum
# (<= 1/255) of the quantized Softmax output.
for _name, _about in (("resnet50", "ResNet-50"), ("mobilenetv2", "MobileNetV2"),
                      ("small_cnn", "small CNN 32x32 (conv, dwconv, pool, add, concat, gemm)")):
    MODELS[f"{_name}_int8"] = Entry(getattr(quantize, f"{_name}_int8"), {"int8", "extra"}, 0.0, 4e-3,
                                    f"{_about}, QDQ int8 (u8 activations, s8 per-channel weights)",
                                    {"reference": "optimized", "float_model": _name})
# quantize_dynamic versions of the BERTs (quantize.dynamic); reference: ORT
# with its fusions (DynamicQuantizeMatMul). The integer sums are exact on both
# sides, but each layer quantizes its input at run time, and a float that
# differs by an ulp upstream (LayerNorm, GELU, Softmax) can cross a rounding
# boundary there: a quantum's difference, which the later layers carry on.
# Two layers stay within the float32 tolerances; over twelve, ORT's own two
# optimization levels differ by up to 0.07 (output magnitude 4.7) and onnxc
# from either by up to 0.1, hence BERT-base's atol 0.15 (docs/int8.md).
for _name, _about, _atol in (("bert_tiny", "BERT-tiny", 1e-4), ("bert_base", "BERT-base", 0.15)):
    MODELS[f"{_name}_int8"] = Entry(getattr(quantize, f"{_name}_int8"), {"int8_dynamic", "extra"}, 1e-3, _atol,
                                    f"{_about}, quantize_dynamic (MatMulInteger, s8 weights)",
                                    {"reference": "optimized", "float_model": _name})
for _name in micro.LIGHT:
    MODELS[f"light_{_name}"] = Entry(micro.light(_name), {"light"}, 1e-3, 1e-5,
                                     f"onnx package light model {_name} (unchanged)")

GROUPS = sorted({g for e in MODELS.values() for g in e.groups} | {"all"})


def select(names):
    """Names and group names -> model names in table order; None = all but extra."""
    if not names:
        return [n for n, e in MODELS.items() if "extra" not in e.groups]
    picked = set()
    for n in names:
        if n == "all":
            picked |= set(MODELS)
        elif n in GROUPS:
            picked |= {m for m, e in MODELS.items() if n in e.groups}
        elif n in MODELS:
            picked.add(n)
        else:
            raise KeyError(n)
    return [n for n in MODELS if n in picked]


def generator_hash(name):
    """What the case depends on: corpus_lib, this table, the family's module."""
    module = sys.modules[MODELS[name].build.__module__].__file__
    if module == quantize.__file__:
        return corpus_lib.source_hash(__file__, module, cnn.__file__)
    return corpus_lib.source_hash(__file__, module)


def build_case(outdir, name, force=False, log=print):
    """Writes OUTDIR/NAME unless it is current; returns the case directory."""
    case_dir = os.path.join(outdir, name)
    gen_hash = generator_hash(name)
    if not force and corpus_lib.is_current(case_dir, gen_hash):
        log(f"up to date  {case_dir}")
        return case_dir
    e = MODELS[name]
    t0 = time.perf_counter()
    seed = corpus_lib.seed_of(name)
    b = corpus_lib.Builder(name, seed)
    model, feeds = e.build(b)
    corpus_lib.calibrate(b, model, feeds)
    meta = {"name": name, "about": e.about, "groups": sorted(e.groups),
            "rtol": e.rtol, "atol": e.atol, "generator": gen_hash, "seed": seed,
            "opset": max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")),
            "nodes": len(model.graph.node),
            "params": sum(int(np.prod(t.dims)) for t in model.graph.initializer),
            "flops": corpus_lib.count_flops(model, feeds), **e.extra}
    meta = corpus_lib.write_case(case_dir, model, feeds, meta,
                                 optimized_reference=e.extra.get("reference") == "optimized")
    size = os.path.getsize(os.path.join(case_dir, "model.onnx"))
    flops = f"{meta['flops'] / 1e9:.2f} GFLOP" if meta["flops"] else "? GFLOP"
    log(f"wrote       {case_dir}: {meta['nodes']} nodes, {size / 1e6:.1f} MB, {flops}, "
        f"ORT optimized vs reference {meta['ort_optimized_excess']:.3f} of tolerance "
        f"({time.perf_counter() - t0:.1f} s)")
    if meta["ort_optimized_excess"] > 1 and e.extra.get("reference") != "optimized":
        log(f"warning: {name}: ONNX Runtime's optimized graph exceeds the case tolerance")
    return case_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", nargs="?", help="directory for the case folders")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="models or groups to build")
    ap.add_argument("--force", action="store_true", help="rebuild up-to-date cases too")
    ap.add_argument("--list", action="store_true", help="list models and groups, then exit")
    args = ap.parse_args()
    if args.list:
        for n, e in MODELS.items():
            print(f"{n:24} {','.join(sorted(e.groups)):12} {e.about}")
        print("groups:", " ".join(GROUPS))
        return 0
    if not args.outdir:
        ap.error("OUTDIR is required")
    try:
        names = select(args.only)
    except KeyError as k:
        ap.error(f"unknown model or group {k}; see --list")
    os.makedirs(args.outdir, exist_ok=True)
    for name in names:
        build_case(args.outdir, name, args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
