#!/usr/bin/env python3
"""fatbin-archs.py OBJ: the code an nvcc object carries, one word each:
sm_NN (machine code, sm_NNa for arch-specific code such as sm_90a) and
compute_NN (PTX), read from its .nv_fatbin section (objcopy). For
tests/cli/cuda_compile.sh where the toolkit has no cuobjdump.

The fatbin layout (as cuobjdump reads it): a header (magic 0xBA55ED50,
u16 version, u16 header size, u64 size) followed by entries, each a header
(u16 kind: 1 PTX, 2 ELF; u16; u32 header size; u64 payload size; ...;
u32 arch at byte 28; u64 flags at byte 40, bit 20 the arch-specific 'a'
code) and its payload. Exit 1 when the section is missing or malformed.
"""
import struct
import subprocess
import sys
import tempfile


def entries(data):
    off, out = 0, []
    while off + 16 <= len(data):
        magic, _ver, hsz, fsz = struct.unpack_from('<IHHQ', data, off)
        if magic != 0xBA55ED50:
            off += 8   # fatbins in the section are 8-byte aligned
            continue
        e, end = off + hsz, off + hsz + fsz
        if end > len(data):
            raise ValueError('truncated fatbin')
        while e < end:
            kind, _u, ehs, psz = struct.unpack_from('<HHIQ', data, e)
            arch = struct.unpack_from('<I', data, e + 28)[0]
            flags = struct.unpack_from('<Q', data, e + 40)[0]
            suffix = 'a' if flags & 0x100000 else ''
            if kind == 1:
                out.append('compute_%d%s' % (arch, suffix))
            elif kind == 2:
                out.append('sm_%d%s' % (arch, suffix))
            if ehs == 0:
                raise ValueError('bad entry header')
            e += ehs + psz
        off = end
    return out


def main():
    if len(sys.argv) != 2:
        sys.stderr.write('usage: fatbin-archs.py OBJ\n')
        return 2
    with tempfile.NamedTemporaryFile() as t:
        r = subprocess.run(['objcopy', '-O', 'binary', '--only-section=.nv_fatbin',
                            sys.argv[1], t.name], capture_output=True)
        data = open(t.name, 'rb').read() if r.returncode == 0 else b''
    if not data:
        sys.stderr.write("fatbin-archs.py: no .nv_fatbin section in '%s'\n" % sys.argv[1])
        return 1
    try:
        print(' '.join(entries(data)))
    except (ValueError, struct.error) as ex:
        sys.stderr.write("fatbin-archs.py: '%s': %s\n" % (sys.argv[1], ex))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
