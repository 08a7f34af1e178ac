"""Per-head statistics from any PyTorch model with forward hooks, checked against `attngeo
extract`. A small LLaMA is built here (random weights, no download), its final query row and
value states are collected with forward hooks and fed to attngeo.HeadStatistics; the same
weights are saved as a Hugging Face folder (config.json + model.safetensors) for `attngeo
extract`, and the two extract folders are compared file by file: pr.csv (exact counts) and
every text field to the byte, every float to float32 rounding of the two forwards (this model
takes each softmax over a whole row of T keys, attngeo's forward over the keys a block of
query rows can see, so α differs in its last bits).

    PYTHONPATH=build/python python3 examples/python/hooks.py --attngeo build/app/attngeo
"""
import argparse
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

import attngeo

try:
    import torch
    from torch import nn
except ImportError:  # exit code 77: CTest reports the example as skipped
    print("hooks.py needs PyTorch (Debian: python3-torch)", file=sys.stderr)
    sys.exit(77)

SIZES = dict(vocab=256, hidden=64, intermediate=128, layers=2, heads=4, kv_heads=2, head_dim=16,
             theta=10000.0, eps=1e-5)


class RmsNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * w, in float32."""

    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def half_turn(t):
    """(a, b) -> (-b, a) on the two halves of the last axis: the rotation of rotary embeddings
    in the Hugging Face layout."""
    first, second = t.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class Attention(nn.Module):
    """Causal grouped-query attention with rotary positions. The attention weights leave
    through `self.softmax` and the value states through `self.v_proj`: both are modules, so
    forward hooks can read them."""

    def __init__(self, s):
        super().__init__()
        self.s = s
        self.q_proj = nn.Linear(s["hidden"], s["heads"] * s["head_dim"], bias=False)
        self.k_proj = nn.Linear(s["hidden"], s["kv_heads"] * s["head_dim"], bias=False)
        self.v_proj = nn.Linear(s["hidden"], s["kv_heads"] * s["head_dim"], bias=False)
        self.o_proj = nn.Linear(s["heads"] * s["head_dim"], s["hidden"], bias=False)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, h, cos, sin):
        B, T, _ = h.shape
        H, G, d = self.s["heads"], self.s["kv_heads"], self.s["head_dim"]
        q = self.q_proj(h).view(B, T, H, d).transpose(1, 2)
        k = self.k_proj(h).view(B, T, G, d).transpose(1, 2)
        v = self.v_proj(h).view(B, T, G, d).transpose(1, 2)
        q, k = q * cos + half_turn(q) * sin, k * cos + half_turn(k) * sin
        k, v = k.repeat_interleave(H // G, 1), v.repeat_interleave(H // G, 1)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(d)
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        probs = self.softmax(scores.masked_fill(future, -math.inf))  # [B, H, T, T]
        out = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, H * d)
        return self.o_proj(out)


class Block(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.input_layernorm = RmsNorm(s["hidden"], s["eps"])
        self.self_attn = Attention(s)
        self.post_attention_layernorm = RmsNorm(s["hidden"], s["eps"])
        self.gate_proj = nn.Linear(s["hidden"], s["intermediate"], bias=False)
        self.up_proj = nn.Linear(s["hidden"], s["intermediate"], bias=False)
        self.down_proj = nn.Linear(s["intermediate"], s["hidden"], bias=False)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        h = self.post_attention_layernorm(x)
        gated = nn.functional.silu(self.gate_proj(h)) * self.up_proj(h)  # SwiGLU
        return x + self.down_proj(gated)


class Llama(nn.Module):
    def __init__(self, s):
        super().__init__()
        self.s = s
        self.embed_tokens = nn.Embedding(s["vocab"], s["hidden"])
        self.layers = nn.ModuleList(Block(s) for _ in range(s["layers"]))
        self.norm = RmsNorm(s["hidden"], s["eps"])
        self.lm_head = nn.Linear(s["hidden"], s["vocab"], bias=False)

    def forward(self, ids):
        T, d = ids.shape[1], self.s["head_dim"]
        inverse_frequency = 1.0 / self.s["theta"] ** (torch.arange(0, d, 2).float() / d)
        angles = torch.outer(torch.arange(T, dtype=torch.float32), inverse_frequency)
        angles = torch.cat((angles, angles), dim=-1)  # [T, d]
        x = self.embed_tokens(ids)
        for block in self.layers:
            x = block(x, angles.cos(), angles.sin())
        return self.lm_head(self.norm(x))

    def hf_tensors(self):
        """The weights under Hugging Face LLaMA names."""
        names = {"embed_tokens.weight": "model.embed_tokens.weight",
                 "norm.weight": "model.norm.weight", "lm_head.weight": "lm_head.weight"}
        tensors = {}
        for name, tensor in self.state_dict().items():
            if name.startswith("layers."):
                _, index, rest = name.split(".", 2)
                rest = rest if rest.split(".")[0] in ("self_attn", "input_layernorm",
                                                      "post_attention_layernorm") \
                    else "mlp." + rest
                tensors[f"model.layers.{index}.{rest}"] = tensor
            else:
                tensors[names[name]] = tensor
        return tensors

    def hf_config(self):
        s = self.s
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "vocab_size": s["vocab"], "hidden_size": s["hidden"],
                "intermediate_size": s["intermediate"], "num_hidden_layers": s["layers"],
                "num_attention_heads": s["heads"], "num_key_value_heads": s["kv_heads"],
                "rms_norm_eps": s["eps"], "rope_theta": s["theta"], "hidden_act": "silu",
                "max_position_embeddings": 512, "bos_token_id": 1, "eos_token_id": 2,
                "tie_word_embeddings": False, "torch_dtype": "float32"}


def write_safetensors(path, tensors):
    """The safetensors layout: an 8-byte little-endian header size, a JSON header of dtype,
    shape and byte range per tensor, then the raw little-endian data."""
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        data = tensor.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(tensor.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def collect_with_hooks(model, documents, context):
    """Feeds attngeo.HeadStatistics from forward hooks: the last query row of every head
    (softmax output) and the value states (v_proj output), one layer after another."""
    statistics = attngeo.HeadStatistics(context=context, layers=model.s["layers"])
    G, d = model.s["kv_heads"], model.s["head_dim"]
    captured = {}

    def keep(layer, what):
        def hook(module, inputs, output):
            captured[(layer, what)] = output.detach()
        return hook

    for index, block in enumerate(model.layers):
        block.self_attn.softmax.register_forward_hook(keep(index, "alpha"))
        block.self_attn.v_proj.register_forward_hook(keep(index, "values"))
    with torch.no_grad():
        for ids in documents:
            model(torch.tensor([ids]))
            for layer in range(model.s["layers"]):
                alpha = captured[(layer, "alpha")][0, :, -1, :]  # [H, n]
                values = captured[(layer, "values")][0].view(context, G, d).transpose(0, 1)
                statistics.add(alpha, values)  # torch CPU tensors go in as arrays
    return statistics



# The attention-sink files and per_doc.safetensors tensors (docs/design.md §15): extract measures
# them from every query row, the rotated queries and keys and the layer outputs, which the hooks
# here do not collect; HeadStatistics writes the tensors as NaN and the files without values.
SINK_FILES = {"sinks.csv", "sink_layers.csv", "secondary_sinks.csv"}
SINK_TENSORS = {"sink_attention", "key_norm_ratio", "cos_query_sink", "cos_query_rest", "massive",
                "secondary_sinks"}


def tensors_without_sinks(path):
    """{name: (dtype, shape, bytes)} of a safetensors file but the sink tensors."""
    with open(path, "rb") as handle:
        data = handle.read()
    header_bytes = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + header_bytes])
    body = data[8 + header_bytes:]
    return {name: (entry["dtype"], entry["shape"],
                   body[entry["data_offsets"][0]:entry["data_offsets"][1]])
            for name, entry in header.items() if name not in SINK_TENSORS | {"__metadata__"}}


# Files whose every byte must agree: pr.csv holds exact counts and their P and R. sums.safetensors
# is the exact fixed-point state of the running sums, whose values are the CSV columns compared
# here; it is left out (its words carry the forwards' last-bit differences).
EXACT_FILES = {"pr.csv"}
STATE_FILES = {"sums.safetensors"}
# Floats agree when |a - b| <= RELATIVE * (the largest |value| of that column or tensor) + ABSOLUTE:
# the two forwards differ in float32's last bits, which the statistics carry (largest seen about
# 1e-5 of the scale).
RELATIVE, ABSOLUTE = 1e-4, 1e-12
NUMPY_DTYPES = {"F32": "<f4", "F64": "<f8", "I64": "<i8", "I32": "<i4", "U8": "u1"}


def scaled_gap(a, b):
    """(whether a and b agree, the largest difference over the larger array's largest |value|)
    of two float arrays; NaN matches NaN only."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or not np.array_equal(np.isnan(a), np.isnan(b)):
        return False, math.inf
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if a.size == 0:
        return True, 0.0
    scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    difference = float(np.max(np.abs(a - b)))
    return difference <= RELATIVE * scale + ABSOLUTE, difference / scale if scale > 0 else 0.0


def same_values(a, b):
    """(whether they agree, the largest scaled difference) of two arrays: floats within float32
    rounding (scaled_gap), anything else equal."""
    if np.asarray(a).dtype.kind == "f":
        return scaled_gap(a, b)
    return bool(np.array_equal(a, b)), 0.0


def same_tensors(path_a, path_b):
    """Two safetensors files (sink tensors left out): the same names, dtypes and shapes, then
    their values as same_arrays compares them."""
    a, b = tensors_without_sinks(path_a), tensors_without_sinks(path_b)

    def layout(tensors):
        return {name: (dtype, shape) for name, (dtype, shape, _) in tensors.items()}

    def values(tensors):
        return {name: np.frombuffer(data, NUMPY_DTYPES[dtype])
                for name, (dtype, _, data) in tensors.items()}

    if layout(a) != layout(b):
        return False, math.inf
    return same_arrays(values(a), values(b))


def same_arrays(arrays_a, arrays_b):
    """Two mappings of name to array (a table's columns, a file's tensors): the same names, each
    pair as same_values compares it, and the largest scaled difference."""
    if arrays_a.keys() != arrays_b.keys():
        return False, math.inf
    same, largest = True, 0.0
    for name, values in arrays_a.items():
        agree, gap = same_values(values, arrays_b[name])
        same, largest = same and agree, max(largest, gap)
    return same, largest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attngeo", default="attngeo", help="the attngeo executable")
    parser.add_argument("--out", default=None,
                        help="folder for the model and both runs (default: a temporary one, "
                             "removed when they agree)")
    parser.add_argument("--documents", type=int, default=4)
    parser.add_argument("--context", type=int, default=48)
    arguments = parser.parse_args()
    torch.manual_seed(0)
    model = Llama(SIZES).eval()
    with torch.no_grad():
        for parameter in model.parameters():  # larger weights than the default init: sharper heads
            if parameter.dim() == 2:
                parameter.normal_(0, 0.3)
    work = arguments.out or tempfile.mkdtemp(prefix="attngeo-hooks-")
    model_dir = os.path.join(work, "model")
    os.makedirs(model_dir, exist_ok=True)
    write_safetensors(os.path.join(model_dir, "model.safetensors"), model.hf_tensors())
    with open(os.path.join(model_dir, "config.json"), "w") as handle:
        json.dump(model.hf_config(), handle, indent=2)

    generator = np.random.default_rng(1)
    documents = [[1] + generator.integers(3, SIZES["vocab"], arguments.context - 1).tolist()
                 for _ in range(arguments.documents)]  # BOS first: one window per document
    with open(os.path.join(work, "ids.txt"), "w") as handle:
        handle.writelines(" ".join(map(str, ids)) + "\n" for ids in documents)

    statistics = collect_with_hooks(model, documents, arguments.context)
    statistics.write(os.path.join(work, "python"), model={"family": "llama",
                                                          "vocab": SIZES["vocab"]},
                     windows=documents, command=" ".join(sys.argv))
    subprocess.run([arguments.attngeo, "extract", "--model", model_dir, "--tokens",
                    os.path.join(work, "ids.txt"), "--context", str(arguments.context),
                    "--snapshot", "off",  # Figures 1/10's snapshot: not a HeadStatistics output
                    "--quiet", "--out", os.path.join(work, "extract")], check=True)

    differing, largest = [], 0.0
    tables = {side: attngeo.read_run(os.path.join(work, side), frames=False)["tables"]
              for side in ("python", "extract")}
    for name in sorted(os.listdir(os.path.join(work, "extract"))):
        if name == "manifest.json":
            continue  # the command line, model path and engine differ by design
        if name in SINK_FILES:  # measured from the forward's queries, keys and hidden states
            print(f"{name:22s} (extract only: the sink measures need the whole forward)")
            continue
        if name in STATE_FILES:
            print(f"{name:22s} (the exact state of the sums compared through the tables)")
            continue
        ours, theirs = os.path.join(work, "python", name), os.path.join(work, "extract", name)
        if name in EXACT_FILES:
            same, gap = open(ours, "rb").read() == open(theirs, "rb").read(), 0.0
        elif name.endswith(".safetensors"):
            same, gap = same_tensors(ours, theirs)
        else:
            stem = os.path.splitext(name)[0]
            same, gap = same_arrays(tables["python"][stem], tables["extract"][stem])
        largest = max(largest, gap)
        verdict = "same" if same else "DIFFERS"
        print(f"{name:22s} {verdict} (largest difference {gap:.2g} of the scale)")
        differing += [] if same else [name]
    if differing:
        sys.exit(f"hooks.py: {len(differing)} file(s) differ from attngeo extract beyond float32 "
                 f"rounding ({work})")
    print("HeadStatistics from hooks equals attngeo extract on the same weights (counts exactly, "
          f"floats within {largest:.2g} of their scale)")
    if arguments.out is None:
        shutil.rmtree(work)


if __name__ == "__main__":
    main()
