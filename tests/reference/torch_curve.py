#!/usr/bin/env python3
"""torch_curve.py: the PyTorch reference's loss curve on a supkit run's own
tokens and initial weights (tests/gpu/curve.sh: the CUDA backend at depth 8
on the demo corpus against it).

The model is tests/reference/torch_model.py (forward and autograd) and the
optimizer tests/reference/torch_optim.py (train.py's MuonAdamW written out),
the same pair that makes the CPU loss-curve fixtures (torch_train.py); this
script only feeds them a real run:
  - RUNDIR is a supkit run stopped before its first step
    (supkit train --stop-after 0): its config.cfg gives the model, batch and
    schedule, RUNDIR/checkpoint/params.safetensors the initial weights (read
    here with the format's own rules: 8-byte header length, JSON header,
    little-endian F32/F64/BF16 data);
  - BATCHES is `supkit data batches` for the run's seq_len, batch_rows and
    seed: record k is micro-batch k (inputs then targets, int32, (B,T) each).
Per step: K micro-batches each add the gradient of (mean loss) / K, then one
optimizer step with the run's schedule (step-based, S steps, W warm-up).

--mm fp32 computes in fp32 (no TF32); --mm bf16 rounds every linear layer's
operands to bf16 before the fp32 product (the CUDA backend's GEMMs), which
makes the bf16-noise scale the check compares against.

Only the baseline arm and fp32 runs are accepted: every key but the run's
shape, batch and schedule length (RUN_KEYS) must be as in
configs/baseline.cfg; anything else is refused with a one-line error (exit 2).

usage: torch_curve.py --run RUNDIR --batches FILE --mm fp32|bf16
                      [--device cuda|cpu] [--steps S] -o OUT.json
OUT.json: {"losses": [...], "mm": ..., "device": ..., "seconds": ...,
"tokens_per_s": ...}. Needs torch (2.x with CUDA on a GPU machine; Debian's
1.13 runs it on the CPU at small sizes).
"""
import argparse
import json
import os
import struct
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "bench"))
import geometry_ref   # noqa: E402
import torch_model as TM   # noqa: E402
import torch_optim as TO   # noqa: E402
from torch_train import group_of   # noqa: E402

# keys the reference takes from the run (model shape, batch, schedule
# length) or that do not change the arithmetic; every other key must be as
# in configs/baseline.cfg (the baseline arm)
RUN_KEYS = {"arm", "seed", "depth", "model_dim", "head_dim", "vocab_size", "seq_len", "init",
            "init_from", "batch_rows", "grad_accum", "steps", "warmup_steps", "data_dir",
            "eval_tokens", "heldout_tokens", "loader_buffer", "backend", "threads", "pass_rows",
            "checkpoint_every", "eval_every", "norm_eps"}


def die(msg):
    sys.stderr.write("torch_curve.py: %s\n" % msg)
    sys.exit(2)


def read_config(path):
    cfg = {}
    try:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                if "=" not in line:
                    die("%s:%d: not KEY = VALUE" % (path, n))
                k, v = (x.strip() for x in line.split("=", 1))
                cfg[k] = v
    except OSError as e:
        die("%s: %s" % (path, e.strerror))
    return cfg


def same_value(a, b):
    """a config value as written (supkit writes 1e-08 where baseline.cfg has
    1e-8): numbers equal as numbers, anything else as text"""
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def read_safetensors(path):
    """name -> fp32 tensor (bench/geometry_ref.py's reader: F32, F64, BF16)."""
    try:
        arrs = geometry_ref.load(path)
    except (OSError, ValueError, KeyError, struct.error) as e:
        die("%s: not a readable safetensors file (%s)" % (path, e))
    return {n: torch.from_numpy(a.astype(np.float32)) for n, a in arrs.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", required=True)
    ap.add_argument("--batches", required=True)
    ap.add_argument("--mm", choices=("fp32", "bf16"), required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: the run's)")
    ap.add_argument("-o", "--output", required=True)
    a = ap.parse_args()

    ccfg = read_config(os.path.join(a.run, "config.cfg"))
    base = read_config(os.path.join(HERE, "..", "..", "configs", "baseline.cfg"))
    for k, v in base.items():
        if k not in RUN_KEYS and not same_value(ccfg.get(k, v), v):
            die("%s: %s = %s: only the baseline arm is supported (%s = %s)" %
                (os.path.join(a.run, "config.cfg"), k, ccfg[k], k, v))
    keys = ["depth", "model_dim", "head_dim", "vocab_size", "seq_len"]
    cfg = TM.parse(["%s=%s" % (k, ccfg[k]) for k in keys] + ["norm_eps=%s" % ccfg["norm_eps"]])
    B, T = int(ccfg["batch_rows"]), int(ccfg["seq_len"])
    K, S, W = int(ccfg["grad_accum"]), int(ccfg["steps"]), int(ccfg["warmup_steps"])
    steps = a.steps if a.steps > 0 else S

    names, d, H, hd, ve = TM.spec(cfg)
    params = read_safetensors(os.path.join(a.run, "checkpoint", "params.safetensors"))
    for n, shape, _ in names:
        if n not in params or tuple(params[n].shape) != tuple(shape):
            die("%s: parameter %s missing or not of shape %s" % (a.run, n, shape))
    dev = torch.device(a.device)
    params = {n: params[n].to(dev) for n, _, _ in names}
    table = [(n, *group_of(n), shape) for n, shape, _ in names]

    rec = 2 * B * T * 4
    size = os.path.getsize(a.batches)
    if size % rec or size // rec < steps * K:
        die("%s: %d bytes: not %d whole batches of 2 x %d x %d int32" % (a.batches, size, steps * K, B, T))
    data = np.memmap(a.batches, dtype="<i4", mode="r").reshape(-1, 2, B, T)

    TM.MM_BF16 = a.mm == "bf16"
    torch.set_float32_matmul_precision("highest")   # fp32 products, no TF32
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
    k = (d / 768) ** -0.5
    state, losses = {}, []
    t0 = time.time()
    for t in range(steps):
        P = {n: v.clone().requires_grad_(True) for n, v in params.items()}
        total = 0.0
        for j in range(K):
            idx = np.asarray(data[t * K + j, 0], dtype=np.int64)
            tgt = np.asarray(data[t * K + j, 1], dtype=np.int64)
            loss = TM.forward(cfg, P, idx, tgt, torch.float32)
            (loss / K).backward()
            total += loss.item()
        losses.append(total / K)
        grads = {n: P[n].grad.detach() for n in params}
        _, _, lrm, mu, wd = TO.schedule(t, S=S, W=W)
        TO.step_all(table, params, grads, {}, {}, state, t, (lrm, mu, wd), {}, k)
        if (t + 1) % 25 == 0 or t + 1 == steps:
            sys.stderr.write("torch_curve %s: step %d/%d loss %.4f (%.1f s)\n" %
                             (a.mm, t + 1, steps, losses[-1], time.time() - t0))
    sec = time.time() - t0
    out = {"losses": losses, "mm": a.mm, "device": str(dev), "seconds": sec,
           "tokens_per_s": steps * K * B * T / sec, "torch": torch.__version__}
    tmp = a.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(out, f)
        f.write("\n")
    os.replace(tmp, a.output)


if __name__ == "__main__":
    main()
