"""Builds an ONNX graph of a BERT sentence encoder from its safetensors weights: no torch, no download.

The graph has the shape a PyTorch export of Hugging Face BERT has (per-projection MatMul + Add, Reshape /
Transpose heads, Div by sqrt(head_dim), an additive (1 - mask) * -10000 mask, erf GELU, Add +
LayerNormalization), because onnxruntime's transformer optimizer recognises exactly those patterns and
fuses them into its Attention / SkipLayerNormalization / BiasGelu / EmbedLayerNormalization kernels. The
output is the last hidden state; pooling and normalisation stay in numpy (a few microseconds).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from .base import EmbeddingError
from .safetensors_reader import SafetensorsError, read_safetensors

OPSET = 17  # LayerNormalization is a standard op from 17 on
# What the optimizer expects for the mask: (1 - mask) * -10000 added to the scores (the HF BERT constant).
_MASK_FILL = -10000.0


def _weights(model_dir: Path) -> tuple[dict[str, np.ndarray], str]:
    try:
        raw = read_safetensors(model_dir / "model.safetensors")
    except (OSError, SafetensorsError) as exc:
        raise EmbeddingError(f"cannot read {model_dir / 'model.safetensors'}: {exc}") from exc
    prefix = "bert." if any(k.startswith("bert.embeddings.") for k in raw) else ""
    return raw, prefix


def build_bert_graph(model_dir: Path, config: dict[str, Any]) -> Any:
    """An `onnx.ModelProto` computing BERT's last hidden state (batch, seq, hidden) from `input_ids`,
    `attention_mask` and `token_type_ids` (int64, (batch, seq)); raises EmbeddingError on missing weights."""
    from onnx import TensorProto, helper, numpy_helper

    raw, prefix = _weights(model_dir)
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    head_dim = hidden // heads
    n_layers = int(config["num_hidden_layers"])
    eps = float(config.get("layer_norm_eps", 1e-12))

    nodes: list[Any] = []
    inits: list[Any] = []
    counter = [0]

    def fresh(stem: str) -> str:
        counter[0] += 1
        return f"{stem}_{counter[0]}"

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(name: str) -> np.ndarray:
        key = prefix + name
        if key not in raw:
            raise EmbeddingError(f"{model_dir}: weight {key!r} missing from model.safetensors")
        return np.asarray(raw[key], dtype=np.float32)

    def node(op: str, inputs: list[str], stem: str, **attrs: Any) -> str:
        out = fresh(stem)
        nodes.append(helper.make_node(op, inputs, [out], name=out + "_node", **attrs))
        return out

    # Shared scalars and shapes.
    one = const("one_f", np.array(1.0, dtype=np.float32))
    half = const("half_f", np.array(0.5, dtype=np.float32))
    sqrt2 = const("sqrt2_f", np.array(math.sqrt(2.0), dtype=np.float32))
    scale = const("sqrt_head_dim", np.array(math.sqrt(head_dim), dtype=np.float32))
    mask_fill = const("mask_fill", np.array(_MASK_FILL, dtype=np.float32))
    heads_shape = const("heads_shape", np.array([0, 0, heads, head_dim], dtype=np.int64))
    merged_shape = const("merged_shape", np.array([0, 0, hidden], dtype=np.int64))
    axis0 = const("axis0", np.array([0], dtype=np.int64))
    axis1 = const("axis1", np.array([1], dtype=np.int64))
    axis2 = const("axis2", np.array([2], dtype=np.int64))
    index1 = const("index1", np.array(1, dtype=np.int64))
    zero_start = const("zero_start", np.array([0], dtype=np.int64))

    def linear(x: str, name: str) -> str:
        # torch stores Linear weights as (out, in); MatMul wants (in, out).
        w = const(name + ".weight", np.ascontiguousarray(weight(name + ".weight").T))
        b = const(name + ".bias", weight(name + ".bias"))
        return node("Add", [node("MatMul", [x, w], "matmul"), b], "bias")

    def layer_norm(x: str, name: str) -> str:
        g = const(name + ".weight", weight(name + ".weight"))
        b = const(name + ".bias", weight(name + ".bias"))
        return node("LayerNormalization", [x, g, b], "ln", axis=-1, epsilon=eps)

    # Embeddings: word + token type + position (positions sliced to the sequence length, as BERT exports).
    word = const("word_embeddings", weight("embeddings.word_embeddings.weight"))
    token_type = const("token_type_embeddings", weight("embeddings.token_type_embeddings.weight"))
    position = const("position_embeddings", weight("embeddings.position_embeddings.weight"))
    max_positions = int(config.get("max_position_embeddings", 512))
    position_ids = const("position_ids", np.arange(max_positions, dtype=np.int64)[None, :])
    seq_len = node("Gather", [node("Shape", ["input_ids"], "shape"), index1], "seq_len", axis=0)
    ends = node("Unsqueeze", [seq_len, axis0], "seq_end")
    positions = node("Slice", [position_ids, zero_start, ends, axis1, axis1], "positions")
    summed = node(
        "Add",
        [node("Gather", [word, "input_ids"], "word"), node("Gather", [token_type, "token_type_ids"], "tt")],
        "emb",
    )
    summed = node("Add", [summed, node("Gather", [position, positions], "pos")], "emb")
    x = layer_norm(summed, "embeddings.LayerNorm")

    # Additive mask (batch, 1, 1, seq).
    mask = node("Unsqueeze", [node("Unsqueeze", ["attention_mask", axis1], "mask"), axis2], "mask")
    mask = node("Cast", [mask], "mask", to=TensorProto.FLOAT)
    mask = node("Mul", [node("Sub", [one, mask], "mask"), mask_fill], "mask")

    def split_heads(t: str, perm: list[int]) -> str:
        return node("Transpose", [node("Reshape", [t, heads_shape], "heads")], "heads_t", perm=perm)

    for i in range(n_layers):
        p = f"encoder.layer.{i}."
        q = split_heads(linear(x, p + "attention.self.query"), [0, 2, 1, 3])
        k = split_heads(linear(x, p + "attention.self.key"), [0, 2, 3, 1])
        v = split_heads(linear(x, p + "attention.self.value"), [0, 2, 1, 3])
        scores = node("Div", [node("MatMul", [q, k], "qk"), scale], "scaled")
        probs = node("Softmax", [node("Add", [scores, mask], "masked")], "probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], "ctx")], "ctx_t", perm=[0, 2, 1, 3])
        context = node("Reshape", [context, merged_shape], "ctx_merged")
        attended = linear(context, p + "attention.output.dense")
        x = layer_norm(node("Add", [attended, x], "residual"), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        erf = node("Erf", [node("Div", [h, sqrt2], "gelu_div")], "gelu_erf")
        h = node("Mul", [node("Mul", [h, node("Add", [erf, one], "gelu_add")], "gelu_mul"), half], "gelu")
        out = linear(h, p + "output.dense")
        x = layer_norm(node("Add", [out, x], "residual"), p + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="output"))

    ids_type = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"]) for n in _INPUTS]
    out_type = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "seq", hidden])
    graph = helper.make_graph(nodes, "bert_encoder", ids_type, [out_type], initializer=inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="codebase-index"
    )
    model.ir_version = 8  # readable by every onnxruntime we accept
    return model


_INPUTS = ("input_ids", "attention_mask", "token_type_ids")
