#!/usr/bin/python3
"""torch_optim.py: independent reference for trainer/optim.c (docs/model.md).

Writes the fixtures of tests/unit/trainer/test_optim.c into OUTDIR:
  inputs.txt      the tiny parameter table (every optimizer group), its
                  initial values, 3 gradient sets, OE visit counts, masks and
                  the schedule values used at steps t = 0, 1, 2
  case_<arm>.txt  the parameters after each of the 3 steps for one arm
  sched.txt       schedule values (train.py's functions, step-based progress)
  ops.txt         BiEq, MuonEq-R/RC, Neumann-Gram and the OE table-RMS step
                  on random and adversarial matrices (zero rows, one visited
                  row, all rows equal, skewed scales) in numpy float64, and
                  Polar Express (bf16 eager, bf16 compiled, fp32, fp64) on
                  random matrices

The optimizer is karpathy/autoresearch train.py's adamw_step_fused,
muon_step_fused and MuonAdamW._step_muon written out again in eager PyTorch
1.13 on the CPU (no torch.compile), with these deliberate deviations, each
needed to reproduce the benchmark's GPU arithmetic on a CPU:
  * bf16 matmuls are computed as (a.float() @ b.float()).bfloat16(): fp32
    accumulation, one rounding (cuBLAS semantics). PyTorch 1.13's CPU bf16
    matmul accumulates differently (measured: up to 1.0 abs error on a 64x64
    Gram), which the benchmark never does.
  * the Frobenius norm of the bf16 X is X.float().norm().bfloat16() (fp32
    accumulation as on the GPU; PyTorch 1.13's CPU bf16 norm differs from
    that by one bf16 ulp in about 1 case in 10, measured).
  * lerp_ weights whose dtype differs from the buffer are passed as Python
    floats of the same value (eager refuses mixed-dtype weights).
  * bf16 AdamW (embed_state = bf16): the original's fused kernel loads the
    bf16 p, grad, exp_avg, exp_avg_sq, computes in fp32 and stores each
    result rounded to bf16 once; written out here as such.
bf16 Polar Express comes in the two arithmetics of the config key
polar_arith: "compiled" (polar_express_compiled: what muon_step_fused did
under torch.compile on CUDA, each fused elementwise expression computed in
fp32 from bf16 inputs with fp32 scalars and rounded once; the default, as in
the C trainer) and "eager" (PyTorch's own eager bf16 ops, the Python scalars
rounded to bf16; case base_bf16).
Arms follow supkit-train(1), THE ARMS (BiEq, MuonEq-R/RC, fp32 polar, Neumann-Gram at both
sites, Table-Neumann, OE, step-0 modes, embed_state, Zeta, MALT with its momentum and
EMA-free variants, Muon2-F, NormPre-G) and run in float64 for
the fp64 case (every tensor float64, no bf16 anywhere). matrix_optim = adamw steps the
block matrices with torch.optim.AdamW itself (an independent form of the AdamW update).

Usage: /usr/bin/python3 tests/reference/torch_optim.py OUTDIR
"""
import math
import os
import sys

import numpy as np
import torch

POLAR = [
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
]

MODEL_DIM = 192          # set in every case: k = (192/768)^-0.5 = 2
K = (MODEL_DIM / 768) ** -0.5
V, D = 12, 8

# name, group, store, shape
TABLE = [
    ("transformer.wte.weight", "embed", "bf16", (V, D)),
    ("transformer.h.0.attn.c_q.weight", "matrix", "f32", (D, D)),
    ("transformer.h.0.attn.c_k.weight", "matrix", "f32", (D, D)),
    ("transformer.h.0.mlp.c_fc.weight", "matrix", "f32", (2 * D, D)),
    ("transformer.h.0.mlp.c_proj.weight", "matrix", "f32", (D, 2 * D)),
    ("transformer.h.0.attn.ve_gate.weight", "matrix", "f32", (2, 4)),
    ("value_embeds.0.weight", "embed", "bf16", (V, D)),
    ("lm_head.weight", "lm_head", "f32", (V, D)),
    ("resid_lambdas", "resid", "f32", (2,)),
    ("x0_lambdas", "scalar", "f32", (2,)),
    ("oe.0.weight", "oe", "bf16", (10, 4)),
    ("q_tau", "qtau", "f32", (2, 1, 4)),
    ("wte_lambdas", "scalar", "f32", (2,)),
    ("out_lambdas", "scalar", "f32", (2,)),
]
STEPS = 3


def make_inputs():
    g = torch.Generator().manual_seed(1234)
    init, grads, counts, masks = {}, [dict() for _ in range(STEPS)], [dict() for _ in range(STEPS)], {}
    for name, group, store, shape in TABLE:
        n = int(np.prod(shape))
        if group == "oe":
            w = (torch.randn(n, generator=g) * 0.05).bfloat16().float()
        elif store == "bf16":
            w = torch.randn(n, generator=g).bfloat16().float()
        elif name == "lm_head.weight":
            w = torch.randn(n, generator=g) * 0.01
        elif group == "matrix":
            w = (torch.rand(n, generator=g) * 2 - 1) * math.sqrt(3 / D)
        elif name == "resid_lambdas":
            w = torch.ones(n) + torch.randn(n, generator=g) * 0.01
        elif name == "q_tau":
            w = torch.zeros(n)
        else:
            w = torch.randn(n, generator=g) * 0.1
        if name == "q_tau":
            m = torch.zeros(n, dtype=torch.uint8)
            m[:4] = 1          # layer 0 frozen (l0-style mask)
            m[5] = 1
            masks[name] = m
        init[name] = w.reshape(shape)
        for t in range(STEPS):
            gr = torch.randn(n, generator=g) * (0.3 if group == "matrix" else 0.05)
            if name in masks:
                gr = gr * (1 - masks[name].float())
            if group == "oe":
                rows = shape[0]
                c = torch.randint(0, 4, (rows,), generator=g)
                c[0] = 0
                c[1] = 3
                counts[t][name] = c
                gr = gr.reshape(shape) * c.float()[:, None]   # summed over visits
                gr = gr.reshape(-1)
            grads[t][name] = gr.reshape(shape)
    scheds = [(1.0, 0.85, 0.2), (0.75, 0.9, 0.15), (0.5, 0.93, 0.1)]  # lr_mult, mu, wd
    return init, grads, counts, masks, scheds


