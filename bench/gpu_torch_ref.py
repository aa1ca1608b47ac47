#!/usr/bin/env python3
"""gpu_torch_ref.py: PyTorch throughput reference for bench/bench_gpu.sh.

Our own PyTorch rendering of the benchmark GPT (docs/model.md: the
karpathy/autoresearch train.py architecture: wte + RMSNorm, resid/x0 lambdas,
value embeddings with 2*sigmoid gates on alternating layers, split-half RoPE,
QK-RMSNorm, sliding-window causal attention with the SSSL pattern and the last
layer full, relu^2 MLP, softcap-15 cross-entropy) trained with a MuonAdamW of
the same cost: AdamW on embeddings, lm_head and scalars; on the block
matrices Nesterov momentum, 5 quintic polar iterations in bf16 per shape
group (the cost of Polar Express), a NorMuon-style second moment and
cautious decoupled weight decay. bf16 autocast with fp32 master weights.

It measures tokens/s only (random tokens, no data loading, no evaluation) and
prints one "RESULT depth=L tokens_per_s=... step_s=... peak_mib=..." line, as
tests/gpu/gpu_bench.c does. Needs torch with CUDA; otherwise it says so and
exits 0. Not a copy of train.py: written from docs/model.md for this bench.

usage: gpu_torch_ref.py --depth L [--batch 64] [--seq 2048] [--accum 4]
                        [--steps 3] [--vocab 8192] [--budget SEC] [--compile]
"""
import argparse
import math
import sys
import time


