# attngeo's forward against transformers' own eager forward, live (docs/design.md §13): per
# family, configs made with transformers' config classes (small sizes, then the variations a
# family has), saved with save_pretrained (sharded too), and attngeo's logits, attention rows and
# value states equal to the goldens' tolerances; truncate's ΔNLL against the same cut done inside
# transformers' attention; what attngeo refuses is refused in one line naming the key.
import csv
import dataclasses
import sys

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
from safetensors.torch import load_file  # noqa: E402

# The goldens' bars (tests/empirical/test_golden.cpp): attention rows and logits absolute, values
# 2e-5 (a float32 forward in another summation order differs by ~1e-5 on |v| ≈ 8).
ATTENTION_TOLERANCE = 1e-5
LOGITS_TOLERANCE = 1e-4
VALUES_TOLERANCE = 2e-5
BATCH, TOKENS = 2, 16

LLAMA_SIZES = dict(vocab_size=256, hidden_size=64, intermediate_size=160, num_hidden_layers=3,
                   num_attention_heads=4, max_position_embeddings=64)
GPT2_SIZES = dict(vocab_size=256, n_embd=64, n_layer=3, n_head=4, n_positions=64)


def theta(value, kind="default", **extra):
    """transformers 5's rope_parameters (rope_theta and scaling in one object)."""
    return {"rope_parameters": {"rope_type": kind, "rope_theta": value, **extra}}


@dataclasses.dataclass
class Case:
    name: str
    config_class: str  # a transformers config class
    options: dict
    dtype: str = "float32"  # the saved weights' dtype; the reference runs in float32 from them
    shard: str = ""  # save_pretrained's max_shard_size ("" = one file)

    def sizes(self):
        return GPT2_SIZES if self.config_class == "GPT2Config" else LLAMA_SIZES


CASES = [
    Case("llama", "LlamaConfig", {}),
    Case("llama-gqa-theta5e5", "LlamaConfig",
         dict(num_key_value_heads=2, rms_norm_eps=1e-5, **theta(5e5))),
    Case("llama-linear-rope", "LlamaConfig", dict(num_key_value_heads=2, **theta(1e4, "linear", factor=4.0))),
    Case("llama-tied-head-dim", "LlamaConfig",
         dict(tie_word_embeddings=True, head_dim=32, num_key_value_heads=1)),
    Case("llama-bf16", "LlamaConfig", dict(num_key_value_heads=2), dtype="bfloat16"),
    Case("llama-sharded", "LlamaConfig", dict(num_key_value_heads=2), shard="60KB"),
    Case("mistral-sliding-window", "MistralConfig", dict(num_key_value_heads=2, sliding_window=6)),
    Case("mistral-no-window", "MistralConfig", dict(num_key_value_heads=4, sliding_window=None)),
    Case("gemma", "GemmaConfig", dict(num_key_value_heads=1, head_dim=32)),
    Case("gemma-mha-bf16", "GemmaConfig", dict(num_key_value_heads=4, head_dim=16), dtype="bfloat16"),
    Case("gpt2", "GPT2Config", {}),  # bos/eos_token_id keep GPT2Config's 50256
    Case("gpt2-untied-inner-gelu", "GPT2Config",
         dict(n_inner=96, tie_word_embeddings=False, activation_function="gelu")),
    Case("gpt2-sharded", "GPT2Config", {}, shard="60KB"),
    Case("gpt-neox", "GPTNeoXConfig", {}),  # partial rotary 0.25, parallel residual
    Case("gpt-neox-serial-full-rotary", "GPTNeoXConfig",
         dict(use_parallel_residual=False, **theta(1e4, partial_rotary_factor=1.0))),
    Case("gpt-neox-linear-rope", "GPTNeoXConfig",
         dict(**theta(1e4, "linear", factor=2.0, partial_rotary_factor=0.5))),
    Case("qwen2", "Qwen2Config", dict(num_key_value_heads=2)),
    Case("qwen2-tied-theta1e6", "Qwen2Config",
         dict(num_key_value_heads=4, tie_word_embeddings=True, **theta(1e6))),
    Case("qwen2-bf16", "Qwen2Config", dict(num_key_value_heads=2), dtype="bfloat16"),
]

