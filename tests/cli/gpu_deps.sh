#!/usr/bin/env bash
# gpu_deps.sh: scripts/gpu-deps.sh, the build's libraries carried as .debs to
# a machine with no package registry (a GPU machine). Its list covers
# every library of install-deps.sh's build_pkgs but cairo (supkit plot's,
# left out of a build without it); `env` unpacks a folder of
# .debs (a small one built here with dpkg-deb) under GPU_DEPS_ROOT and prints
# exports that point the compiler there; bad usage and a missing folder fail
# with one line. `fetch` needs the Debian registry and is not run here (a
# whole build against the unpacked packages, with the system's copies hidden,
# was checked by hand: see the script's header).
. "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"
G=scripts/gpu-deps.sh

run bash $G list
mapfile -t listed <<<"$out"
build=$(sed -n '/^build_pkgs=(/,/)/p' scripts/install-deps.sh | tr -d '()' | sed 's/build_pkgs=//')
missing=()
for p in $build; do
	# optional: supkit plot (cairo), supkit train over MPI (the CUDA backend runs one process)
	[[ "$p" == lib*-dev && "$p" != libcairo2-dev && "$p" != libopenmpi-dev ]] || continue
	printf '%s\n' "${listed[@]}" | grep -qx -- "$p" || missing+=("$p")
done
if [[ -n "$build" && ${#missing[@]} -eq 0 ]]; then ok "the list covers install-deps.sh's -dev packages"
else bad "the list covers install-deps.sh's -dev packages" "missing: ${missing[*]:-no build_pkgs read}"; fi

run bash $G frobnicate
expect_rc 2 "an unknown command is a usage error"
run bash $G env "$TMP/nowhere"
expect_rc 1 "env on a missing folder fails"
expect_err_contains "$TMP/nowhere" "the error names the folder"

if command -v dpkg-deb >/dev/null; then
	mkdir -p "$TMP/pkg/DEBIAN" "$TMP/pkg/usr/include" "$TMP/debs"
	printf 'Package: supkit-probe\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n' \
		>"$TMP/pkg/DEBIAN/control"
	echo '#define SUPKIT_PROBE 42' >"$TMP/pkg/usr/include/supkit_probe.h"
	dpkg-deb -b "$TMP/pkg" "$TMP/debs/probe.deb" >/dev/null 2>&1
	run env GPU_DEPS_ROOT="$TMP/root" bash $G env "$TMP/debs"
	expect_rc 0 "env unpacks a folder of .debs"
	if [[ -f "$TMP/root/usr/include/supkit_probe.h" ]]; then ok "the package's files land under GPU_DEPS_ROOT"
	else bad "the package's files land under GPU_DEPS_ROOT"; fi
	got=$(EXTRA_CFLAGS= LDFLAGS= bash -c "eval \"\$1\"; echo '#include <supkit_probe.h>
SUPKIT_PROBE' | \${CC:-cc} \$EXTRA_CFLAGS -E -P -x c - 2>&1 | tail -n 1" _ "$out")
	if [[ "$got" == 42 ]]; then ok "its exports put the unpacked headers on the compiler's path"
	else bad "its exports put the unpacked headers on the compiler's path" "got '$got'"; fi
	ldf=$(LDFLAGS= bash -c 'eval "$1"; echo "$LDFLAGS"' _ "$out")
	grep -qF -- "-Wl,--disable-new-dtags,-rpath,$TMP/root/usr/lib" <<<"$ldf" &&
		ok "its LDFLAGS give the binaries an RPATH there" ||
		bad "its LDFLAGS give the binaries an RPATH there" "$ldf"
	# pkg-config reads the unpacked .pc files alone: a system one (this
	# machine's Open MPI) read under the root breaks the build
	pc=$(PKG_CONFIG_PATH= PKG_CONFIG_LIBDIR= bash -c 'eval "$1"; echo "${PKG_CONFIG_LIBDIR:-}|${PKG_CONFIG_PATH:-}"' _ "$out")
	[[ "$pc" == "$TMP/root/usr/lib/"*"|" ]] &&
		ok "pkg-config's search path is the unpacked root's alone (PKG_CONFIG_LIBDIR)" ||
		bad "pkg-config's search path is the unpacked root's alone (PKG_CONFIG_LIBDIR)" "$pc"
	# slim: a package's static library left out, the rest kept
	mkdir -p "$TMP/pkg2/DEBIAN" "$TMP/pkg2/usr/lib" "$TMP/slim"
	printf 'Package: supkit-probe2\nVersion: 1\nArchitecture: all\nMaintainer: t <t@t>\nDescription: t\n' \
		>"$TMP/pkg2/DEBIAN/control"
	echo static >"$TMP/pkg2/usr/lib/libprobe.a"
	echo shared >"$TMP/pkg2/usr/lib/libprobe.so"
	dpkg-deb -b "$TMP/pkg2" "$TMP/slim/probe2.deb" >/dev/null 2>&1
	cp "$TMP/debs/probe.deb" "$TMP/slim/"
	run bash $G slim "$TMP/slim"
	expect_rc 0 "slim repacks a folder of .debs"
	c=$(dpkg-deb -c "$TMP/slim/probe2.deb" 2>/dev/null)
	[[ "$c" == *libprobe.so* && "$c" != *libprobe.a* ]] &&
		ok "slim leaves the static library out and keeps the shared one" ||
		bad "slim leaves the static library out and keeps the shared one" "$c"
	dpkg-deb -c "$TMP/slim/probe.deb" 2>/dev/null | grep -q supkit_probe.h &&
		ok "slim keeps a package without static libraries as it was" ||
		bad "slim keeps a package without static libraries as it was"
	run env GPU_DEPS_ROOT=/ bash $G env "$TMP/debs"
	expect_rc 1 "env refuses to unpack into /"
else
	skip "env unpacks a folder of .debs" "dpkg-deb not found"
fi
finish
