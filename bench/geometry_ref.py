#!/usr/bin/python3
"""geometry_ref.py: the numpy side of bench/bench_geometry.sh.

  geometry_ref.py write OUT.safetensors [--no-oe]
      a depth-8-shaped checkpoint (V 8192, d 512, H 4, ve layers 1,3,5,7, OE
      tables of 150855+2j rows x 128, q_tau 8 x 4 x 64, the scalar families)
      with random weights, written by hand (struct + json), names as
      trainer/paramspec.h
  geometry_ref.py audit CKPT.safetensors SUPKIT.json
      per matrix: stable rank and mean-row energy from np.linalg.svd in
      float64 (the papers' svd-based computation), timed (load + convert +
      compute); then the largest relative difference to supkit's figures
Use /usr/bin/python3 (Debian's numpy).
"""
import json
import struct
import sys
import time

import numpy as np

V, D, L, H = 8192, 512, 8, 4
OE_M = 150855


def bf16_bytes(a):
    """float32 -> bf16 by round-to-nearest-even on the bit pattern."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype("<u2")
    return r.tobytes()


def write(path, oe):
    rng = np.random.default_rng(8)
    s = np.sqrt(3) / np.sqrt(D)
    ts = []

    def add(name, dtype, a):
        a = np.asarray(a, dtype=np.float32)
        raw = bf16_bytes(a) if dtype == "BF16" else a.astype("<f4").tobytes()
        ts.append((name, dtype, list(a.shape), raw))
    common = rng.standard_normal(D).astype(np.float32) * 0.3
    add("transformer.wte.weight", "BF16", rng.standard_normal((V, D), dtype=np.float32) + common)
    for i in range(L):
        p = "transformer.h.%d." % i
        for k in ("c_q", "c_k", "c_v"):
            add(p + "attn.%s.weight" % k, "F32", rng.uniform(-s, s, (D, D)).astype(np.float32))
        add(p + "attn.c_proj.weight", "F32", 0.01 * rng.standard_normal((D, D), dtype=np.float32))
        add(p + "mlp.c_fc.weight", "F32", rng.uniform(-s, s, (4 * D, D)).astype(np.float32))
        add(p + "mlp.c_proj.weight", "F32", 0.01 * rng.standard_normal((D, 4 * D), dtype=np.float32))
        if i % 2 == (L - 1) % 2:
            add(p + "attn.ve_gate.weight", "F32", 0.1 * rng.standard_normal((H, 32), dtype=np.float32))
    for i in range(L):
        if i % 2 == (L - 1) % 2:
            add("value_embeds.%d.weight" % i, "BF16", rng.uniform(-s, s, (V, D)).astype(np.float32))
    add("lm_head.weight", "F32", 0.02 * rng.standard_normal((V, D), dtype=np.float32) + 0.1 * common)
    add("resid_lambdas", "F32", 1 + 0.05 * rng.standard_normal(L))
    add("x0_lambdas", "F32", rng.standard_normal(L))
    if oe:
        for j in range(4):
            add("oe.%d.weight" % j, "BF16", 0.01 * rng.standard_normal((OE_M + 2 * j, D // 4), dtype=np.float32))
    add("q_tau", "F32", 0.3 * rng.standard_normal((L, H, 64)))
    add("wte_lambdas", "F32", rng.standard_normal(L))
    add("out_lambdas", "F32", rng.standard_normal(2))
    hdr, pos = {}, 0
    for n, d, shp, raw in ts:
        hdr[n] = {"dtype": d, "shape": shp, "data_offsets": [pos, pos + len(raw)]}
        pos += len(raw)
    h = json.dumps(hdr).encode()
    h += b" " * ((-len(h)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, _, _, raw in ts:
            f.write(raw)


def load(path):
    raw = open(path, "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    hdr = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for k, v in hdr.items():
        if k == "__metadata__":
            continue
        b, e = v["data_offsets"]
        buf = raw[base + b:base + e]
        if v["dtype"] == "BF16":
            a = (np.frombuffer(buf, dtype="<u2").astype(np.uint32) << np.uint32(16)).view(np.float32)
        elif v["dtype"] == "F32":
            a = np.frombuffer(buf, dtype="<f4")
        else:
            a = np.frombuffer(buf, dtype="<f8")
        out[k] = a.astype(np.float64).reshape(v["shape"])
    return out


def is_matrix(name):
    return name.endswith(".weight") and not name.startswith("q_tau")


def audit(ckpt, supkit_json):
    t0 = time.perf_counter()
    c0 = time.process_time()
    ts = load(ckpt)
    res = {}
    for k, w in ts.items():
        if w.ndim != 2 or not is_matrix(k):
            continue
        s = np.linalg.svd(w, compute_uv=False)
        fro2 = float(np.sum(w * w))
        mr = w.mean(axis=0)
        res[k] = (fro2 / float(s[0] ** 2), w.shape[0] * float(mr @ mr) / fro2)
    t = time.perf_counter() - t0
    c = time.process_time() - c0
    sk = json.load(open(supkit_json))["checkpoints"][0]["matrices"]
    worst = 0.0
    for k, (sr, en) in res.items():
        g = sk[k]
        worst = max(worst, abs(g["stable_rank"] - sr) / sr, abs(g["mean_row_energy"] - en) / en)
    print("numpy_svd_seconds %.3f" % t)
    print("numpy_svd_cpu_seconds %.3f" % c)
    print("matrices %d (supkit %d)" % (len(res), len(sk)))
    print("max_rel_diff %.3g" % worst)


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2], "--no-oe" not in sys.argv)
    elif sys.argv[1] == "audit":
        audit(sys.argv[2], sys.argv[3])
    else:
        sys.exit("usage: geometry_ref.py write OUT [--no-oe] | audit CKPT SUPKIT.json")
