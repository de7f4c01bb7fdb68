#!/usr/bin/env bash
# onnxc graph (docs/graph.md) on a small model with fusion, a view, a
# dynamic dim and names that need escaping: the SVG parses as XML and shows
# every kernel of the fusion report of the same compile with its ONNX nodes;
# edge labels carry the shapes ONNX's own shape inference gives, and tooltips
# the offsets, sizes and lifetimes of the memory report; the HTML embeds the
# SVG, its data and its script and loads nothing from outside; the DOT has a
# cluster per fused kernel and is accepted by Graphviz's dot when installed
# (a visible skip otherwise). Errors name the file and leave no output.
# Usage: test_graph.sh ONNXC PYTHON
set -uo pipefail
ONNXC=$1
PY=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails+1)); }

# x[batch,16] -> GELU as Div, Erf, Add, Mul, Mul (one kernel) -> MatMul + Add
# -> Reshape (a view) -> Relu -> y; and a second output z = x * 2.
"$PY" - "$T/m.onnx" "$T/bad.onnx" <<'PYEOF' || exit 1
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
c = lambda n, v: numpy_helper.from_array(np.array(v, np.float32), n)
w = np.linspace(-1, 1, 16 * 8, dtype=np.float32).reshape(16, 8)
nodes = [
    helper.make_node("Div", ["x", "sqrt2"], ["d"], name="gelu/div"),
    helper.make_node("Erf", ["d"], ["e"], name="gelu/erf"),
    helper.make_node("Add", ["e", "one"], ["p"], name="gelu/add"),
    helper.make_node("Mul", ["x", "p"], ["q"], name="gelu/mul"),
    helper.make_node("Mul", ["q", "half"], ["g"], name='gelu<&"end">'),
    helper.make_node("MatMul", ["g", "w"], ["mm"], name="mm"),
    helper.make_node("Add", ["mm", "b"], ["h"], name="bias"),
    helper.make_node("Reshape", ["h", "shape"], ["r"], name="flat"),
    helper.make_node("Relu", ["r"], ["y"], name="relu"),
    helper.make_node("Mul", ["x", "two"], ["z"], name="twice"),
]
inits = [numpy_helper.from_array(w, "w"), c("b", np.arange(8) * 0.1), c("sqrt2", 1.4142135), c("one", 1.0),
         c("half", 0.5), c("two", 2.0), numpy_helper.from_array(np.array([-1], np.int64), "shape")]
g = helper.make_graph(nodes, "graph_test", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                       helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], inits)
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1])
bad = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "bad",
                        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                        [numpy_helper.from_array(w, "w")])