def fmt(x, f32=False):
    """Values as text: fp32 tensors with 9 significant digits (exact round
    trip through strtof), everything else with Python's shortest repr."""
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    if f32:
        return " ".join("%.9g" % v for v in a)
    return " ".join(repr(float(v)) for v in a)


def mm(a, b, bf):
    if bf:
        return (a.float() @ b.float()).bfloat16()
    return a @ b


def rbf(x):
    """fp32 x rounded to bf16 (nearest even), kept as fp32 values."""
    return x.bfloat16().float()


def f32(v):
    """A Python float as the fp32 constant Inductor's kernels use."""
    return torch.tensor(v, dtype=torch.float32)


def aol_scale(X, bf):
    """Turbo-Muon's AOL scaling of X (Boissin et al. 2025, as paper 002
    section 3.3 adapts it): A0 = X X^T (m <= n) or X^T X (m > n) with the
    matmul's output dtype, s = (|A0| 1 + 1e-10)^-1/2 / 1.02 computed in
    fp32 (fp64 for fp64 X) and cast to X's dtype, rows (m <= n) or columns
    (m > n) of X times s, rounded to X's dtype."""
    tall = X.size(-2) > X.size(-1)
    A = mm(X.mT, X, bf) if tall else mm(X, X.mT, bf)
    wdt = torch.float64 if X.dtype == torch.float64 else torch.float32
    s = ((A.to(wdt).abs().sum(dim=-1) + 1e-10).rsqrt() / 1.02).to(X.dtype)
    if tall:
        return (X.to(wdt) * s.to(wdt)[None, :]).to(X.dtype)
    return (X.to(wdt) * s.to(wdt)[:, None]).to(X.dtype)


def polar_express_compiled(g, norm="polar", steps=5):
    """train.py's bf16 Polar Express as torch.compile ran it on CUDA: every
    realized tensor is bf16 (X = g.bfloat16(), the norm, each matmul's
    output), each fused elementwise expression is computed in fp32 from its
    bf16 inputs with the Python scalars as fp32 constants and rounded to
    bf16 once. Values are fp32 tensors holding bf16 values throughout.
    norm: the scaling before the iterations (polar_norm: polar, fp32, aol);
    steps: the first that many iterations (polar_steps)."""
    if norm == "fp32":
        gf = g.float()
        X = rbf(gf / (gf.norm(dim=(-2, -1), keepdim=True) * f32(1.02) + f32(1e-6)))
    elif norm == "aol":
        X = aol_scale(g.bfloat16(), True).float()
    else:
        X = rbf(g.float())
        nrm = rbf(X.norm(dim=(-2, -1), keepdim=True))            # fp32 accumulation, bf16 result
        X = rbf(X / (nrm * f32(1.02) + f32(1e-6)))
    tall = g.size(-2) > g.size(-1)
    for a, b, c in POLAR[:steps]:
        A = rbf(X.mT @ X) if tall else rbf(X @ X.mT)
        B = rbf(f32(b) * A + f32(c) * rbf(A @ A))
        P = rbf(X @ B) if tall else rbf(B @ X)
        X = rbf(f32(a) * X + P)
    return X


def polar_express(g, dt, arith="eager", norm="polar", steps=5):
    """train.py's Polar Express; dt = torch.bfloat16, float32 or float64. For
    bf16, arith = "eager" (eager PyTorch's bf16 arithmetic, the Python
    scalars rounded to bf16 by each op) or "compiled" (torch.compile on
    CUDA: polar_express_compiled). norm and steps: polar_express_compiled's
    (fp64: fp32 is the plain normalisation)."""
    bf = dt == torch.bfloat16
    if bf and arith == "compiled":
        return polar_express_compiled(g, norm, steps)
    if norm == "aol":
        X = aol_scale(g.to(dt), bf)
    elif norm == "fp32" and dt != torch.float64:
        gf = g.float()
        X = (gf / (gf.norm(dim=(-2, -1), keepdim=True) * 1.02 + 1e-6)).to(dt)
    else:
        X = g.to(dt)
        if bf:   # fp32-accumulated norm rounded to bf16 (see the file comment)
            nrm = X.float().norm(dim=(-2, -1), keepdim=True).bfloat16()
        else:
            nrm = X.norm(dim=(-2, -1), keepdim=True)
        X = X / (nrm * 1.02 + 1e-6)
    if g.size(-2) > g.size(-1):
        for a, b, c in POLAR[:steps]:
            A = mm(X.mT, X, bf)
            B = b * A + c * mm(A, A, bf)
            X = a * X + mm(X, B, bf)
    else:
        for a, b, c in POLAR[:steps]:
            A = mm(X, X.mT, bf)
            B = b * A + c * mm(A, A, bf)
            X = a * X + mm(B, X, bf)
    return X


