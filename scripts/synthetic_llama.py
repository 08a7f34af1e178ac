#!/usr/bin/env python3
"""A llama checkpoint with LLaMA-2-7B's shapes and random bf16 weights, for timing extract and
truncate at model scale (scripts/device-check.sh), and windows of random token ids to run it on.
The safetensors file is written tensor by tensor, so host memory stays one tensor's worth."""
import argparse
import json
import os
import struct

import torch

HIDDEN, HEADS, MLP, VOCAB = 4096, 32, 11008, 32000


def tensor_shapes(layers, hidden, mlp, vocab):
    shapes = {"model.embed_tokens.weight": [vocab, hidden], "model.norm.weight": [hidden],
              "lm_head.weight": [vocab, hidden]}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes.update({p + "input_layernorm.weight": [hidden],
                       p + "post_attention_layernorm.weight": [hidden],
                       p + "self_attn.q_proj.weight": [hidden, hidden],
                       p + "self_attn.k_proj.weight": [hidden, hidden],
                       p + "self_attn.v_proj.weight": [hidden, hidden],
                       p + "self_attn.o_proj.weight": [hidden, hidden],
                       p + "mlp.gate_proj.weight": [mlp, hidden],
                       p + "mlp.up_proj.weight": [mlp, hidden],
                       p + "mlp.down_proj.weight": [hidden, mlp]})
    return shapes


def write_safetensors(path, shapes, generator, device):
    header, offset = {}, 0
    for name, shape in shapes.items():
        size = 2
        for n in shape:
            size *= n
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)))
        out.write(text)
        for name, shape in shapes.items():
            if name.endswith("norm.weight"):
                t = torch.ones(shape, dtype=torch.bfloat16, device=device)
            else:
                t = (torch.randn(shape, generator=generator, device=device) * 0.02).to(torch.bfloat16)
            out.write(t.cpu().contiguous().view(torch.int16).numpy().tobytes())


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--layers", type=int, default=32)
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--small", action="store_true", help="tiny shapes, to test the script itself")
    a = ap.parse_args()
    hidden, heads, mlp, vocab = (64, 4, 128, 256) if a.small else (HIDDEN, HEADS, MLP, VOCAB)
    os.makedirs(a.out, exist_ok=True)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    generator = torch.Generator(device=device).manual_seed(7)
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
              "hidden_size": hidden, "intermediate_size": mlp, "num_hidden_layers": a.layers,
              "num_attention_heads": heads, "num_key_value_heads": heads, "vocab_size": vocab,
              "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
              "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    write_safetensors(os.path.join(a.out, "model.safetensors"),
                      tensor_shapes(a.layers, hidden, mlp, vocab), generator, device)
    ids = torch.randint(3, vocab, (a.windows, a.context), generator=torch.Generator().manual_seed(8))
    ids[:, 0] = 1
    with open(os.path.join(a.out, "ids.txt"), "w") as f:
        for row in ids.tolist():
            f.write(" ".join(map(str, row)) + "\n")
    print(f"wrote {a.out}: {a.layers} layers, hidden {hidden}, "
          f"{os.path.getsize(os.path.join(a.out, 'model.safetensors')) / 2**30:.2f} GiB")


if __name__ == "__main__":
    main()
