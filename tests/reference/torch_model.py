#!/usr/bin/python3
"""torch_model.py: the independent reference for trainer/model.c.

The benchmark GPT of docs/model.md with the model-side arms of
supkit-train(1) (OE hashed n-gram tables, q_tau post-QK-norm scaling in its pair /
untied / head forms with the l0_hf16 mask and its exp / stop_exp / linear
parameterisations, pre-sublayer channel gains (the ve gate reading x_hat or,
with sub_form=gate_scaled, x_hat * alpha), decoupled routing with the
separate or shared anchor and out_lambdas, learned RoPE log-frequencies
rope_tau shared or per layer and head, rope_trig's bf16 or fp32 tables),
written with PyTorch autograd
(Debian python3-torch 1.13, CPU): RMSNorm spelled out (1.13 has no
F.rms_norm), attention with an explicit window mask, fp32 or fp64.

For each case below it fills the weights with the counter-based generator
fixture_value (test_model.c: fixture_fill implements the same), draws a
batch, runs forward and backward of the mean cross-entropy and writes
tests/fixtures/model/<case>.json (config, batch, loss, index of gradients)
and <case>.bin (every parameter's gradient, little-endian f32 or f64, in
the order of the index). Run by tests/fixtures/model/make.sh with
/usr/bin/python3; the C tests need neither Python nor torch.

Logits: with logits=bf16 (the default, the benchmark's autocast) fp32 runs
round the lm_head output to bf16 before the fp32 softcap
(logits.bfloat16().float(), whose autograd rounds the gradient flowing back
to bf16); logits=fp32 keeps them fp32; fp64 runs keep exact logits.

Leaves out: the optimizer, the rest of bf16 autocast (the CPU reference
computes in fp32 on bf16-rounded embeddings, as the fp32 CPU backend does). The OE tables'
gradients are written in fp32; the trainer stores them in bf16 (as the
original does), and test_model.c checks that they are these values rounded.
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15

BASE = ["depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "seq_len=32"]
ALL_ARMS = ["oe=1", "oe_m=13", "qk_scale=pair", "qk_mask=l0_hf16", "head_dim=64",
            "wte_lambdas=1", "out_lambdas=1", "anchor=shared"]
CASES = [
    # name, extra config, dtype, zero both c_proj after filling. The fp32
    # cases of each arm keep fp32 logits (logits=fp32: tight parity of the
    # arm itself); logits_bf16_* have the benchmark's bf16 logits (the
    # default); fp64 cases keep exact logits whatever the key says.
    ("base_dense_f32", ["logits=fp32"], "fp32", False),
    ("base_dense_f64", [], "fp64", False),
    ("base_bench_f32", ["logits=fp32"], "fp32", True),
    ("base_bench_f64", [], "fp64", True),
    ("oe_f32", ["oe=1", "oe_m=13", "logits=fp32"], "fp32", False),
    ("qk_pair_f32", ["qk_scale=pair", "logits=fp32"], "fp32", False),
    ("qk_untied_f32", ["qk_scale=untied", "logits=fp32"], "fp32", False),
    ("qk_head_f32", ["qk_scale=head", "logits=fp32"], "fp32", False),
    ("qk_pair_masked_f32", ["head_dim=64", "qk_scale=pair", "qk_mask=l0_hf16", "logits=fp32"],
     "fp32", False),
    ("route_separate_f32", ["wte_lambdas=1", "out_lambdas=1", "anchor=separate", "logits=fp32"],
     "fp32", False),
    ("route_shared_oe_f32", ["oe=1", "oe_m=13", "wte_lambdas=1", "out_lambdas=1", "anchor=shared",
                             "logits=fp32"], "fp32", False),
    ("all_arms_f64", ALL_ARMS, "fp64", False),
    ("qk_stopexp_pair_f64", ["qk_scale=pair", "qk_param=stop_exp"], "fp64", False),
    ("qk_stopexp_untied_f64", ["qk_scale=untied", "qk_param=stop_exp"], "fp64", False),
    ("qk_linear_pair_f64", ["qk_scale=pair", "qk_param=linear"], "fp64", False),
    ("sub_gains_f64", ["sub_gains=1"], "fp64", False),
    ("sub_qk_stopexp_f64", ["sub_gains=1", "qk_scale=untied", "qk_param=stop_exp"], "fp64", False),
    ("sub_gains_f32", ["sub_gains=1", "logits=fp32"], "fp32", False),
    ("sub_gate_scaled_f64", ["sub_gains=1", "sub_form=gate_scaled"], "fp64", False),
    ("sub_gate_scaled_f32", ["sub_gains=1", "sub_form=gate_scaled", "logits=fp32"], "fp32", False),
    # rope_tau: the angle t theta_c exp(tau) through autograd (fp32 cases
    # with fp32 tables: autograd through a bf16 cast rounds the gradient)
    ("rope_shared_f64", ["rope_tau=shared"], "fp64", False),
    ("rope_head_f64", ["rope_tau=head"], "fp64", False),
    ("rope_shared_f32", ["rope_tau=shared", "rope_trig=fp32", "logits=fp32"], "fp32", False),
    ("rope_head_sub_qk_f32", ["rope_tau=head", "rope_trig=fp32", "sub_gains=1", "qk_scale=pair",
                              "logits=fp32"], "fp32", False),
    ("logits_bf16_dense_f32", [], "fp32", False),
    ("logits_bf16_bench_f32", [], "fp32", True),
    ("logits_bf16_arms_f32", ALL_ARMS, "fp32", False),
]
B, T = 2, 32
FILL_SEED = 7
BATCH_SEED = 11


def mix64(z):
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 & MASK64
    z = (z ^ (z >> 27)) * 0x94D049BB133111EB & MASK64
    return z ^ (z >> 31)


def mix64_np(z):
    z = z.astype(np.uint64)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def fnv1a(s):
    h = 0xCBF29CE484222325
    for ch in s.encode():
        h = ((h ^ ch) * 0x100000001B3) & MASK64
    return h


def fixture_value(name, numel, cols):
    """a * (2u - 1) + c, u from mix64(seed + fnv1a(name) + (j+1) golden)."""
    if "resid_lambdas" in name:
        a, c = 0.2, 1.0
    elif "lambdas" in name:
        a, c = 0.2, 0.0
    elif name == "q_tau":
        a, c = 0.3, 0.0
    elif name == "sub_gains":
        a, c = 0.3, 1.0
    elif name == "rope_tau":
        a, c = 0.3, 0.0
    elif name == "transformer.wte.weight" or name.startswith("oe."):
        a, c = 1.0, 0.0
    else:
        a, c = math.sqrt(3.0 / cols), 0.0
    base = (FILL_SEED + fnv1a(name)) & MASK64
    with np.errstate(over="ignore"):
        j = np.arange(1, numel + 1, dtype=np.uint64)
        z = mix64_np(np.uint64(base) + j * np.uint64(GOLDEN))
    u = (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
    return (a * (2 * u - 1) + c).astype(np.float32)   # the C side rounds to fp32 too


def parse(kv):
    cfg = dict(depth=8, model_dim=0, head_dim=128, vocab_size=8192, seq_len=2048,
               window_pattern="SSSL", ve_gate_channels=32, norm_eps=2.0 ** -23, softcap=15.0,
               rope_base=10000.0, oe=0, oe_m=150855, oe_n=3, oe_k=2, qk_scale="none",
               qk_mask="none", qk_param="exp", sub_gains=0, sub_form="fused", wte_lambdas=0, out_lambdas=0, anchor="separate", shared_eps=1e-6,
               rope_tau="off", rope_trig="bf16",
               dtype="fp32", init="benchmark", logits="bf16")
    for s in kv:
        k, v = s.split("=", 1)
        cfg[k] = type(cfg[k])(v) if not isinstance(cfg[k], str) else v
    return cfg


def spec(cfg):
    """Names and shapes in paramspec order (trainer/paramspec.h)."""
    L, V = cfg["depth"], cfg["vocab_size"]
    d = cfg["model_dim"] or -(-64 * L // 128) * 128
    hd = cfg["head_dim"]
    H = d // hd
    ve = [i for i in range(L) if i % 2 == (L - 1) % 2]
    out = [("transformer.wte.weight", (V, d), True)]
    for i in range(L):
        p = "transformer.h.%d." % i
        out += [(p + "attn.c_q.weight", (d, d), False), (p + "attn.c_k.weight", (d, d), False),
                (p + "attn.c_v.weight", (d, d), False), (p + "attn.c_proj.weight", (d, d), False),
                (p + "mlp.c_fc.weight", (4 * d, d), False), (p + "mlp.c_proj.weight", (d, 4 * d), False)]
        if i in ve:
            out.append((p + "attn.ve_gate.weight", (H, cfg["ve_gate_channels"]), False))
    for i in ve:
        out.append(("value_embeds.%d.weight" % i, (V, d), True))
    out += [("lm_head.weight", (V, d), False), ("resid_lambdas", (L,), False),
            ("x0_lambdas", (L,), False)]
    if cfg["oe"]:
        for j in range((cfg["oe_n"] - 1) * cfg["oe_k"]):
            out.append(("oe.%d.weight" % j, (cfg["oe_m"] + 2 * j, d // 4), True))
    if cfg["qk_scale"] == "pair":
        out.append(("q_tau", (L, H, hd // 2), False))
    elif cfg["qk_scale"] == "untied":
        out.append(("q_tau", (L, H, hd), False))
    elif cfg["qk_scale"] == "head":
        out.append(("q_tau", (L, H), False))
    if cfg["wte_lambdas"]:
        out.append(("wte_lambdas", (L,), False))
    if cfg["out_lambdas"]:
        out.append(("out_lambdas", (2,), False))
    if cfg["sub_gains"]:
        out.append(("sub_gains", (L, 2, d), False))
    if cfg["rope_tau"] == "shared":
        out.append(("rope_tau", (hd // 2,), False))
    elif cfg["rope_tau"] == "head":
        out.append(("rope_tau", (L, H, hd // 2), False))
    return out, d, H, hd, ve


def qtau_mask(cfg, shape):
    m = np.zeros(shape, dtype=bool)
    if cfg["qk_mask"] != "l0_hf16":
        return m
    m[0] = True
    if cfg["qk_scale"] == "pair":
        m[:, :, :16] = True
    elif cfg["qk_scale"] == "untied":
        h2 = shape[2] // 2
        m[:, :, :16] = True
        m[:, :, h2:h2 + 16] = True
    return m


def rms(x, eps):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps)


# MM_BF16: every linear layer's operands rounded to bf16 before an fp32
# product (the CUDA backend's GEMMs, emulated; tests/reference/torch_curve.py
# --mm bf16). Off for the fixtures.
MM_BF16 = False


def lin(a, w):
    if MM_BF16:
        return a.bfloat16().float() @ w.bfloat16().float().T
    return a @ w.T


def windows(cfg):
    L, T0 = cfg["depth"], cfg["seq_len"]
    pat = cfg["window_pattern"]
    w = [T0 if pat[i % len(pat)] == "L" else T0 // 2 for i in range(L)]
    w[-1] = T0
    return w


def rope_tables(cfg, hd, dt, tau=None):
    """cos, sin of t theta_c exp(tau): (T0, hd/2) without tau or with a
    shared tau (hd/2), (T0, H, hd/2) with a per-head tau (H, hd/2). fp32:
    theta_c, exp(tau) and the angle in fp32, the tables rounded to bf16
    with rope_trig=bf16 (the benchmark's); fp64 throughout."""
    T0 = cfg["seq_len"]
    inv = 1.0 / (cfg["rope_base"] ** (torch.arange(0, hd, 2, dtype=dt) / hd))
    fr = inv if tau is None else inv * torch.exp(tau)
    t = torch.arange(T0, dtype=dt)
    f = t.view(-1, *([1] * fr.dim())) * fr
    if dt == torch.float32 and cfg["rope_trig"] == "bf16":
        return f.cos().bfloat16().float(), f.sin().bfloat16().float()
    return f.cos(), f.sin()


def rope_view(c, Tn, dev):
    """a table as (1, Tn, H or 1, hd/2)"""
    return (c[None, :Tn, None, :] if c.dim() == 2 else c[None, :Tn]).to(dev)


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos + x2 * sin, -x1 * sin + x2 * cos], -1)