def homotopy(t, tau):
    return 1.0 if tau <= 0 else min(t / tau, 1.0) ** 2


def bieq(G, a, passes=2, sides="both"):
    for _ in range(passes):
        r = G.square().mean(dim=-1, keepdim=True)
        rh = r / (r.mean(dim=-2, keepdim=True) + 1e-30)
        G = G * ((1 - a) + a * (rh + 1e-4)).rsqrt()
        if sides == "rows":
            continue
        c = G.square().mean(dim=-2, keepdim=True)
        ch = c / (c.mean(dim=-1, keepdim=True) + 1e-30)
        G = G * ((1 - a) + a * (ch + 1e-4)).rsqrt()
    return G


def muoneq_r(G):
    return G * (G.square().sum(dim=-1, keepdim=True) + 1e-8).rsqrt()


def muoneq_rc(G):
    r = (G.square().sum(dim=-1, keepdim=True) + 1e-8).rsqrt()
    c = (G.square().sum(dim=-2, keepdim=True) + 1e-8).rsqrt()
    return G * r * c


def neumann(U, a):
    u = U.mean(dim=0, keepdim=True)
    mu = u / (u.norm() + 1e-30)
    Up = (U @ mu.T) @ mu
    Uo = U - Up
    G = Uo.T @ Uo
    Hm = G / (G.norm() + 1e-30)
    Uw = Uo @ (torch.eye(U.shape[1], dtype=U.dtype, device=U.device) - 0.5 * a * Hm)
    return Up + (Uo.norm() / (Uw.norm() + 1e-30)) * Uw


def zeta_whiten(g, grads, zeta_v, t):
    """Zeta as paper 002 section 3.3 adapts it (Chen et al. 2026): the
    second moment of the raw gradients, V = 0.99 V + 0.01 grads^2 in V's
    dtype (in place), then g / (sqrt(V / (1 - 0.99^(t+1))) + 1e-8) at the
    0-based step t."""
    zeta_v.mul_(0.99).addcmul_(grads, grads, value=0.01)
    bc = 1 - 0.99 ** (t + 1)
    return g / ((zeta_v / bc).sqrt() + 1e-8)


def malt_pq(grads, ml, mr, beta, eps):
    """MALT's P and Q (paper 004 #2c, adapting Wu et al. 2026, Alg. 1) from
    the raw gradients: the running EMAs of the squared row and column norms,
    l = beta l + (1 - beta) sum_j g_ij^2, r = beta r + (1 - beta) sum_i g_ij^2
    (in place, in their dtype), P = (l + eps)^-1/8, Q = (r + eps)^-1/8."""
    sq = grads.square()
    ml.mul_(beta).add_((1 - beta) * sq.sum(dim=-1, keepdim=True))
    mr.mul_(beta).add_((1 - beta) * sq.sum(dim=-2, keepdim=True))
    return (ml + eps) ** -0.125, (mr + eps) ** -0.125


def malt_pq_instant(g, eps):
    """MALT without EMAs (paper 004 #2d, malt_beta = 0): P and Q from this
    step's squared row and column norms of g, computed in g's dtype,
    P = (sum_j g_ij^2 + eps)^-1/8, Q = (sum_i g_ij^2 + eps)^-1/8."""
    sq = g.square()
    return (sq.sum(dim=-1, keepdim=True) + eps) ** -0.125, (sq.sum(dim=-2, keepdim=True) + eps) ** -0.125


def malt_map_back(X, P, Q):
    """D = P X Q grafted to X's Frobenius norm, computed in fp64 from X and
    returned in X's dtype."""
    Xd = X.double()
    D = P.double() * Xd * Q.double()
    k = Xd.norm(dim=(-2, -1), keepdim=True) / D.norm(dim=(-2, -1), keepdim=True)
    return (D * k).to(X.dtype)


def muon2f_precondition(g, buf, red_dim):
    """Muon2-F as paper 002 section 3.3 (exp53) adapts it (Liu et al. 2026):
    second_momentum_buffer.lerp_(g.square().mean(dim=red_dim), 1 - beta2),
    beta2 = 0.95, on its own buffer (in place), and g * buffer^-1/2 before
    the polar step (the buffer clamped at 1e-10 as NorMuon's is)."""
    buf.lerp_(g.square().mean(dim=red_dim, keepdim=True), 1 - 0.95)
    return g * buf.clamp_min(1e-10).rsqrt()


def normpre_g(g, W, t, tangent):
    """NormPre-G's pre-polar transform (paper 004 #2e, adapting Gong et al.
    2026, Alg. 1): the relaxed tangent x_i = m_i - <m_i, w_i> w_i per row
    (neuron) i of the weights W (left out for #2f), then the one-sided
    marginal normalisation alternating with k_t = t mod 2: rows at even t,
    columns at odd t, x (sum x^2 + 1e-8)^-1/2."""
    if tangent:
        g = g - (g * W).sum(dim=-1, keepdim=True) * W
    dim = -1 if t % 2 == 0 else -2
    return g * (g.square().sum(dim=dim, keepdim=True) + 1e-8).rsqrt()


