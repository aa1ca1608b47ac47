#!/usr/bin/env bash
# man.sh: the manual stays true to the code. Every tool has a man page; the
# pages assembled from man/src (supkit-audit.1, supkit-train.1,
# supkit-formats.5) are what make built from their fragments, and only the
# fragments are committed; every long option that a tool's (or subcommand's) --help prints
# appears in its man page as ".Fl -name"; every config key has its entry, and
# the init keys' entries say what they do and that they conflict.
source "$(dirname "$0")/lib.sh"
cd "$SUPKIT_ROOT"

if bash scripts/make-man.sh --check 2>"$TMP/mm"; then ok "assembled man pages built from their sources"
else errout=$(cat "$TMP/mm"); bad "assembled man pages built from their sources"; fi
# one source form in git: the fragments, not the pages made from them
if git -C "$SUPKIT_ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	tracked=$(git -C "$SUPKIT_ROOT" ls-files man/supkit-audit.1 man/supkit-train.1 man/supkit-formats.5)
	if [[ -z "$tracked" ]]; then ok "assembled man pages not committed"
	else bad "assembled man pages not committed" "tracked: $(tr '\n' ' ' <<<"$tracked")"; fi
else
	skip "assembled man pages not committed" "not a git checkout"
fi

check_opts() { # page, command...
	local page=$1; shift
	local help missing=()
	help=$("$@" --help 2>/dev/null) || { bad "$* --help exits 0"; return; }
	while read -r opt; do
		[[ "$opt" == help ]] && continue
		grep -q -- "Fl -$opt\b" "$page" || missing+=("--$opt")
	done < <(grep -oE '^\s+(-[a-zA-Z0-9], )?--[a-z0-9][a-z0-9-]*' <<<"$help" | sed -E 's/.*--//')
	if ((${#missing[@]} == 0)); then ok "$* --help options in $(basename "$page")"
	else bad "$* --help options in $(basename "$page")" "not documented: ${missing[*]}"; fi
	# subcommands listed under "subcommands:" or "commands:"
	if [[ $# -eq 1 ]]; then
		local subs
		subs=$(awk '/^(sub)?commands:$/{f=1;next} f&&/^  [a-z0-9-]+/{print $1} f&&/^$/{f=0}' <<<"$help")
		for s in $subs; do check_opts "$page" "$1" "$s"; done
	fi
}

for t in "$SUPKIT_BIN"/supkit-*; do
	name=$(basename "$t")
	page=man/$name.1
	if [[ -f "$page" ]]; then ok "$name has a man page"; else bad "$name has a man page" "no $page"; continue; fi
	check_opts "$page" "$t"
done
if [[ -f man/supkit.1 ]]; then ok "supkit(1) exists"; else bad "supkit(1) exists"; fi

# every config key has its entry in supkit-formats(5) and supkit-train(1)
cfgdoc=man/src/supkit-formats-config.mdoc
missing=()
while read -r k; do
	grep -qE "^\.It Li ([a-z0-9_]+ , )*$k( ,|$)" "$cfgdoc" || missing+=("$k")
done < <("$SUPKIT_BIN/supkit-audit" compute --print-config | sed 's/ *=.*//')
if ((${#missing[@]} == 0)); then ok "every config key documented in $cfgdoc"
else bad "every config key documented in $cfgdoc" "missing: ${missing[*]}"; fi
entry() { # key: the text of its .It entry in the config fragment
	awk -v k="$1" '$0 == ".It Li " k {f = 1; next} f && /^\.(It|El)/ {exit} f' "$cfgdoc" | tr '\n' ' '
}
# init: what dense draws (every zero-initialised tensor) and its conflict
e=$(entry init)
missing=()
for w in c_proj ve_gate OE q_tau wte_lambdas out_lambdas init_from; do
	[[ "$e" == *"$w"* ]] || missing+=("$w")
done
if ((${#missing[@]} == 0)); then ok "init: the tensors dense draws and the init_from conflict documented"
else bad "init: the tensors dense draws and the init_from conflict documented" "not named: ${missing[*]}"; fi
e=$(entry init_from)
if [[ "$e" == *"init = dense"* && "$e" == *F64* ]]; then ok "init_from: its conflict and dtypes documented"
else bad "init_from: its conflict and dtypes documented" "$e"; fi
finish