def oe_rows(cfg, idx, j):
    V = cfg["vocab_size"]
    order = 2 + j // cfg["oe_k"]
    rows = cfg["oe_m"] + 2 * j
    out = np.zeros(idx.shape, dtype=np.int64)
    for b in range(idx.shape[0]):
        for t in range(idx.shape[1]):
            key, f = int(idx[b, t]), 1
            for r in range(1, order):
                f *= V + 1
                key += f * (int(idx[b, t - r]) if t - r >= 0 else V)
            out[b, t] = key % rows
    return torch.from_numpy(out)


def forward(cfg, P, idx, tgt, dt):
    names, d, H, hd, ve = spec(cfg)
    L, eps, cap = cfg["depth"], cfg["norm_eps"], cfg["softcap"]
    Bn, Tn = idx.shape
    dev = P["transformer.wte.weight"].device
    it = torch.from_numpy(idx.astype(np.int64)).to(dev)
    w = P["transformer.wte.weight"][it]
    s = w
    if cfg["oe"]:
        J = (cfg["oe_n"] - 1) * cfg["oe_k"]
        s = w + torch.cat([P["oe.%d.weight" % j][oe_rows(cfg, idx, j).to(dev)] for j in range(J)], -1)
    x0 = rms(s, eps)
    x0w = None
    if cfg["wte_lambdas"]:
        if cfg["anchor"] == "shared":
            x0w = w / torch.sqrt(s.pow(2).mean(-1, keepdim=True) + cfg["shared_eps"])
        else:
            x0w = rms(w, eps)
    if cfg["rope_tau"] == "shared":
        cos, sin = rope_tables(cfg, hd, dt, P["rope_tau"])
    elif cfg["rope_tau"] == "off":
        cos, sin = rope_tables(cfg, hd, dt)
    cos, sin = (None, None) if cfg["rope_tau"] == "head" else \
        (rope_view(cos, Tn, dev), rope_view(sin, Tn, dev))
    ws = windows(cfg)
    t = torch.arange(Tn, device=dev)
    x = x0
    for i in range(L):
        p = "transformer.h.%d." % i
        x = P["resid_lambdas"][i] * x + P["x0_lambdas"][i] * x0
        if x0w is not None:
            x = x + P["wte_lambdas"][i] * x0w
        a = rms(x, eps)
        # pre-sublayer gains, written unfused: W_Q, W_K, W_V read a * alpha,
        # the ve gate the unscaled a (the trainer fuses alpha into W's columns
        # with sub_form=fused, scales the activation with the other forms);
        # with sub_form=gate_scaled the gate reads a * alpha (paper 002's
        # "ve_gate-Scaled Unfused"), a different function
        aq = a * P["sub_gains"][i, 0] if cfg["sub_gains"] else a
        gin = aq if cfg["sub_form"] == "gate_scaled" else a
        q = lin(aq, P[p + "attn.c_q.weight"]).view(Bn, Tn, H, hd)
        k = lin(aq, P[p + "attn.c_k.weight"]).view(Bn, Tn, H, hd)
        v = lin(aq, P[p + "attn.c_v.weight"]).view(Bn, Tn, H, hd)
        if i in ve:
            g = 2 * torch.sigmoid(lin(gin[..., :cfg["ve_gate_channels"]], P[p + "attn.ve_gate.weight"]))
            v = v + g.unsqueeze(-1) * P["value_embeds.%d.weight" % i][it].view(Bn, Tn, H, hd)
        if cfg["rope_tau"] == "head":   # layer i's (T0, H, hd/2) tables
            cos, sin = rope_tables(cfg, hd, dt, P["rope_tau"][i])
            cos, sin = rope_view(cos, Tn, dev), rope_view(sin, Tn, dev)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        q, k = rms(q, eps), rms(k, eps)
        if cfg["qk_scale"] != "none":
            tau = P["q_tau"][i]
            if cfg["qk_scale"] == "pair":
                tau = torch.cat([tau, tau], -1)
            elif cfg["qk_scale"] == "head":
                tau = tau.unsqueeze(-1).expand(H, hd)
            if cfg["qk_param"] == "linear":
                # s = 1 + tau on both the normalised q and k (logit metric s^2)
                q, k = q * (1 + tau), k * (1 + tau)
            elif cfg["qk_param"] == "stop_exp":
                # exp(sg(tau)) + tau - sg(tau): exp in the forward, slope 1
                q = q * (torch.exp(tau.detach()) + tau - tau.detach())
            else:
                q = q * torch.exp(tau)
        qh, kh, vh = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)   # (B,H,T,D)
        att = (qh @ kh.transpose(-1, -2)) / math.sqrt(hd)
        allowed = (t[None, :] <= t[:, None]) & (t[None, :] >= t[:, None] - ws[i])
        att = att.masked_fill(~allowed, float("-inf"))
        y = (torch.softmax(att, -1) @ vh).transpose(1, 2).reshape(Bn, Tn, d)
        x = x + lin(y, P[p + "attn.c_proj.weight"])
        am = rms(x, eps)
        if cfg["sub_gains"]:
            am = am * P["sub_gains"][i, 1]
        h = lin(am, P[p + "mlp.c_fc.weight"])
        x = x + lin(F.relu(h).square(), P[p + "mlp.c_proj.weight"])
    if cfg["out_lambdas"]:
        x = x + P["out_lambdas"][0] * x0 + P["out_lambdas"][1] * x0w
    logits = lin(rms(x, eps), P["lm_head.weight"])
    if cfg["logits"] == "bf16" and dt == torch.float32:
        # the benchmark's autocast: a bf16 lm_head output, .float() before
        # the softcap; autograd rounds the gradient through the cast to bf16
        logits = logits.bfloat16().float()
    logits = cap * torch.tanh(logits / cap)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           torch.from_numpy(tgt.astype(np.int64)).to(dev).reshape(-1), ignore_index=-1)