def muon_step(stacked_grads, stacked_params, momentum_buffer, second_momentum_buffer,
              momentum, lr, wd, beta2, red_dim, arm, t, zeta_v=None, malt=None, m2f=None):
    """train.py muon_step_fused, eager, with the pre-polar arms and polar dtype
    (zeta_v: Zeta's second moment, zeta = 1; m2f: Muon2-F's buffer)."""
    f64 = stacked_params.dtype == torch.float64
    pdt = torch.float64 if f64 else (torch.float32 if arm.get("polar") == "fp32" else torch.bfloat16)
    dev = stacked_params.device
    raw = stacked_grads.clone()
    momentum_t = torch.tensor(momentum, dtype=stacked_params.dtype, device=dev)
    momentum_buffer.lerp_(stacked_grads, 1 - momentum_t)
    g = stacked_grads.lerp_(momentum_buffer, momentum_t)
    if zeta_v is not None:
        g = zeta_whiten(g, raw, zeta_v, t)
    if arm.get("malt"):   # statistics of the raw gradient or (#2d) of the Nesterov output g
        src = g if arm.get("malt_input", "grad") == "momentum" else raw
        if malt is not None:
            P, Q = malt_pq(src, malt[0], malt[1], arm.get("malt_beta", 0.95), arm.get("malt_eps", 1e-8))
        else:
            P, Q = malt_pq_instant(src, arm.get("malt_eps", 1e-8))
        g = P * g * Q
    if m2f is not None:
        g = muon2f_precondition(g, m2f, red_dim)
    if arm.get("normpre_g"):
        g = normpre_g(g, stacked_params, t, arm.get("normpre_tangent", 1))
    eq = arm.get("muoneq", "off")
    if arm.get("equil_scope", "all") == "square" and g.size(-2) != g.size(-1):
        eq = "off"
    if eq == "bieq":
        g = torch.stack([bieq(x, homotopy(t, arm["bieq_tau"]), arm.get("bieq_passes", 2),
                              arm.get("bieq_sides", "both")) for x in g])
    elif eq == "r":
        g = torch.stack([muoneq_r(x) for x in g])
    elif eq == "rc":
        g = torch.stack([muoneq_rc(x) for x in g])
    arith = arm.get("polar_arith", "compiled")
    norm, steps = arm.get("polar_norm", "polar"), arm.get("polar_steps", 5)
    g = torch.stack([polar_express(x, pdt, arith, norm, steps) for x in g]).to(pdt)
    if arm.get("post_polar", "polar") == "fp32" and not f64:
        g = g.float()   # NorMuon and the update in fp32 on the polar output
    if arm.get("malt"):
        g = malt_map_back(g, P, Q)
    if not arm.get("normuon", 1):   # no NorMuon: the update takes X as it is
        lr = torch.tensor(lr, dtype=stacked_params.dtype, device=dev).to(g.dtype)
        wd = torch.tensor(wd, dtype=stacked_params.dtype, device=dev).to(g.dtype)
        mask = (g * stacked_params) >= 0
        stacked_params.sub_(lr * g + lr * wd * stacked_params * mask)
        return
    beta2 = torch.tensor(beta2, dtype=stacked_params.dtype, device=dev).to(g.dtype)
    v_mean = g.to(stacked_params.dtype).square().mean(dim=red_dim, keepdim=True)
    red_dim_size = g.size(red_dim)
    v_norm_sq = v_mean.sum(dim=(-2, -1), keepdim=True) * red_dim_size
    v_norm = v_norm_sq.sqrt()
    second_momentum_buffer.lerp_(v_mean.to(dtype=second_momentum_buffer.dtype), float(1 - beta2))
    step_size = second_momentum_buffer.clamp_min(1e-10).rsqrt()
    scaled_sq_sum = (v_mean * red_dim_size) * step_size.to(stacked_params.dtype).square()
    v_norm_new = scaled_sq_sum.sum(dim=(-2, -1), keepdim=True).sqrt()
    final_scale = step_size * (v_norm / v_norm_new.clamp_min(1e-10))
    g = g * final_scale.to(g.dtype)
    lr = torch.tensor(lr, dtype=stacked_params.dtype, device=dev).to(g.dtype)
    wd = torch.tensor(wd, dtype=stacked_params.dtype, device=dev).to(g.dtype)
    mask = (g * stacked_params) >= 0
    stacked_params.sub_(lr * g + lr * wd * stacked_params * mask)


def adamw_step(p, grad, st, lr, b1, b2, eps, whiten, arm, t, bf16_state, f64):
    """train.py adamw_step_fused (eager; wd = 0 for every AdamW group)."""
    sdt = torch.float64 if f64 else torch.float32
    if whiten and arm.get("neumann_site") == "gradient":
        grad = neumann(grad.to(sdt), homotopy(t, arm["neumann_tau"]))
    st["step"] += 1
    step_t = torch.tensor(float(st["step"]), dtype=sdt, device=p.device)
    lr_t, beta1_t, beta2_t, eps_t = (torch.tensor(x, dtype=sdt, device=p.device) for x in (lr, b1, b2, eps))
    bias1 = 1 - beta1_t ** step_t
    bias2 = 1 - beta2_t ** step_t
    step_size = lr_t / bias1
    if bf16_state:   # fused kernel: fp32 math on bf16 loads, one rounding per store
        m = st["exp_avg"].float().lerp(grad.float(), 1 - beta1_t)
        v = st["exp_avg_sq"].float().lerp(grad.float().square(), 1 - beta2_t)
        st["exp_avg"], st["exp_avg_sq"] = m.bfloat16(), v.bfloat16()
    else:
        st["exp_avg"].lerp_(grad, 1 - beta1_t)
        st["exp_avg_sq"].lerp_(grad.square(), 1 - beta2_t)
        m, v = st["exp_avg"], st["exp_avg_sq"]
    denom = (v / bias2).sqrt() + eps_t
    U = m / denom
    if whiten and arm.get("neumann_site", "direction") == "direction":
        U = neumann(U, homotopy(t, arm["neumann_tau"]))
    newp = p.to(sdt) - step_size * U
    return newp


