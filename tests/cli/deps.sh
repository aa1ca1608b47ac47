#!/usr/bin/env bash
# deps.sh: only make deps, make test and make demo install packages.
# scripts/install-deps.sh --check, and make, make build and make install
# through it, list what is missing with the command that installs it, exit
# non-zero and never run apt-get. A fake dpkg-query on PATH reports the
# packages named in FAKE_MISSING as not installed (every other one as
# installed); fake apt-get and sudo record that they were called.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"
fake=$TMP/fakebin
calls=$TMP/calls
mkdir -p "$fake"
cat >"$fake/dpkg-query" <<'SH'
#!/bin/sh
# dpkg-query -W -f='${Status}' PKG
for a; do p=$a; done
for m in $FAKE_MISSING; do
	[ "$m" = "$p" ] && { echo "dpkg-query: no packages found matching $p" >&2; exit 1; }
done
printf 'install ok installed'
SH
for t in apt-get sudo; do
	printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$t" "$calls" >"$fake/$t"
done
chmod +x "$fake"/*
# the make under test: not the one running the suite (no inherited flags)
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory "$@"; }
no_calls() { # name
	if [[ ! -e "$calls" ]]; then ok "$1"; else bad "$1" "called: $(tr '\n' ';' <"$calls")"; fi
	rm -f "$calls"
}
export FAKE_MISSING
PATH="$fake:$PATH"

# the fake is seen: installing mode runs apt-get for the missing package
FAKE_MISSING=libgsl-dev run bash scripts/install-deps.sh
expect_rc 0 "install-deps.sh installs with the fake apt-get"
if grep -q "apt-get install .*libgsl-dev" "$calls" 2>/dev/null; then ok "install-deps.sh runs apt-get install for the missing package"
else bad "install-deps.sh runs apt-get install for the missing package" "calls: $(cat "$calls" 2>/dev/null)"; fi
rm -f "$calls"

FAKE_MISSING="libgsl-dev patch" run bash scripts/install-deps.sh --check
expect_rc 1 "--check: a missing package fails the check"
expect_err_contains "missing Debian packages: libgsl-dev patch" "--check lists the missing packages"
expect_err_contains "scripts/install-deps.sh" "--check names the script that installs them"
expect_err_contains "apt-get install --no-install-recommends libgsl-dev patch" "--check names the apt-get command"
no_calls "--check never runs apt-get or sudo"

FAKE_MISSING="" run bash scripts/install-deps.sh --check
expect_rc 0 "--check: nothing missing, exit 0"
if [[ -z "$out$errout" ]]; then ok "--check: nothing missing, nothing printed"; else bad "--check: nothing missing, nothing printed" "$out$errout"; fi
no_calls "--check with nothing missing runs nothing"

FAKE_MISSING=python3-numpy run bash scripts/install-deps.sh --check --build
expect_rc 0 "--check --build: a test package is not a build package"
FAKE_MISSING=python3-numpy run bash scripts/install-deps.sh --check
expect_rc 1 "--check: the test packages are checked too"
FAKE_MISSING=python3-torch run bash scripts/install-deps.sh --check --reference
expect_rc 1 "--check --reference: the reference packages are checked"
expect_err_contains "install-deps.sh --reference" "--check --reference names the option that installs them"
no_calls "--check --build, --check, --check --reference never run apt-get"

run env PATH="$TMP/none" /bin/bash scripts/install-deps.sh --check
expect_rc 0 "--check without dpkg-query: not checked, exit 0"
expect_err_contains "no dpkg-query" "--check without dpkg-query says so"
run bash scripts/install-deps.sh --frobnicate
expect_rc 2 "an unknown option is a usage error"
run bash scripts/install-deps.sh --build --demo
expect_rc 2 "two package sets are a usage error"

# make, make build, make install: the check, never an install
for target in all build install; do
	FAKE_MISSING=libcjson-dev run mk "$target" DESTDIR="$TMP/dest" PREFIX=/usr
	if [[ $rc != 0 ]]; then ok "make $target: a missing package stops it"; else bad "make $target: a missing package stops it" "exit 0"; fi
	expect_err_contains "missing Debian packages: libcjson-dev" "make $target lists the missing package"
	expect_err_contains "install them with: scripts/install-deps.sh" "make $target names the command that installs it"
	no_calls "make $target never runs apt-get or sudo"
	expect_no_file "$TMP/dest" "make $target installs nothing under DESTDIR"
done
# make bench checks the test packages too (its references)
FAKE_MISSING=python3-numpy run mk -n bench
if grep -q "install-deps.sh --check" <<<"$out"; then ok "make bench checks, not installs"
else bad "make bench checks, not installs" "$(head -c 300 <<<"$out")"; fi
# make test and make demo install (what the README promises): their recipes run the installer
for target in test demo deps; do
	run mk -n "$target"
	if grep -qE "install-deps.sh( --demo)?$" <<<"$out"; then ok "make $target installs what is missing"
	else bad "make $target installs what is missing" "$(head -c 300 <<<"$out")"; fi
done
finish