# Configs transformers runs and attngeo does not support yet, each refused naming its key.
REFUSED = [
    Case("llama-rope-dynamic", "LlamaConfig", theta(1e4, "dynamic", factor=2.0)),
    Case("llama-rope-yarn", "LlamaConfig", theta(1e4, "yarn", factor=2.0)),
    Case("llama-rope-llama3", "LlamaConfig",
         theta(1e4, "llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
               original_max_position_embeddings=32)),
    Case("llama-attention-bias", "LlamaConfig", dict(attention_bias=True)),
    Case("llama-mlp-bias", "LlamaConfig", dict(mlp_bias=True)),
    Case("qwen2-sliding-window", "Qwen2Config",
         dict(num_key_value_heads=4, use_sliding_window=True, sliding_window=4, max_window_layers=1)),
    Case("gpt2-inverse-layer-scale", "GPT2Config", dict(scale_attn_by_inverse_layer_idx=True)),
]
REFUSED_KEYS = {
    "llama-rope-dynamic": "rope_parameters", "llama-rope-yarn": "rope_parameters",
    "llama-rope-llama3": "rope_parameters", "llama-attention-bias": "attention_bias",
    "llama-mlp-bias": "mlp_bias", "qwen2-sliding-window": "use_sliding_window",
    "gpt2-inverse-layer-scale": "scale_attn_by_inverse_layer_idx",
}