def oe_step(p, grad, counts, eta, arm, t, f64):
    sdt = torch.float64 if f64 else torch.float32
    vis = counts > 0
    if vis.any():
        gbar = grad.to(sdt)[vis] / counts[vis].to(sdt)[:, None]
        if arm.get("table_neumann"):
            gbar = neumann(gbar, homotopy(t, arm["neumann_tau"]))
        R = gbar.square().mean().sqrt().clamp_min(1e-30)
        eta_t = torch.tensor(eta, dtype=sdt, device=p.device)
        new = p.to(sdt).clone()
        new[vis] = new[vis] - eta_t * (gbar / R)
        p = new if f64 else new.bfloat16().float()
    return p


def group_lrs(k):
    """Base learning rates of the groups for k = (model_dim / 768) ** -0.5."""
    return {"lm_head": 0.004 * k, "embed": 0.6 * k, "resid": 0.005, "scalar": 0.5, "qtau": 0.02,
            "matrix": 0.04, "oe": 0.6 * k}


def step_all(table, params, grads, counts, masks, state, t, sched, arm, k):
    """One MuonAdamW step at 0-based step t over table [(name, group, store,
    shape)]: params (name -> tensor) updated in place from grads (name ->
    tensor), counts (OE tables), masks (frozen entries), state (kept between
    steps), sched = (lr_mult, momentum, muon wd) of step t."""
    f64 = arm.get("dtype") == "fp64"
    fdt = torch.float64 if f64 else torch.float32
    embed_bf16 = not f64 and arm.get("embed_state", "bf16") == "bf16"
    lrs = group_lrs(k)
    step0 = arm.get("step0", "none")
    shapes = sorted({tuple(s) for n, gr, st, s in table if gr == "matrix"})
    lr_mult, mom, wd = sched
    for name, group, store, shape in table:
        if group in ("matrix", "oe"):
            continue
        s0 = t == 0 and step0 != "none" and (
            name in ("wte_lambdas", "out_lambdas") or
            (step0 == "nostep0_all" and name in ("resid_lambdas", "x0_lambdas")))
        if s0 and step0 in ("nostep0", "nostep0_all"):
            continue          # p.grad is None at step 0
        bf16_state = embed_bf16 and store == "bf16"
        st = state.setdefault(name, {})
        if not st:
            zdt = torch.bfloat16 if bf16_state else fdt
            dev = params[name].device
            st.update(step=0, exp_avg=torch.zeros(shape, dtype=zdt, device=dev),
                      exp_avg_sq=torch.zeros(shape, dtype=zdt, device=dev))
        grad = grads[name].to(fdt)
        if bf16_state:
            grad = grad.bfloat16()
        b1 = 0.96 if group == "scalar" else 0.8
        lr = lrs[group] * lr_mult
        whiten = arm.get("neumann", 0) and group in ("embed", "lm_head")
        before = params[name].clone()
        newp = adamw_step(params[name], grad, st, lr, b1, 0.95, 1e-10, whiten, arm, t,
                          bf16_state, f64)
        if name in masks:   # frozen entries held at 0
            newp = newp * (1 - masks[name].to(newp.dtype).reshape(shape))
        params[name] = newp.bfloat16().to(fdt) if bf16_state else newp.to(fdt)
        if s0 and step0 == "mom_only_nodisp":
            params[name] = before
        if s0 and step0 == "disp_only_nomom":
            st.clear()
        if s0 and step0 == "disp_stepcount_nomom":
            st["exp_avg"].zero_()
            st["exp_avg_sq"].zero_()
    if arm.get("matrix_optim") == "adamw":
        matrix_adamw(table, params, grads, state, lrs["matrix"] * lr_mult, fdt)
        shapes = []
    for shape in shapes:
        names = [n for n, gr, st_, s in table if gr == "matrix" and tuple(s) == shape]
        key = "muon" + str(shape)
        st = state.setdefault(key, {})
        if not st:
            dev = params[names[0]].device
            st["momentum_buffer"] = torch.zeros(len(names), *shape, dtype=fdt, device=dev)
            sshape = (len(names), shape[-2], 1) if shape[-2] >= shape[-1] else (len(names), 1, shape[-1])
            st["second_momentum_buffer"] = torch.zeros(sshape, dtype=fdt, device=dev)
            if arm.get("zeta"):
                st["zeta_v"] = torch.zeros(len(names), *shape, dtype=fdt, device=dev)
            if arm.get("malt") and arm.get("malt_beta", 0.95) > 0:
                st["malt"] = (torch.zeros(len(names), shape[0], 1, dtype=fdt, device=dev),
                              torch.zeros(len(names), 1, shape[1], dtype=fdt, device=dev))
            if arm.get("muon2f"):
                st["m2f"] = torch.zeros(sshape, dtype=fdt, device=dev)
        red_dim = -1 if shape[-2] >= shape[-1] else -2
        sg = torch.stack([grads[n].to(fdt) for n in names])
        sp = torch.stack([params[n] for n in names])
        lr = 0.04 * lr_mult * max(1.0, shape[-2] / shape[-1]) ** 0.5
        if not f64:   # the 0-d fp32 tensors of MuonAdamW
            lr, mom_, wd_ = (float(np.float32(x)) for x in (lr, mom, wd))
        else:
            mom_, wd_ = mom, wd
        muon_step(sg, sp, st["momentum_buffer"], st["second_momentum_buffer"],
                  mom_, lr, wd_, 0.95, red_dim, arm, t, st.get("zeta_v"), st.get("malt"), st.get("m2f"))
        for i, n in enumerate(names):
            params[n] = sp[i].clone()
    for name, group, store, shape in table:
        if group == "oe":
            eta = lrs["oe"] * lr_mult
            if not f64:
                eta = float(np.float32(eta))
            params[name] = oe_step(params[name], grads[name], counts[name], eta, arm, t, f64)


