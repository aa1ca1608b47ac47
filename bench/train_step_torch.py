#!/usr/bin/python3
"""train_step_torch.py: the PyTorch side of bench/bench_train.sh.

Times one training step of the SAME model and optimizer as supkit's CPU
backend at the same config and thread count: the forward of
tests/reference/torch_model.py (imported: the parity reference of
trainer/model.c) with autograd's backward, grad_accum micro-steps of random
tokens, then MuonAdamW from tests/reference/torch_optim.py (imported:
adamw_step for wte / value_embeds (bf16 state) / lm_head / lambdas,
muon_step over the block matrices stacked by shape with the bf16 Polar
Express, as in the original). Eager PyTorch 1.13 on the CPU, fp32.

Prints one line: tok_s (median of the timed steps), step_s, min_s, the
peak RSS (resource.getrusage) in MiB and the RSS before the model is made
(start_rss_mib: the interpreter and libtorch). Leaves out: the arms (the benchmark
runs the dense baseline), the schedule (constant lr multipliers: the cost
of a step does not depend on them), evaluation.

usage: /usr/bin/python3 bench/train_step_torch.py THREADS WARMUP STEPS key=value...
  keys: depth model_dim head_dim vocab_size seq_len batch_rows grad_accum
"""
import os
import resource
import sys
import time

import numpy as np
import torch

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests", "reference"))
import torch_model  # noqa: E402
import torch_optim  # noqa: E402


def main():
    threads, warm, steps = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    kv, run = [], {"batch_rows": 8, "grad_accum": 1}
    for s in sys.argv[4:]:
        k, v = s.split("=", 1)
        if k in run:
            run[k] = int(v)
        else:
            kv.append(s)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0   # interpreter + torch
    cfg = torch_model.parse(kv)
    names, d, H, hd, ve = torch_model.spec(cfg)
    Bn, Tn, K, V = run["batch_rows"], cfg["seq_len"], run["grad_accum"], cfg["vocab_size"]
    P, store = {}, {}
    for n, shape, bf in names:
        v = torch.randn(shape) * (0.02 if len(shape) == 2 else 0.1)
        if n.endswith("lambdas"):
            v = torch.ones(shape)
        if bf:
            v = v.bfloat16().float()
        P[n] = v.requires_grad_(True)
        store[n] = bf
    k = (d / 768) ** -0.5
    lrs = {"lm_head.weight": 0.004 * k, "resid_lambdas": 0.005, "x0_lambdas": 0.5}
    matrices = [n for n, shape, bf in names if len(shape) == 2 and n.startswith("transformer.h.")]
    shapes = sorted({tuple(P[n].shape) for n in matrices})
    state, mstate = {}, {}
    rng = np.random.default_rng(1234)
    dts = []
    for s in range(warm + steps):
        t0 = time.perf_counter()
        for p in P.values():
            p.grad = None
        for _ in range(K):
            idx = rng.integers(0, V, size=(Bn, Tn), dtype=np.int64)
            tgt = rng.integers(0, V, size=(Bn, Tn), dtype=np.int64)
            loss = torch_model.forward(cfg, P, idx, tgt, torch.float32) / K
            loss.backward()
        with torch.no_grad():
            for n, shape, bf in names:
                if n in matrices:
                    continue
                st = state.setdefault(n, {})
                zdt = torch.bfloat16 if bf else torch.float32
                if not st:
                    st.update(step=0, exp_avg=torch.zeros(shape, dtype=zdt),
                              exp_avg_sq=torch.zeros(shape, dtype=zdt))
                g = P[n].grad.bfloat16() if bf else P[n].grad
                lr = 0.6 * k if bf else lrs.get(n, 0.5)
                b1 = 0.96 if n == "x0_lambdas" else 0.8
                newp = torch_optim.adamw_step(P[n].detach(), g, st, lr, b1, 0.95, 1e-10, False,
                                              {}, s, bf, False)
                P[n].copy_(newp.bfloat16().float() if bf else newp)
            for shape in shapes:
                group = [n for n in matrices if tuple(P[n].shape) == shape]
                st = mstate.setdefault(shape, {})
                if not st:
                    st["m"] = torch.zeros(len(group), *shape)
                    ss = (len(group), shape[0], 1) if shape[0] >= shape[1] else (len(group), 1, shape[1])
                    st["v"] = torch.zeros(ss)
                red = -1 if shape[0] >= shape[1] else -2
                sg = torch.stack([P[n].grad for n in group])
                sp = torch.stack([P[n].detach() for n in group])
                lr = 0.04 * max(1.0, shape[0] / shape[1]) ** 0.5
                torch_optim.muon_step(sg, sp, st["m"], st["v"], 0.95, lr, 0.2, 0.95, red, {}, s)
                for i, n in enumerate(group):
                    P[n].copy_(sp[i])
        if s >= warm:
            dts.append(time.perf_counter() - t0)
    dts.sort()
    med = float(np.median(dts))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print("tok_s=%.1f step_s=%.4f min_s=%.4f steps=%d tokens_per_step=%d loss=%.4f peak_rss_mib=%.1f "
          "start_rss_mib=%.1f" % (Bn * Tn * K / med, med, dts[0], steps, Bn * Tn * K, loss.item() * K, rss, rss0))


if __name__ == "__main__":
    main()