class ValueRecorder:
    """Wraps each model's own eager attention and keeps the value states it is given
    ([B, H_kv, T, d_head], before any GQA repeat), in call order = layer order."""

    def __init__(self):
        self.values = []

    def __call__(self, module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
        eager = sys.modules[type(module).__module__].eager_attention_forward
        self.values.append(value.detach().float().clone())
        return eager(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kw)


def make_model(case, folder, seed=0):
    """The case's model, randomly initialised (larger weights than transformers' 0.02 so that
    attention is far from uniform; norms and biases perturbed so that every tensor matters),
    saved with save_pretrained; returned as loaded back from the folder in float32."""
    torch.manual_seed(seed)
    config = getattr(transformers, case.config_class)(**{**case.sizes(), **case.options,
                                                         "initializer_range": 0.2})
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager")
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if parameter.dim() == 1:
                parameter.add_(0.1 * torch.randn_like(parameter))
    model.eval()
    if case.dtype == "bfloat16":
        model = model.to(torch.bfloat16)
    kwargs = {"max_shard_size": case.shard} if case.shard else {}
    model.save_pretrained(folder, **kwargs)
    # The reference is the folder as transformers loads it, in float32: model.float() would keep
    # the rotary frequencies that .to(bfloat16) rounded (non-persistent buffers, not saved).
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(
        folder, dtype=torch.float32, attn_implementation="eager")
    return reloaded.eval()


def write_ids(path, ids):
    path.write_text("".join(" ".join(str(int(t)) for t in row) + "\n" for row in ids))


def use_attention(model, name, function):
    """Runs the model through `function` as its attention, with eager's masks: transformers 5
    builds the causal (and sliding-window) mask per implementation name and gives an
    unregistered name none, so the mask function is registered under the same name."""
    transformers.AttentionInterface.register(name, function)
    eager_mask = transformers.masking_utils.ALL_MASK_ATTENTION_FUNCTIONS["eager"]
    transformers.AttentionMaskInterface.register(name, eager_mask)
    model.set_attn_implementation(name)


def reference(model, ids):
    recorder = ValueRecorder()
    use_attention(model, "attngeo_peer", recorder)
    with torch.no_grad():
        out = model(torch.as_tensor(ids), output_attentions=True)
    model.set_attn_implementation("eager")
    return out.logits, out.attentions, recorder.values


def largest(a, b):
    assert tuple(a.shape) == tuple(b.shape), f"shapes {tuple(a.shape)} and {tuple(b.shape)}"
    return (a.double() - b.double()).abs().max().item()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_forward_equals_transformers(case, tmp_path, run_attngeo):
    folder = tmp_path / "model"
    model = make_model(case, folder)
    if case.shard:
        assert (folder / "model.safetensors.index.json").is_file(), "save_pretrained did not shard"
    ids = torch.randint(0, 256, (BATCH, TOKENS), generator=torch.Generator().manual_seed(1))
    write_ids(tmp_path / "ids.txt", ids.tolist())
    r = run_attngeo("capture", "--model", folder, "--tokens", tmp_path / "ids.txt",
                    "--queries", "all", "--out", tmp_path / "capture.safetensors")
    assert r.returncode == 0, r.stderr
    ours = load_file(str(tmp_path / "capture.safetensors"))
    logits, attentions, values = reference(model, ids)
    worst = {"logits": largest(ours["logits"], logits), "attention": 0.0, "values": 0.0}
    for layer, (weights, value) in enumerate(zip(attentions, values)):
        worst["attention"] = max(worst["attention"], largest(ours[f"attentions.{layer}"], weights))
        worst["values"] = max(worst["values"], largest(ours[f"values.{layer}"], value))
    assert len(attentions) == model.config.num_hidden_layers
    print(f"{case.name}: largest difference from transformers {transformers.__version__}: "
          f"logits {worst['logits']:.2e}, attention {worst['attention']:.2e}, "
          f"values {worst['values']:.2e}")
    assert worst["logits"] <= LOGITS_TOLERANCE
    assert worst["attention"] <= ATTENTION_TOLERANCE
    assert worst["values"] <= VALUES_TOLERANCE


@pytest.mark.parametrize("case", REFUSED, ids=lambda c: c.name)
def test_unsupported_configs_are_refused_naming_the_key(case, tmp_path, run_attngeo):
    folder = tmp_path / "model"
    make_model(case, folder)
    write_ids(tmp_path / "ids.txt", [[1, 2, 3, 4]])
    r = run_attngeo("capture", "--model", folder, "--tokens", tmp_path / "ids.txt",
                    "--out", tmp_path / "never.safetensors")
    print(f"{case.name}: not supported yet: {r.stderr.strip()}")
    assert r.returncode == 2, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert "config.json" in r.stderr and REFUSED_KEYS[case.name] in r.stderr, r.stderr
    assert not (tmp_path / "never.safetensors").exists()


FAMILY_CONFIGS = ["LlamaConfig", "MistralConfig", "GemmaConfig", "GPT2Config", "GPTNeoXConfig",
                  "Qwen2Config"]


@pytest.mark.parametrize("config_class", FAMILY_CONFIGS)
def test_every_default_config_loads(config_class, tmp_path, run_attngeo):
    """transformers' defaults at full size (config.json only): attngeo reads the config and
    goes on to the weights, so its error names the missing weights, not the config."""
    folder = tmp_path / "model"
    getattr(transformers, config_class)().save_pretrained(folder)
    write_ids(tmp_path / "ids.txt", [[1, 2, 3, 4]])
    r = run_attngeo("capture", "--model", folder, "--tokens", tmp_path / "ids.txt",
                    "--out", tmp_path / "never.safetensors")
    print(f"{config_class}(): {r.stderr.strip()}")
    assert r.returncode == 2, r.stderr
    assert "safetensors" in r.stderr and "config.json" not in r.stderr, r.stderr


# truncate: every head's softmax row cut to its top N (or to token 0 and the N − 1 most recent
# keys), renormalised or not, inside transformers' attention; ΔNLL and KL as
# ../shared/golden/truncation/README.md defines them.
def cut_rows(weights, n, policy, renorm):
    keys = weights.shape[-1]
    out = weights.clone()
    for t in range(keys):
        if t + 1 <= n:
            continue  # a row with at most N keys is untouched
        row = out[..., t, :]
        keep = torch.zeros(keys, dtype=torch.bool)
        if policy == "window":
            keep[0] = True
            keep[t - n + 2: t + 1] = True
            mask = keep.expand_as(row)
        else:  # the N largest weights, ties to the lower index
            order = torch.sort(-row[..., : t + 1], dim=-1, stable=True).indices[..., :n]
            mask = torch.zeros_like(row, dtype=torch.bool).scatter_(-1, order, True)
        row = torch.where(mask, row, torch.zeros_like(row))
        if renorm:
            row = row / row.sum(-1, keepdim=True)
        out[..., t, :] = row
    return out


def truncating_attention(n, policy, renorm):
    def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kw):
        groups = query.shape[1] // key.shape[1]
        key = key.repeat_interleave(groups, dim=1)
        value = value.repeat_interleave(groups, dim=1)
        scores = torch.matmul(query, key.transpose(2, 3)) * scaling
        if attention_mask is not None:
            scores = scores + attention_mask[:, :, :, : key.shape[-2]]
        weights = torch.softmax(scores.float(), dim=-1)
        if n is not None:
            weights = cut_rows(weights, n, policy, renorm)
        return torch.matmul(weights, value).transpose(1, 2).contiguous(), weights

    return attention