def matrix_adamw(table, params, grads, state, lr, fdt):
    """matrix_optim = adamw (paper 004's pure AdamW run): every block matrix
    stepped by torch.optim.AdamW itself (one optimizer a matrix, kept in
    state), lr = matrix lr x lr_mult (no shape factor), betas (0.8, 0.95),
    eps 1e-10, weight_decay 0: the benchmark's AdamW settings for its
    other groups."""
    for name, group, store, shape in table:
        if group != "matrix":
            continue
        key = "adamw:" + name
        if key not in state:
            p = torch.nn.Parameter(params[name].clone().to(fdt))
            state[key] = (p, torch.optim.AdamW([p], lr=lr, betas=(0.8, 0.95), eps=1e-10,
                                               weight_decay=0.0))
        p, opt = state[key]
        opt.param_groups[0]["lr"] = lr
        p.grad = grads[name].to(fdt).clone()
        opt.step()
        params[name] = p.detach().clone()


def run_case(arm, inputs):
    init, grads, counts, masks, scheds = inputs
    fdt = torch.float64 if arm.get("dtype") == "fp64" else torch.float32
    params = {n: init[n].clone().to(fdt) for n, *_ in TABLE}
    state = {}
    out = []
    for t in range(STEPS):
        step_all(TABLE, params, grads[t], counts[t], masks, state, t, scheds[t], arm, K)
        out.append({n: params[n].clone() for n in params})
    return out


ARMS = {
    # name: (config overrides for the C side, arm dict for this script)
    "base_bf16": ({"polar_arith": "eager"}, {"polar_arith": "eager"}),
    "base_bf16_compiled": ({"polar_arith": "compiled"}, {"polar_arith": "compiled"}),
    "base_fp32": ({"polar": "fp32", "embed_state": "fp32"}, {"polar": "fp32", "embed_state": "fp32"}),
    "embed_bf16_fp32polar": ({"polar": "fp32"}, {"polar": "fp32"}),
    "fp64": ({"dtype": "fp64"}, {"dtype": "fp64"}),
    "bieq_tau2": ({"polar": "fp32", "embed_state": "fp32", "muoneq": "bieq", "bieq_tau": "2"},
                  {"polar": "fp32", "embed_state": "fp32", "muoneq": "bieq", "bieq_tau": 2}),
    "bieq_tau0": ({"polar": "fp32", "embed_state": "fp32", "muoneq": "bieq", "bieq_tau": "0"},
                  {"polar": "fp32", "embed_state": "fp32", "muoneq": "bieq", "bieq_tau": 0}),
    "muoneq_r": ({"polar": "fp32", "embed_state": "fp32", "muoneq": "r"},
                 {"polar": "fp32", "embed_state": "fp32", "muoneq": "r"}),
    "muoneq_rc": ({"polar": "fp32", "embed_state": "fp32", "muoneq": "rc"},
                  {"polar": "fp32", "embed_state": "fp32", "muoneq": "rc"}),
    "neumann_dir": ({"polar": "fp32", "embed_state": "fp32", "neumann": "1", "neumann_tau": "2"},
                    {"polar": "fp32", "embed_state": "fp32", "neumann": 1, "neumann_tau": 2}),
    "neumann_grad": ({"polar": "fp32", "embed_state": "fp32", "neumann": "1", "neumann_tau": "2",
                      "neumann_site": "gradient"},
                     {"polar": "fp32", "embed_state": "fp32", "neumann": 1, "neumann_tau": 2,
                      "neumann_site": "gradient"}),
    "table_neumann": ({"polar": "fp32", "embed_state": "fp32", "oe": "1", "table_neumann": "1",
                       "neumann_tau": "2"},
                      {"polar": "fp32", "embed_state": "fp32", "table_neumann": 1, "neumann_tau": 2}),
}
F32 = {"polar": "fp32", "embed_state": "fp32"}
for name, ov in (
        ("bieq_rows1", {"muoneq": "bieq", "bieq_tau": 2, "bieq_passes": 1, "bieq_sides": "rows"}),
        ("bieq_square", {"muoneq": "bieq", "bieq_tau": 2, "equil_scope": "square"}),
        ("muoneq_r_square", {"muoneq": "r", "equil_scope": "square"}),
        ("polar_steps4", {"polar_steps": 4}),
        ("aol4", {"polar_norm": "aol", "polar_steps": 4}),
        ("muoneq_r_normuon0", {"muoneq": "r", "normuon": 0}),
        ("zeta", {"zeta": 1}),
        ("malt", {"malt": 1}),
        ("malt_normuon0", {"malt": 1, "normuon": 0}),
        ("malt_beta_eps", {"malt": 1, "malt_beta": 0.5, "malt_eps": 0.01}),
        ("malt_momentum", {"malt": 1, "malt_input": "momentum", "malt_beta": 0}),
        ("malt_momentum_ema", {"malt": 1, "malt_input": "momentum", "malt_beta": 0.5}),
        ("malt_instant", {"malt": 1, "malt_beta": 0}),
        ("muon2f", {"muon2f": 1}),
        ("muon2f_normuon0", {"muon2f": 1, "normuon": 0}),
        ("normpre_g", {"normpre_g": 1}),
        ("normpre_g_notangent", {"normpre_g": 1, "normpre_tangent": 0})):
    ARMS[name] = ({**F32, **{k: str(v) for k, v in ov.items()}}, {**F32, **ov})
