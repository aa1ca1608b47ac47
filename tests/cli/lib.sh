# lib.sh: helpers for the CLI tests (tests/cli/*.sh source this).
#
#   run supkit replay apply a b      # sets $rc, $out (stdout), $errout (stderr)
#   expect_rc 0 "apply succeeds"
#   expect_out_contains "2 hunks" "summary printed"
#   ok "name" / bad "name" "why"
#   strip_derivation FILE            # a JSON record without its "derivation" block
#   finish                           # prints "N passed, N failed, N skipped"
#
# Binaries come from $SUPKIT_BIN (set by tests/run.sh; defaults to ./bin).
# Each test script gets a fresh $TMP, removed at exit.
set -u
SUPKIT_ROOT=${SUPKIT_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SUPKIT_BIN=${SUPKIT_BIN:-$SUPKIT_ROOT/bin}
export PATH="$SUPKIT_BIN:$PATH"
FIX="$SUPKIT_ROOT/tests/fixtures"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
_p=0 _f=0 _s=0
rc=0 out="" errout=""

run() {
	"$@" >"$TMP/.out" 2>"$TMP/.err"
	rc=$?
	out=$(cat "$TMP/.out")
	errout=$(cat "$TMP/.err")
}
ok() { _p=$((_p + 1)); echo "ok   $1"; }
bad() {
	_f=$((_f + 1)); echo "FAIL $1${2:+: $2}"
	[[ -n "$errout" ]] && echo "  stderr: $(head -c 600 <<<"$errout")"
	return 0
}
skip() { _s=$((_s + 1)); echo "skip $1${2:+: $2}"; }
expect_rc() { # want name
	if [[ "$rc" == "$1" ]]; then ok "$2"; else bad "$2" "exit $rc, expected $1"; fi
}
expect_out_contains() { # text name
	if grep -qF -- "$1" <<<"$out"; then ok "$2"; else bad "$2" "stdout lacks '$1': $(head -c 400 <<<"$out")"; fi
}
expect_err_contains() { # text name
	if grep -qF -- "$1" <<<"$errout"; then ok "$2"; else bad "$2" "stderr lacks '$1': $(head -c 400 <<<"$errout")"; fi
}
expect_same_file() { # a b name
	if cmp -s "$1" "$2"; then ok "$3"; else bad "$3" "'$1' and '$2' differ"; fi
}
expect_no_file() { # path name
	if [[ ! -e "$1" ]]; then ok "$2"; else bad "$2" "'$1' exists"; fi
}
expect_one_line_err() { # name: stderr is exactly one line
	local n; n=$(grep -c '' <<<"$errout")
	if [[ -n "$errout" && "$n" == 1 ]]; then ok "$1"; else bad "$1" "stderr has $n lines"; fi
}
strip_derivation() { # file or stdin: a JSON record less its top-level "derivation" block
	awk '/^  "derivation": \{/ { skip = 1; next } skip && /^  \}/ { skip = 0; next } !skip' "$@"
}
finish() {
	echo "$_p passed, $_f failed, $_s skipped"
	((_f == 0))
}
