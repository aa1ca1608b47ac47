"""train.py: the baseline trainer of a small-model pretraining study.

Every run of the study is this file plus a small edit; the published
supplement ships the edits as `diff -U 0` output (see ../diffs.json).
This file is an example for `supkit replay`; it is not meant to be run.
"""

import math
import os
import time
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    depth: int = 6
    width: int = 768
    heads: int = 6
    head_dim: int = 128
    vocab: int = 32768
    seq_len: int = 2048
    batch_rows: int = 32
    accum_steps: int = 1
    steps: int = 3000
    warmup_frac: float = 0.0
    cooldown_frac: float = 0.4
    lr_matrix: float = 0.02
    lr_embed: float = 0.3
    lr_scalar: float = 0.5
    weight_decay: float = 0.2
    value_embeds: bool = True
    softcap: float = 15.0
    norm_eps: float = 2.0 ** -23
    seed: int = 0


def rms_norm(x, eps):
    # x is (B, T, C); normalise over the last axis, no learned gain
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def rotary(x, base=10000.0):
    # x is (B, H, T, hd); rotate pairs of channels by position
    hd = x.size(-1)
    t = torch.arange(x.size(-2), device=x.device, dtype=torch.float32)
    inv = base ** (-torch.arange(0, hd, 2, device=x.device, dtype=torch.float32) / hd)
    ang = torch.outer(t, inv)
    cos, sin = ang.cos()[None, None], ang.sin()[None, None]
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), -1).flatten(-2)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        inner = cfg.heads * cfg.head_dim
        self.cfg = cfg
        self.c_q = nn.Linear(cfg.width, inner, bias=False)
        self.c_k = nn.Linear(cfg.width, inner, bias=False)
        self.c_v = nn.Linear(cfg.width, inner, bias=False)
        self.c_proj = nn.Linear(inner, cfg.width, bias=False)
        nn.init.zeros_(self.c_proj.weight)

    def forward(self, x, ve=None):
        B, T, C = x.shape
        H, hd = self.cfg.heads, self.cfg.head_dim
        q = self.c_q(x).view(B, T, H, hd).transpose(1, 2)
        k = self.c_k(x).view(B, T, H, hd).transpose(1, 2)
        v = self.c_v(x).view(B, T, H, hd).transpose(1, 2)
        if ve is not None:
            v = v + ve.view(B, T, H, hd).transpose(1, 2)
        q = rotary(rms_norm(q, self.cfg.norm_eps))
        k = rotary(rms_norm(k, self.cfg.norm_eps))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(B, T, H * hd))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.width, 4 * cfg.width, bias=False)
        self.c_proj = nn.Linear(4 * cfg.width, cfg.width, bias=False)
        nn.init.zeros_(self.c_proj.weight)

    def forward(self, x):
        return self.c_proj(F.relu(self.c_fc(x)).square())


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = Attention(cfg)
        self.mlp = MLP(cfg)
        self.eps = cfg.norm_eps

    def forward(self, x, ve=None):
        x = x + self.attn(rms_norm(x, self.eps), ve)
        return x + self.mlp(rms_norm(x, self.eps))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab, cfg.width)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
        self.value_embeds = nn.ModuleList(
            nn.Embedding(cfg.vocab, cfg.heads * cfg.head_dim) for _ in range(2)
        ) if cfg.value_embeds else None
        self.lm_head = nn.Linear(cfg.width, cfg.vocab, bias=False)

    def forward(self, idx, targets):
        x = rms_norm(self.wte(idx), self.cfg.norm_eps)
        for i, block in enumerate(self.blocks):
            ve = None
            if self.value_embeds is not None and i in (0, self.cfg.depth - 1):
                ve = self.value_embeds[0 if i == 0 else 1](idx)
            x = block(x, ve)
        logits = self.lm_head(rms_norm(x, self.cfg.norm_eps)).float()
        logits = self.cfg.softcap * torch.tanh(logits / self.cfg.softcap)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def lr_scale(step, cfg):
    # constant after warmup, linear cooldown to zero over the last fraction
    p = step / cfg.steps
    if cfg.warmup_frac > 0 and p < cfg.warmup_frac:
        return p / cfg.warmup_frac
    if p > 1 - cfg.cooldown_frac:
        return max(0.0, (1 - p) / cfg.cooldown_frac)
    return 1.0


def param_groups(model, cfg):
    matrices = [p for n, p in model.named_parameters() if p.ndim == 2 and "blocks" in n]
    embeds = [p for n, p in model.named_parameters() if "wte" in n or "value_embeds" in n]
    head = [model.lm_head.weight]
    return [
        dict(params=matrices, lr=cfg.lr_matrix, weight_decay=cfg.weight_decay),
        dict(params=embeds, lr=cfg.lr_embed, weight_decay=0.0),
        dict(params=head, lr=cfg.lr_scalar * 0.01, weight_decay=0.0),
    ]


def train(cfg, batches):
    torch.manual_seed(cfg.seed)
    model = GPT(cfg)
    opt = torch.optim.AdamW(param_groups(model, cfg), betas=(0.8, 0.95), eps=1e-10)
    base_lrs = [g["lr"] for g in opt.param_groups]
    t0 = time.time()
    for step in range(cfg.steps):
        for g, lr in zip(opt.param_groups, base_lrs):
            g["lr"] = lr * lr_scale(step, cfg)
        loss = 0.0
        for _ in range(cfg.accum_steps):
            idx, targets = next(batches)
            part = model(idx, targets) / cfg.accum_steps
            part.backward()
            loss += part.item()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step % 100 == 0:
            print(f"step {step} loss {loss:.4f} time {time.time() - t0:.1f}s")
    return model


if __name__ == "__main__":
    cfg = Config(seed=int(os.environ.get("SEED", "0")))
    print(f"{cfg.depth} layers, width {cfg.width}, {cfg.steps} steps, seed {cfg.seed}")
