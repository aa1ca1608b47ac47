#!/usr/bin/python3
"""torch_train.py: the loss curve of the PyTorch reference over many steps,
for trainer/model.c + trainer/optim.c together (tests/unit/trainer/test_model.c,
test curve_*).

The model is tests/reference/torch_model.py (forward and autograd) and the
optimizer tests/reference/torch_optim.py (step_all: train.py's MuonAdamW
written out, with the benchmark's bf16 arithmetic), both independent of the
C code; this script only joins them into the training loop of
trainer/train.c: per step, zero the gradients, K micro-batches each adding
the gradient of (mean loss) / K, then one optimizer step with the schedule
of train.py (step-based progress over S steps, W warm-up steps). Weights
start from torch_model.fixture_value (test_model.c: fixture_fill), both
c_proj zeroed as in the benchmark's init.

Batches are a learnable stream: each row starts at a random token and
continues x -> (5 x + 1) mod V with probability 0.9, a random token
otherwise, so the loss falls well below ln V in a few dozen steps.

For each case it writes tests/fixtures/model/<case>.json: the C config
(model, schedule and batch keys), B, T, K, S, every step's inputs and
targets, the per-step loss (mean over the K micro-batches) and the final
RMS of every parameter. Run by tests/fixtures/model/make.sh with
/usr/bin/python3 (Debian python3-torch 1.13, CPU); the C test needs neither.

Cases: the baseline (fp32 with the benchmark's bf16 arithmetic: Polar
Express as torch.compile computed it and bf16 logits, the defaults; fp64;
fp32 polar and state) and the OE arm, whose tables take their gradient as the
original's bf16 .grad: each micro-step's fp32 gradient rounded to bf16 and
added to the sum with a second rounding (trainer/param.h).

Leaves out: the other arms (their parity is per step in torch_model.py and
torch_optim.py), evaluation, the data loader (tested on its own).
"""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_model as TM   # noqa: E402
import torch_optim as TO   # noqa: E402

MODEL = ["depth=2", "model_dim=64", "head_dim=32", "vocab_size=64", "seq_len=32"]
B, T, K, S, W = 2, 32, 2, 40, 3
CASES = [
    # name, dtype, extra C config, arm dict of torch_optim, model keys (both)
    ("curve_base_f32", "fp32", [], {}, []),
    ("curve_base_f64", "fp64", ["dtype=fp64"], {"dtype": "fp64"}, []),
    ("curve_fp32state_f32", "fp32", ["polar=fp32", "embed_state=fp32"],
     {"polar": "fp32", "embed_state": "fp32"}, []),
    # the OE arm as the original stores it: bf16 tables whose gradient is
    # bf16, each micro-step's rounded and accumulated with a second rounding
    ("curve_oe_f32", "fp32", [], {}, ["oe=1", "oe_m=13"]),
]
STREAM_SEED = 20261129


def group_of(name):
    if name in ("transformer.wte.weight",) or name.startswith("value_embeds."):
        return "embed", "bf16"
    if name.startswith("oe."):
        return "oe", "bf16"
    if name == "lm_head.weight":
        return "lm_head", "f32"
    if name == "resid_lambdas":
        return "resid", "f32"
    if name == "x0_lambdas":
        return "scalar", "f32"
    return "matrix", "f32"


def stream(rng, V):
    out = []
    for _ in range(S * K):
        rows = []
        for _ in range(B):
            x = int(rng.integers(0, V))
            row = [x]
            for _ in range(T):
                x = (5 * x + 1) % V if rng.random() < 0.9 else int(rng.integers(0, V))
                row.append(x)
            rows.append(row)
        a = np.array(rows, dtype=np.int64)
        out.append((a[:, :-1].copy(), a[:, 1:].copy()))
    return out


def bf16(x):
    return x.bfloat16().float()


def run_case(outdir, name, dtype, extra, arm, model_kv):
    cfg = TM.parse(MODEL + model_kv + ["dtype=" + dtype])
    dt = torch.float64 if dtype == "fp64" else torch.float32
    names, d, H, hd, ve = TM.spec(cfg)
    params = TM.fixture_params(cfg, dt, True)
    table = [(n, *group_of(n), shape) for n, shape, bf in names]
    k = (d / 768) ** -0.5
    batches = stream(np.random.default_rng(STREAM_SEED), cfg["vocab_size"])
    state, losses = {}, []
    oe = [n for n in params if n.startswith("oe.")]
    for t in range(S):
        P = {n: v.clone().requires_grad_(True) for n, v in params.items()}
        total = 0.0
        acc = {n: torch.zeros_like(params[n]) for n in oe}
        counts = {n: torch.zeros(params[n].shape[0], dtype=torch.int64) for n in oe}
        for j in range(K):
            idx, tgt = batches[t * K + j]
            loss = TM.forward(cfg, P, idx, tgt, dt)
            (loss / K).backward()
            total += loss.item()
            for q, n in enumerate(oe):   # bf16 .grad: rounded, added, rounded
                acc[n] = bf16(acc[n] + bf16(P[n].grad.detach()))
                P[n].grad = None
                counts[n] += torch.bincount(TM.oe_rows(cfg, idx, q).reshape(-1),
                                            minlength=params[n].shape[0])
        losses.append(total / K)
        grads = {n: acc[n] if n in acc else P[n].grad.detach().clone() for n in params}
        _, _, lrm, mu, wd = TO.schedule(t, S=S, W=W)
        TO.step_all(table, params, grads, counts, {}, state, t, (lrm, mu, wd), arm, k)
    kv = MODEL + model_kv + ["batch_rows=%d" % B, "grad_accum=%d" % K, "steps=%d" % S,
                             "warmup_steps=%d" % W, "init=dense"] + extra
    rec = {"case": name, "config": kv, "dtype": dtype, "B": B, "T": T, "K": K, "S": S,
           "fill_seed": TM.FILL_SEED, "zero_proj": True,
           "inputs": [int(x) for i, _ in batches for x in i.reshape(-1)],
           "targets": [int(x) for _, g in batches for x in g.reshape(-1)],
           "losses": losses,
           "final_rms": {n: float(v.double().pow(2).mean().sqrt()) for n, v in params.items()},
           "made_by": "tests/reference/torch_train.py, torch " + torch.__version__}
    with open(os.path.join(outdir, name + ".json"), "w") as f:
        json.dump(rec, f, sort_keys=True, indent=1)
        f.write("\n")
    print("%-16s loss %.6f -> %.6f over %d steps" % (name, losses[0], losses[-1], S))


def main():
    outdir = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/model"
    torch.set_num_threads(1)
    os.makedirs(outdir, exist_ok=True)
    for name, dtype, extra, arm, model_kv in CASES:
        run_case(outdir, name, dtype, extra, arm, model_kv)


if __name__ == "__main__":
    main()
