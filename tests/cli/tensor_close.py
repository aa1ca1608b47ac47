#!/usr/bin/env python3
"""tensor_close.py A B TOL [SUFFIX...]: compare two safetensors files (.safetensors) or two
optimizer states (optim.bin, SUPKOPT1) tensor by tensor: every tensor of A
must be in B with the same size, and max |a - b| <= TOL * max |b| (per
tensor; an all-zero B asks for a = b); with SUFFIXes, only the tensors whose
names end with one of them. Prints the worst tensor and its
ratio; exit 0 when every tensor is close, 1 when one is not, 2 on bad files.
Plain python3 (no numpy), for tests/cli/train_mpi.sh."""
import json
import struct
import sys


def bf16(raw):
    n = len(raw) // 2
    return [struct.unpack('<f', struct.pack('<I', h << 16))[0] for h in struct.unpack('<%dH' % n, raw)]


def load_st(data):
    n = struct.unpack_from('<Q', data, 0)[0]
    head = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for k, v in head.items():
        if k == '__metadata__':
            continue
        s, e = v['data_offsets']
        raw = body[s:e]
        t = v['dtype']
        if t == 'BF16':
            out[k] = bf16(raw)
        elif t in ('F32', 'F64'):
            c = 'f' if t == 'F32' else 'd'
            out[k] = list(struct.unpack('<%d%s' % (len(raw) // struct.calcsize(c), c), raw))
        else:
            raise ValueError('tensor %s: dtype %s' % (k, t))
    return out


def load_opt(data):
    count = struct.unpack_from('<Q', data, 8)[0]
    p, out = 16, {}
    for _ in range(count):
        ln = struct.unpack_from('<I', data, p)[0]
        name = data[p + 4:p + 4 + ln].decode()
        p += 4 + ln
        kind, n = struct.unpack_from('<IQ', data, p)
        p += 12
        if kind == 0:
            out[name] = list(struct.unpack_from('<%dd' % n, data, p))
            p += 8 * n
        else:
            out[name] = [float(struct.unpack_from('<q', data, p)[0])]
            p += 8
    return out


def load(path):
    with open(path, 'rb') as f:
        data = f.read()
    return load_opt(data) if data[:8] == b'SUPKOPT1' else load_st(data)


def main():
    if len(sys.argv) < 4:
        print('usage: tensor_close.py A B TOL [SUFFIX...]', file=sys.stderr)
        return 2
    try:
        a, b, tol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
    except (OSError, ValueError, struct.error) as x:
        print('tensor_close.py: %s' % x, file=sys.stderr)
        return 2
    worst, wname, bad = 0.0, '', []
    for k, av in a.items():
        if len(sys.argv) > 4 and not k.endswith(tuple(sys.argv[4:])):
            continue
        bv = b.get(k)
        if bv is None or len(bv) != len(av):
            bad.append('%s: missing or of another size in %s' % (k, sys.argv[2]))
            continue
        d = max((abs(x - y) for x, y in zip(av, bv)), default=0.0)
        s = max((abs(y) for y in bv), default=0.0)
        r = d / s if s > 0 else (0.0 if d == 0 else float('inf'))
        if r > worst:
            worst, wname = r, k
        if r > tol:
            bad.append('%s: max |a - b| / max |b| = %.3e' % (k, r))
    print('worst %s %.3e' % (wname or '-', worst))
    for line in bad:
        print(line)
    return 1 if bad else 0


sys.exit(main())