def build(torch, depth, T, V):
    nn, F = torch.nn, torch.nn.functional
    d = (64 * depth + 127) // 128 * 128
    D = 128
    H = d // D

    def norm(x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1.1920928955078125e-07).to(x.dtype)

    def windows():
        w = [T // 2 if "SSSL"[i % 4] == "S" else T for i in range(depth)]
        w[-1] = T
        return w

    class Attn(nn.Module):
        def __init__(self, ve):
            super().__init__()
            self.q = nn.Linear(d, d, bias=False)
            self.k = nn.Linear(d, d, bias=False)
            self.v = nn.Linear(d, d, bias=False)
            self.proj = nn.Linear(d, d, bias=False)
            self.gate = nn.Linear(32, H, bias=False) if ve else None

        def forward(self, x, ve, cos, sin, mask):
            B, T_, _ = x.shape
            q = self.q(x).view(B, T_, H, D)
            k = self.k(x).view(B, T_, H, D)
            v = self.v(x).view(B, T_, H, D)
            if ve is not None:
                v = v + (2 * torch.sigmoid(self.gate(x[..., :32]))).unsqueeze(-1) * ve.view(B, T_, H, D)

            def rope(t):
                a, b = t[..., :D // 2], t[..., D // 2:]
                return torch.cat([a * cos + b * sin, -a * sin + b * cos], -1)
            q, k = norm(rope(q)), norm(rope(k))
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
            if mask is None:
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            return self.proj(y.transpose(1, 2).reshape(B, T_, d))

    class Block(nn.Module):
        def __init__(self, ve):
            super().__init__()
            self.attn = Attn(ve)
            self.fc = nn.Linear(d, 4 * d, bias=False)
            self.mproj = nn.Linear(4 * d, d, bias=False)

        def forward(self, x, ve, cos, sin, mask):
            x = x + self.attn(norm(x), ve, cos, sin, mask)
            return x + self.mproj(F.relu(self.fc(norm(x))).square())

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.is_ve = [i % 2 == (depth - 1) % 2 for i in range(depth)]
            self.wte = nn.Embedding(V, d)
            self.blocks = nn.ModuleList([Block(v) for v in self.is_ve])
            self.ves = nn.ModuleList([nn.Embedding(V, d) for v in self.is_ve if v])
            self.lm_head = nn.Linear(d, V, bias=False)
            self.resid = nn.Parameter(torch.ones(depth))
            self.x0l = nn.Parameter(torch.full((depth,), 0.1))
            inv = 1.0 / (10000 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
            f = torch.outer(torch.arange(T, dtype=torch.float32), inv)
            self.register_buffer("cos", f.cos().bfloat16()[None, :, None, :], persistent=False)
            self.register_buffer("sin", f.sin().bfloat16()[None, :, None, :], persistent=False)
            idx = torch.arange(T)
            self.masks = {}
            for w in set(windows()):
                if w < T:
                    self.masks[w] = (idx[None, :] <= idx[:, None]) & (idx[None, :] >= idx[:, None] - w)
            self.win = windows()

        def forward(self, idx, tgt):
            x = norm(self.wte(idx))
            x0, j = x, 0
            for i, blk in enumerate(self.blocks):
                x = self.resid[i] * x + self.x0l[i] * x0
                ve = None
                if self.is_ve[i]:
                    ve = self.ves[j](idx)
                    j += 1
                m = self.masks.get(self.win[i])
                x = blk(x, ve, self.cos, self.sin, None if m is None else m.to(x.device))
            logits = self.lm_head(norm(x)).float()
            logits = 15 * torch.tanh(logits / 15)
            return F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))

    return GPT()


def polar(torch, G, steps=5):
    """Quintic polar iteration in bf16 (cost of Polar Express), batched over dim 0."""
    a, b, c = 3.4445, -4.7750, 2.0315
    X = G.bfloat16()
    tall = X.size(-2) > X.size(-1)
    if tall:
        X = X.mT
    X = X / (X.norm(dim=(-2, -1), keepdim=True) * 1.02 + 1e-6)
    for _ in range(steps):
        A = X @ X.mT
        X = a * X + (b * A + c * A @ A) @ X
    return X.mT if tall else X


class MuonAdamW:
    def __init__(self, torch, model, lr=0.02, mom=0.95, beta2=0.95, wd=0.2):
        self.t = torch
        mats = [p for blk in model.blocks for p in blk.parameters()]
        ids = {id(p) for p in mats}
        rest = [p for p in model.parameters() if id(p) not in ids]
        try:
            self.adam = torch.optim.AdamW(rest, lr=0.004, betas=(0.8, 0.95), eps=1e-10,
                                          weight_decay=0.0, fused=True)
        except (TypeError, RuntimeError):
            self.adam = torch.optim.AdamW(rest, lr=0.004, betas=(0.8, 0.95), eps=1e-10, weight_decay=0.0)
        self.groups = {}
        for p in mats:
            self.groups.setdefault(tuple(p.shape), []).append(p)
        self.buf = {s: torch.zeros((len(ps),) + s, device=ps[0].device) for s, ps in self.groups.items()}
        self.v = {s: torch.zeros((len(ps), s[0], 1), device=ps[0].device) for s, ps in self.groups.items()}
        self.lr, self.mom, self.beta2, self.wd = lr, mom, beta2, wd

    def step(self):
        torch = self.t
        self.adam.step()
        with torch.no_grad():
            for s, ps in self.groups.items():
                P = torch.stack([p.data for p in ps])
                G = torch.stack([p.grad for p in ps])
                buf = self.buf[s]
                buf.lerp_(G, 1 - self.mom)
                U = polar(torch, G.lerp(buf, self.mom)).float()
                v = self.v[s]
                v.lerp_(U.pow(2).mean(-1, keepdim=True), 1 - self.beta2)
                U = U * torch.rsqrt(v + 1e-10)
                U = U * (U.norm(dim=(-2, -1), keepdim=True) ** -1) * math.sqrt(s[0] * s[1])
                scale = self.lr * max(1.0, s[0] / s[1]) ** 0.5
                mask = (U * P) > 0
                P.sub_(scale * U + self.lr * self.wd * P * mask)
                for p, q in zip(ps, P):
                    p.data.copy_(q)

    def zero_grad(self):
        self.adam.zero_grad(set_to_none=True)
        for ps in self.groups.values():
            for p in ps:
                p.grad = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--depth", type=int, required=True)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--budget", type=float, default=120)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("skipped: torch is not importable")
        return 0
    if not torch.cuda.is_available():
        print("skipped: torch %s has no CUDA device" % torch.__version__)
        return 0
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        print("skipped: torch %s lacks scaled_dot_product_attention (needs >= 2.0)" % torch.__version__)
        return 0
    dev = torch.device("cuda")
    torch.manual_seed(0)
    model = build(torch, a.depth, a.seq, a.vocab).to(dev)
    for e in [model.wte] + list(model.ves):
        e.to(torch.bfloat16)
    opt = MuonAdamW(torch, model)
    fwd = torch.compile(model) if a.compile else model
    tok = torch.randint(0, a.vocab, (a.batch, a.seq + 1), device=dev)
    x, y = tok[:, :-1].contiguous(), tok[:, 1:].contiguous()
    start = time.time()
    t0, done = None, 0
    for s in range(a.steps + 1):
        if s == 1:
            torch.cuda.synchronize()
            t0 = time.time()
        for _ in range(a.accum):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = fwd(x, y)
            (loss / a.accum).backward()
        opt.step()
        opt.zero_grad()
        torch.cuda.synchronize()
        if s >= 1:
            done += 1
        print("torch depth %d step %d loss %.4f (%.1f s)" % (a.depth, s, loss.item(), time.time() - start),
              file=sys.stderr)
        if time.time() - start > a.budget:
            break
    if done == 0:
        print("depth %d: budget spent in the warm-up step; no figure" % a.depth)
        return 0
    dt = (time.time() - t0) / done
    print("RESULT depth=%d batch=%d seq=%d accum=%d steps=%d tokens_per_s=%.0f step_s=%.4f peak_mib=%.0f" % (
        a.depth, a.batch, a.seq, a.accum, done, a.batch * a.seq * a.accum / dt, dt,
        torch.cuda.max_memory_allocated() / 1048576.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