def losses(model, ids, n, policy, renorm):
    use_attention(model, "attngeo_truncated", truncating_attention(n, policy, renorm))
    with torch.no_grad():
        logits = model(torch.as_tensor(ids)).logits.double()
    model.set_attn_implementation("eager")
    log_p = torch.log_softmax(logits, dim=-1)
    nll = -log_p[:, :-1].gather(-1, torch.as_tensor(ids)[:, 1:, None]).squeeze(-1).mean(-1)
    return nll, log_p


@pytest.mark.parametrize("config_class", ["LlamaConfig", "MistralConfig"])
def test_truncate_delta_nll_equals_transformers(config_class, tmp_path, run_attngeo):
    case = Case("truncate", config_class, dict(num_key_value_heads=2))
    if config_class == "MistralConfig":
        case.options["sliding_window"] = None
    folder = tmp_path / "model"
    model = make_model(case, folder)
    tokens = 24
    ids = torch.randint(3, 256, (4, tokens), generator=torch.Generator().manual_seed(2))
    ids[:, 0] = model.config.bos_token_id
    write_ids(tmp_path / "windows.txt", ids.tolist())
    r = run_attngeo("truncate", "--model", folder, "--tokens", tmp_path / "windows.txt",
                    "--context", tokens, "--N", "1,2,4,8", "--policy", "attn,window",
                    "--renorm", "both", "--quiet", "--out", tmp_path / "run")
    assert r.returncode == 0, r.stderr
    rows = read_csv(tmp_path / "run" / "truncate.csv")
    full_nll, full_log_p = losses(model, ids.tolist(), None, None, False)
    worst_delta = worst_kl = 0.0
    checked = 0
    for row in rows:
        n, policy, renorm = int(row["N"]), row["policy"], row["renorm"] == "yes"
        nll, log_p = losses(model, ids.tolist(), n, policy, renorm)
        delta = (nll - full_nll).mean().item()
        kl = (full_log_p.exp() * (full_log_p - log_p)).sum(-1)[:, :-1].mean().item()
        worst_delta = max(worst_delta, abs(float(row["delta_nll"]) - delta))
        worst_kl = max(worst_kl, abs(float(row["kl"]) - kl))
        checked += 1
    assert checked == 16, rows
    print(f"truncate {config_class}: largest difference from transformers: "
          f"ΔNLL {worst_delta:.2e}, KL {worst_kl:.2e} nats over {checked} cuts")
    assert worst_delta < 2e-5 and worst_kl < 2e-5


def read_csv(path):
    with open(path, newline="") as f:
        return [row for row in csv.DictReader(f) if not row.get("N", "").startswith("#")]