def fixture_params(cfg, dt, zero_proj):
    """Every parameter of cfg (name -> tensor of dtype dt) from fixture_value,
    bf16-stored ones rounded to bf16, masked q_tau entries 0, both c_proj
    zeroed when zero_proj (test_model.c: fixture_fill and fixture_model)."""
    names = spec(cfg)[0]
    P = {}
    for n, shape, bf in names:
        cols = shape[-1] if len(shape) == 2 else 1
        v = torch.from_numpy(fixture_value(n, int(np.prod(shape)), cols)).view(*shape)
        if bf:
            v = v.bfloat16().float()
        if n == "q_tau":
            v[torch.from_numpy(qtau_mask(cfg, shape))] = 0
        if zero_proj and (n.endswith("attn.c_proj.weight") or n.endswith("mlp.c_proj.weight")):
            v.zero_()
        P[n] = v.to(dt)
    return P


def run_case(outdir, name, extra, dtype, zero_proj):
    kv = BASE + extra + ["dtype=" + dtype, "init=dense"]
    cfg = parse(kv)
    dt = torch.float64 if dtype == "fp64" else torch.float32
    names, d, H, hd, ve = spec(cfg)
    P = {n: v.requires_grad_(True) for n, v in fixture_params(cfg, dt, zero_proj).items()}
    V = cfg["vocab_size"]
    seq = [mix64((BATCH_SEED + i) & MASK64) % V for i in range(2 * B * T)]
    idx = np.array(seq[0::2], dtype=np.int64).reshape(B, T)
    tgt = np.array(seq[1::2], dtype=np.int64).reshape(B, T)
    tgt[0, 3] = -1   # an ignored target
    loss = forward(cfg, P, idx, tgt, dt)
    loss.backward()
    index, blobs, off = {}, [], 0
    fmt = "<f8" if dtype == "fp64" else "<f4"
    for n, shape, bf in names:
        g = P[n].grad.detach().clone()
        if n == "q_tau":
            g[torch.from_numpy(qtau_mask(cfg, shape))] = 0   # frozen entries carry no gradient
        a = g.numpy().astype(fmt).reshape(-1)
        index[n] = {"offset": off, "numel": int(a.size), "shape": list(shape)}
        blobs.append(a.tobytes())
        off += a.size
    rec = {"case": name, "config": kv, "dtype": dtype, "zero_proj": zero_proj, "B": B, "T": T,
           "fill_seed": FILL_SEED, "inputs": idx.reshape(-1).tolist(),
           "targets": tgt.reshape(-1).tolist(), "loss": loss.item(), "grads": index,
           "made_by": "tests/reference/torch_model.py, torch " + torch.__version__}
    with open(os.path.join(outdir, name + ".bin"), "wb") as f:
        f.write(b"".join(blobs))
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(rec, f, sort_keys=True, indent=1)
        f.write("\n")
    print("%-22s loss %.10f  %d gradients" % (name, loss.item(), off))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/model"
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    only = set(sys.argv[2:])   # case names to make (default: every case)
    for name, extra, dtype, zp in CASES:
        if not only or name in only:
            run_case(outdir, name, extra, dtype, zp)


if __name__ == "__main__":
    main()