for name, ov in (
        ("bf16_polar_norm_fp32", {"polar_norm": "fp32"}),
        ("bf16_post_polar_fp32", {"post_polar": "fp32"}),
        ("bf16_aol4", {"polar_norm": "aol", "polar_steps": 4}),
        ("bf16_zeta", {"zeta": 1}),
        ("bf16_muon2f", {"muon2f": 1}),
        ("bf16_normpre_g", {"normpre_g": 1}),
        ("bf16_malt_momentum", {"malt": 1, "malt_input": "momentum", "malt_beta": 0})):
    ARMS[name] = ({"polar_arith": "compiled", **{k: str(v) for k, v in ov.items()}},
                  {"polar_arith": "compiled", **ov})
for name, ov in (
        ("fp64_aol4", {"polar_norm": "aol", "polar_steps": 4}),
        ("fp64_bieq_rows1_square_normuon0", {"muoneq": "bieq", "bieq_tau": 2, "bieq_passes": 1,
                                             "bieq_sides": "rows", "equil_scope": "square",
                                             "normuon": 0}),
        ("fp64_zeta", {"zeta": 1}),
        ("fp64_malt", {"malt": 1}),
        ("fp64_malt_momentum", {"malt": 1, "malt_input": "momentum", "malt_beta": 0}),
        ("fp64_muon2f", {"muon2f": 1}),
        ("fp64_normpre_g", {"normpre_g": 1})):
    ARMS[name] = ({"dtype": "fp64", **{k: str(v) for k, v in ov.items()}}, {"dtype": "fp64", **ov})
for name, ov in (
        ("matrix_adamw", {"embed_state": "fp32", "matrix_optim": "adamw"}),
        ("matrix_adamw_bf16embed", {"matrix_optim": "adamw"}),
        ("fp64_matrix_adamw", {"dtype": "fp64", "matrix_optim": "adamw"})):
    ARMS[name] = ({k: str(v) for k, v in ov.items()}, ov)
for mode in ("nostep0", "mom_only_nodisp", "disp_only_nomom", "disp_stepcount_nomom", "nostep0_all"):
    ARMS["step0_" + mode] = ({"polar": "fp32", "embed_state": "fp32", "step0": mode},
                             {"polar": "fp32", "embed_state": "fp32", "step0": mode})


def write_inputs(path, inputs):
    init, grads, counts, masks, scheds = inputs
    with open(path, "w") as f:
        f.write("# made by tests/reference/torch_optim.py (torch %s); do not edit\n" % torch.__version__)
        f.write("set model_dim=%d\n" % MODEL_DIM)
        for name, group, store, shape in TABLE:
            dims = list(shape) + [0] * (3 - len(shape))
            f.write("param %s %s %s %d %d %d %d\n" % (name, group, store, len(shape), *dims))
        for name, m in masks.items():
            f.write("mask %s %s\n" % (name, " ".join(str(int(x)) for x in m)))
        for name, *_ in TABLE:
            f.write("init %s %s\n" % (name, fmt(init[name], True)))
        for t in range(STEPS):
            lr_mult, mom, wd = scheds[t]
            f.write("sched %d %r %r %r\n" % (t, lr_mult, mom, wd))
            for name, *_ in TABLE:
                f.write("grad %d %s %s\n" % (t, name, fmt(grads[t][name], True)))
            for name, c in counts[t].items():
                f.write("counts %d %s %s\n" % (t, name, " ".join(str(int(x)) for x in c)))


def write_case(path, overrides, out, f32):
    with open(path, "w") as f:
        f.write("# made by tests/reference/torch_optim.py; do not edit\n")
        for k, v in overrides.items():
            f.write("set %s=%s\n" % (k, v))
        for t, params in enumerate(out):
            for name, *_ in TABLE:
                f.write("after %d %s %s\n" % (t, name, fmt(params[name], f32)))


# ---- schedules: train.py's functions with step-based progress ----

def schedule(t, S=953, W=11, cooldown=False, cosine=False, lr_scale=1.0, wd_scale=1.0):
    progress = min(max(t - W, 0) / (S - W), 1.0)
    lrm = 1.0 if progress < 0.5 else (1.0 - progress) / 0.5   # WARMDOWN_RATIO 0.5, FINAL_LR_FRAC 0
    frac = min(t / 300, 1)
    mu = (1 - frac) * 0.85 + frac * 0.95
    if cooldown and progress >= 0.5:
        mu = 0.85 + (mu - 0.85) * lrm
    wd = 0.2 * 0.5 * (1 + math.cos(math.pi * progress)) if cosine else 0.2 * (1 - progress)
    return progress, lrm, lrm * lr_scale, mu, wd * wd_scale


def write_sched(path):
    cfgs = [("baseline", {}, {}),
            ("cooldown", {"cooldown": "1"}, {"cooldown": True}),
            ("cosine", {"muon_wd_schedule": "cosine"}, {"cosine": True}),
            ("calibrated", {"lr_scale": "1.41421356", "muon_wd_scale": "0.70710678", "cooldown": "1"},
             {"lr_scale": 1.41421356, "wd_scale": 0.70710678, "cooldown": True})]
    with open(path, "w") as f:
        f.write("# made by tests/reference/torch_optim.py; do not edit\n")
        f.write("# cfg step progress lrm lr_mult momentum muon_wd\n")
        for name, sets, kw in cfgs:
            f.write("cfg %s %s\n" % (name, " ".join("%s=%s" % kv for kv in sets.items())))
            for t in (0, 5, 11, 12, 200, 300, 476, 477, 481, 700, 900, 952, 953):
                f.write("at %d %s\n" % (t, fmt(schedule(t, **kw))))


