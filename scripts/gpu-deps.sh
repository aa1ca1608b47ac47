#!/usr/bin/env bash
# gpu-deps.sh: the build's Debian libraries for a machine that cannot fetch
# them (e.g. an Ubuntu image with nvcc and PyTorch but no package
# registry, no libcjson, OpenBLAS, LAPACKE, GSL or libarchive).
#
#   scripts/gpu-deps.sh fetch [DIR]   here: apt-get download the packages
#                                     below into DIR (default .gpu-deps,
#                                     git-ignored; about 26 MB once slimmed), then carry
#                                     DIR to the GPU machine
#   scripts/gpu-deps.sh env [DIR]     there: unpack DIR/*.deb (dpkg -x, never
#                                     into /) under $GPU_DEPS_ROOT (default
#                                     /tmp/supkit-sysroot) and print the
#                                     shell exports that make the Makefile
#                                     and tests/gpu/lib.sh build against
#                                     them (the binaries find them by their
#                                     RPATH): eval "$(scripts/gpu-deps.sh env)"
#   scripts/gpu-deps.sh slim [DIR]    repack DIR's .debs without their static
#                                     libraries (fetch does it; 26 MB left)
#   scripts/gpu-deps.sh list          the package names, one a line
#
# The list is the -dev packages of install-deps.sh's build_pkgs but cairo's
# (libcairo2-dev: its pkg-config needs glib's and X's; without it the build
# leaves supkit plot out, which no GPU check uses), the shared libraries
# they point at, and those libraries' own runtime dependencies that
# a minimal image may lack (libarchive's compressors and libxml2, OpenBLAS's
# libgfortran), and GNU make for an image without it; tests/cli/gpu_deps.sh
# checks it covers build_pkgs. Debian 12's
# libraries need glibc 2.36 or newer. Exit 0 done, 1 failure, 2 bad usage.
set -euo pipefail

pkgs=(
	libssl-dev libssl3
	libarchive-dev libarchive13 libxml2 libicu72 libb2-1 libnettle8 liblz4-1 liblzma5 libzstd1
	libacl1 libbz2-1.0 zlib1g
	libcjson-dev libcjson1
	liblapacke-dev liblapacke libopenblas-dev libopenblas-pthread-dev libopenblas0-pthread libopenblas0
	libgfortran5 libquadmath0
	libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
	libgsl-dev libgsl27 libgslcblas0
	libsnappy-dev libsnappy1v5 libzstd-dev zlib1g-dev
	make
)

usage() {
	echo "usage: scripts/gpu-deps.sh fetch [DIR] | slim [DIR] | env [DIR] | list" >&2
	exit 2
}

# slim DIR: each .deb in DIR that holds static libraries (*.a) repacked
# without them: the build links the shared ones, and the device run carries
# the folder within its 64 MiB (the -dev packages' .a files are 9 MB of
# the 35)
slim() {
	command -v dpkg-deb >/dev/null || { echo "gpu-deps: slim: dpkg-deb not found" >&2; return 1; }
	local f t n
	for f in "$1"/*.deb; do
		[[ -f "$f" ]] || continue
		dpkg-deb -c "$f" 2>/dev/null | grep -q '\.a$' || continue
		t=$(mktemp -d) || return 1
		dpkg-deb -R "$f" "$t/p" || { echo "gpu-deps: slim: $f: dpkg-deb -R failed" >&2; rm -rf "$t"; return 1; }
		n=$(find "$t/p" -name '*.a' -type f -print -delete | wc -l)
		dpkg-deb -b -Zxz "$t/p" "$f.tmp" >/dev/null && mv "$f.tmp" "$f" ||
			{ echo "gpu-deps: slim: $f: dpkg-deb -b failed" >&2; rm -rf "$t" "$f.tmp"; return 1; }
		rm -rf "$t"
		echo "gpu-deps: slim: $(basename "$f"): $n static librar$( ((n == 1)) && echo y || echo ies) left out" >&2
	done
}

cmd=${1:-}
dir=${2:-.gpu-deps}
case "$cmd" in
slim)
	[[ -d "$dir" ]] || { echo "gpu-deps: slim: $dir: no such folder" >&2; exit 1; }
	slim "$dir" || exit 1
	;;
list)
	printf '%s\n' "${pkgs[@]}"
	;;
fetch)
	command -v apt-get >/dev/null || { echo "gpu-deps: fetch: apt-get not found (a Debian machine fetches)" >&2; exit 1; }
	mkdir -p "$dir"
	# apt-get download writes into the current folder
	(cd "$dir" && apt-get download -q "${pkgs[@]}" >/dev/null) || {
		echo "gpu-deps: fetch: apt-get download failed (see above); $dir may be incomplete" >&2
		exit 1
	}
	for p in "${pkgs[@]}"; do
		compgen -G "$dir/${p}_*.deb" >/dev/null || { echo "gpu-deps: fetch: $p missing from $dir" >&2; exit 1; }
	done
	slim "$dir" 2>/dev/null || exit 1
	echo "gpu-deps: ${#pkgs[@]} packages in $dir ($(du -sh "$dir" | cut -f1)); carry it with the GPU run"
	;;
env)
	[[ -d "$dir" ]] || { echo "gpu-deps: env: $dir: no such folder (scripts/gpu-deps.sh fetch first)" >&2; exit 1; }
	command -v dpkg >/dev/null || { echo "gpu-deps: env: dpkg not found" >&2; exit 1; }
	root=${GPU_DEPS_ROOT:-/tmp/supkit-sysroot}
	[[ "$root" == / ]] && { echo "gpu-deps: env: refusing to unpack into /" >&2; exit 1; }
	mkdir -p "$root"
	n=0
	for f in "$dir"/*.deb; do
		[[ -f "$f" ]] || continue
		dpkg -x "$f" "$root" || { echo "gpu-deps: env: $f: dpkg -x failed" >&2; exit 1; }
		n=$((n + 1))
	done
	((n > 0)) || { echo "gpu-deps: env: $dir holds no .deb" >&2; exit 1; }
	arch=x86_64-linux-gnu
	lib=$root/usr/lib/$arch
	blas=$lib/openblas-pthread
	inc="-I$root/usr/include -I$root/usr/include/$arch -I$root/usr/include/$arch/openblas-pthread"
	# DT_RPATH (not RUNPATH): it also finds the libraries that the libraries
	# load (libarchive's libxml2), and leaves other programs' search alone
	libs="-L$lib -L$blas -Wl,--disable-new-dtags,-rpath,$lib,-rpath,$blas"
	# pkg-config, where the image has one, reads the unpacked .pc files alone
	# (PKG_CONFIG_LIBDIR replaces its search path: a system .pc, e.g. Open
	# MPI's, would get the root put before its /usr paths) with their /usr
	# paths moved under the root
	printf 'export PKG_CONFIG_SYSROOT_DIR=%q\n' "$root"
	printf 'export PKG_CONFIG_LIBDIR=%q\n' "$lib/pkgconfig:$blas/pkgconfig:$root/usr/share/pkgconfig"
	printf 'export EXTRA_CFLAGS=%q\n' "${EXTRA_CFLAGS:+$EXTRA_CFLAGS }$inc"
	printf 'export LDFLAGS=%q\n' "${LDFLAGS:+$LDFLAGS }$libs"
	# GNU make too, for an image without one (after the system's own tools)
	command -v make >/dev/null || printf 'export PATH=%q\n' "$PATH:$root/usr/bin"
	echo "gpu-deps: $n packages unpacked under $root" >&2
	;;
*)
	usage
	;;
esac