save(helper.make_model(bad, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[2])
PYEOF

for ext in svg html dot; do
  "$ONNXC" graph "$T/m.onnx" -D batch=3 -o "$T/g.$ext" --fusion-report "$T/f_$ext.json" \
    --memory-report "$T/mem_$ext.json" 2>"$T/err" || { cat "$T/err"; fail "onnxc graph -o g.$ext"; }
done
"$ONNXC" graph "$T/m.onnx" -D batch=3 -O0 -o "$T/g0.svg" --fusion-report "$T/f0.json" 2>"$T/err" \
  || { cat "$T/err"; fail "onnxc graph -O0"; }

"$PY" - "$T" <<'PYEOF' && echo "ok   svg, html: kernels, shapes, placement" || fail "svg/html contents"
import json, re, sys, onnx
import xml.etree.ElementTree as ET
from onnx import shape_inference
T = sys.argv[1]
NS = "{http://www.w3.org/2000/svg}"

def boxes_and_edges(root):
    boxes, edges = {}, []
    for g in root.iter(NS + "g"):
        cls = g.get("class", "").split()
        title = g.find(NS + "title")
        if "box" in cls:
            boxes[g.get("id")] = (cls[1], title.text)
        elif "edge" in cls:
            edges.append((title.text, g.find(NS + "text").text))
    return boxes, edges

def check(root, fusion, mem, model):
    boxes, edges = boxes_and_edges(root)
    kernels = [t for k, t in boxes.values() if k == "kernel"]
    views = [t for k, t in boxes.values() if k == "view"]
    assert len(kernels) == fusion["kernel_count"], (len(kernels), fusion["kernel_count"])
    assert len(views) == fusion["view_count"], (len(views), fusion["view_count"])
    for k in fusion["kernels"]:
        titles = [t for t in kernels if ("'%s'" % k["name"]) in t]
        assert len(titles) == 1, (k["name"], titles)
        for n in k["nodes"]:  # one ONNX node a tooltip line
            assert n in titles[0].split("\n"), (n, titles[0])
    # shapes: ONNX's inference with batch = 3
    m = onnx.load(model)
    m.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 3
    inf = shape_inference.infer_shapes(m).graph
    shapes = {}
    for vi in list(inf.value_info) + list(inf.input) + list(inf.output):
        t = vi.type.tensor_type
        if t.HasField("shape"):
            shapes[vi.name] = "f32[%s]" % ",".join(str(d.dim_value) for d in t.shape.dim)
    tensors = {t["name"]: t for t in mem["tensors"]}
    checked_shape = checked_place = 0
    for title, label in edges:
        name = title.split(": ")[0]
        assert label in title, (label, title)
        if name in shapes:
            assert label == shapes[name], (name, label, shapes[name])
            checked_shape += 1
        if name in tensors:
            t = tensors[name]
            want = "arena @%d, buffer of %d B, steps %d..%d" % (t["offset"], t["size"], t["first"], t["last"])
            assert want in title, (want, title)
            checked_place += 1
    # (x's two readers, the GELU chain and z = x * 2, are one kernel of two
    # outputs since fuse-elementwise merges siblings: one edge from x)
    assert checked_shape >= 3 and checked_place >= 1, (checked_shape, checked_place)
    return boxes

svg = ET.parse(T + "/g.svg").getroot()
assert svg.tag == NS + "svg"
fusion = json.load(open(T + "/f_svg.json"))
boxes = check(svg, fusion, json.load(open(T + "/mem_svg.json")), T + "/m.onnx")
fused = [k for k in fusion["kernels"] if len(k["nodes"]) >= 5]
assert fused and fused[0]["op"] == "FusedElementwise", fusion
assert any(t.startswith("FusedElementwise: Div, Erf, Add, Mul, Mul") for _, t in boxes.values()), boxes
assert any('gelu<&"end">' in t for _, t in boxes.values())
assert sum(k == "input" for k, _ in boxes.values()) == 1 and sum(k == "output" for k, _ in boxes.values()) == 2

# -O0: no fusion, more kernels, and the picture follows
f0 = json.load(open(T + "/f0.json"))
b0, _ = boxes_and_edges(ET.parse(T + "/g0.svg").getroot())
assert f0["kernel_count"] > fusion["kernel_count"], (f0["kernel_count"], fusion["kernel_count"])
assert sum(k == "kernel" for k, _ in b0.values()) == f0["kernel_count"]

html = open(T + "/g.html").read()
assert "<script>" in html and "addEventListener('click'" in html and 'id="q"' in html
assert not re.search(r'(src|href)="(https?:)?//', html), "external resource"
s = html[html.index("<svg"):html.index("</svg>") + 6]
check(ET.fromstring(s), json.load(open(T + "/f_html.json")), json.load(open(T + "/mem_html.json")), T + "/m.onnx")
data = json.loads(html[html.index('id="gdata">') + 11:html.index("</script>")])
onnx_nodes = {n for b in data["boxes"] for n in b["onnx"]}
for k in json.load(open(T + "/f_html.json"))["kernels"]:
    assert set(k["nodes"]) <= onnx_nodes, (k["nodes"], onnx_nodes)
assert all(b["kind"] != "kernel" or b["outputs"] for b in data["boxes"])
PYEOF

"$PY" - "$T/g.dot" "$T/f_dot.json" <<'PYEOF' && echo "ok   dot: clusters" || fail "dot contents"
import json, sys
dot = open(sys.argv[1]).read()
fusion = json.load(open(sys.argv[2]))
assert dot.startswith("digraph onnxc {") and dot.rstrip().endswith("}")
clusters = dot.count("subgraph cluster_")
assert clusters == sum(len(k["nodes"]) > 1 for k in fusion["kernels"]) and clusters >= 1, clusters
assert 'gelu<&\\"end\\">' in dot
PYEOF
if command -v dot >/dev/null; then
  dot -Tsvg "$T/g.dot" -o "$T/dot.svg" 2>"$T/err" && [[ ! -s "$T/err" ]] && echo "ok   dot accepts the DOT" \
    || { cat "$T/err"; fail "dot rejects the DOT"; }
else
  echo "SKIP dot -Tsvg: Graphviz is not installed (the DOT was checked structurally only)"
fi

# Errors: the file is named, the status is nonzero, nothing is left behind.
expect_fail() {
  local want=$1 text=$2; shift 2
  "$ONNXC" graph "$@" 2>"$T/err"
  local rc=$?
  [[ $rc -eq $want ]] || fail "onnxc graph $*: exit $rc, expected $want"
  grep -qF -- "$text" "$T/err" || { cat "$T/err"; fail "onnxc graph $*: stderr lacks '$text'"; }
  grep -q -e '\.tmp' -e '^out\.' -e '^rep\.' <<<"$(ls "$T")" && fail "onnxc graph $*: left a file behind"
  echo "ok   exit $want: $(head -n1 "$T/err")"
}
expect_fail 1 "$T/missing.onnx" "$T/missing.onnx" -o "$T/out.svg"
expect_fail 1 "bad.onnx: node 'mm' (MatMul)" "$T/bad.onnx" -o "$T/out.html" --fusion-report "$T/rep.json"
expect_fail 2 "use .svg, .html or .dot" "$T/m.onnx" -o "$T/out.png"
expect_fail 1 "cannot write $T/nodir/out.svg" "$T/m.onnx" -D batch=1 -o "$T/nodir/out.svg"

echo "$fails failure(s)"
exit $(( fails > 0 ))