# ---- operator fixtures (numpy float64) ----

def np_bieq(G, a):
    G = G.copy()
    for _ in range(2):
        r = (G ** 2).mean(axis=1, keepdims=True)
        G = G * ((1 - a) + a * (r / (r.mean() + 1e-30) + 1e-4)) ** -0.5
        c = (G ** 2).mean(axis=0, keepdims=True)
        G = G * ((1 - a) + a * (c / (c.mean() + 1e-30) + 1e-4)) ** -0.5
    return G


def np_neumann(U, a):
    u = U.mean(axis=0)
    mu = u / (np.linalg.norm(u) + 1e-30)
    Up = np.outer(U @ mu, mu)
    Uo = U - Up
    G = Uo.T @ Uo
    Hm = G / (np.linalg.norm(G) + 1e-30)
    Uw = Uo @ (np.eye(U.shape[1]) - 0.5 * a * Hm)
    return Up + (np.linalg.norm(Uo) / (np.linalg.norm(Uw) + 1e-30)) * Uw


def np_oe(E, g, counts, eta):
    E = E.copy()
    vis = counts > 0
    if vis.any():
        gbar = g[vis] / counts[vis][:, None]
        R = max(math.sqrt((gbar ** 2).mean()), 1e-30)
        E[vis] -= eta * gbar / R
    return E


def write_ops(path):
    rng = np.random.default_rng(7)
    mats = {
        "random_tall": rng.standard_normal((9, 5)),
        "random_wide": rng.standard_normal((4, 11)) * 3,
        "zero_rows": np.vstack([rng.standard_normal((3, 6)), np.zeros((2, 6)), rng.standard_normal((2, 6))]),
        "single_row": np.vstack([np.zeros((4, 5)), rng.standard_normal((1, 5)), np.zeros((2, 5))]),
        "equal_rows": np.tile(rng.standard_normal((1, 6)), (5, 1)),
        "skewed": rng.standard_normal((6, 6)) * np.logspace(-3, 3, 6)[:, None],
    }
    with open(path, "w") as f:
        f.write("# made by tests/reference/torch_optim.py (numpy float64); do not edit\n")
        # Polar Express on fp32-exact inputs: bf16 (emulated eager, and as
        # compiled: polar_bf16c), fp32, fp64
        gp = torch.Generator().manual_seed(99)
        for (m, n) in ((8, 8), (16, 8), (8, 16), (2, 4), (32, 24)):
            G = torch.randn(m, n, generator=gp)
            for kind, dt, arith in (("polar_bf16", torch.bfloat16, "eager"),
                                    ("polar_bf16c", torch.bfloat16, "compiled"),
                                    ("polar_fp32", torch.float32, None),
                                    ("polar_fp64", torch.float64, None)):
                src = G.double() if dt == torch.float64 else G
                out = polar_express(src, dt, arith)
                f.write("op %s rand %d %d 0\nin %s\nout %s\n" % (kind, m, n, fmt(G, True),
                        fmt(out.double(), dt != torch.float64)))
        for name, M in mats.items():
            m, n = M.shape
            for a in (0.0, 0.25, 1.0):
                f.write("op bieq %s %d %d %r\nin %s\nout %s\n" % (name, m, n, a, fmt(M), fmt(np_bieq(M, a))))
                f.write("op neumann %s %d %d %r\nin %s\nout %s\n" % (name, m, n, a, fmt(M), fmt(np_neumann(M, a))))
            r = M * ((M ** 2).sum(axis=1, keepdims=True) + 1e-8) ** -0.5
            f.write("op muoneq_r %s %d %d 0\nin %s\nout %s\n" % (name, m, n, fmt(M), fmt(r)))
            rc = M * ((M ** 2).sum(axis=1, keepdims=True) + 1e-8) ** -0.5 * \
                ((M ** 2).sum(axis=0, keepdims=True) + 1e-8) ** -0.5
            f.write("op muoneq_rc %s %d %d 0\nin %s\nout %s\n" % (name, m, n, fmt(M), fmt(rc)))
            # OE step on this matrix as a table, gradient = M, counts from a pattern
            counts = np.array([(i * 7 + 3) % 4 for i in range(m)], dtype=np.float64)
            if name == "single_row":
                counts = np.zeros(m)
                counts[4] = 2
            E = np.round(rng.standard_normal((m, n)) * 8) / 8
            g = M * counts[:, None]
            f.write("op oe %s %d %d 0.3\ncounts %s\ntable %s\nin %s\nout %s\n" % (
                name, m, n, " ".join(str(int(c)) for c in counts), fmt(E), fmt(g),
                fmt(np_oe(E, g, counts, 0.3))))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_optim.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    inputs = make_inputs()
    write_inputs(os.path.join(outdir, "inputs.txt"), inputs)
    for name, (overrides, arm) in ARMS.items():
        out = run_case(arm, inputs)
        write_case(os.path.join(outdir, "case_%s.txt" % name), overrides, out,
                   arm.get("dtype") != "fp64")
    write_sched(os.path.join(outdir, "sched.txt"))
    write_ops(os.path.join(outdir, "ops.txt"))


if __name__ == "__main__":
    main()
