#!/usr/bin/env python3
"""The peer of bench/run.py's end-to-end row: what `attngeo extract --N all` computes for every
head of a Hugging Face folder, done the usual Python way — transformers' eager forward with
output_attentions, the value states taken from each layer's v_proj, and every head's
P(r_max, N), R(r_min, N) for all N by the Gram-matrix trick in NumPy (float64). One thread.
    python3 bench/peer_extract.py MODEL_FOLDER CONTEXT   (MODEL_FOLDER/windows.txt: the windows)
Prints one JSON object: documents, seconds (forward + statistics), forward_seconds.
"""
import json
import os
import sys
import time

import numpy as np

from numpy_all_n import all_n_precision_recall
import torch
from transformers import AutoConfig, AutoModelForCausalLM


def all_n_metrics(alpha, values):
    """P(r_max, N) and R(r_min, N) for N = 1..n of one head (alpha [n], values [n, d])."""
    order = np.argsort(-alpha, kind="stable")
    y = (alpha[:, None] * values)[order]
    return all_n_precision_recall(y)


def main():
    folder, context = sys.argv[1], int(sys.argv[2])
    torch.set_num_threads(1)
    config = AutoConfig.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    values = {}
    for i, layer in enumerate(model.model.layers):
        layer.self_attn.v_proj.register_forward_hook(
            lambda module, inputs, output, i=i: values.__setitem__(i, output))
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    d = config.hidden_size // heads
    windows = [[int(t) for t in line.split()][:context]
               for line in open(os.path.join(folder, "windows.txt")) if line.strip()]
    forward_s = 0.0
    start = time.perf_counter()
    for ids in windows:
        began = time.perf_counter()
        with torch.no_grad():
            out = model(torch.tensor([ids]), output_attentions=True)
        forward_s += time.perf_counter() - began
        for i, attention in enumerate(out.attentions):
            v = values[i][0].reshape(len(ids), kv, d).double().numpy()
            rows = attention[0, :, -1, :].double().numpy()  # [heads, n]: the last query
            for h in range(heads):
                all_n_metrics(rows[h], v[:, h // (heads // kv), :])
    seconds = time.perf_counter() - start
    print(json.dumps({"documents": len(windows), "seconds": seconds, "forward_seconds": forward_s}))


if __name__ == "__main__":
    main()
