#!/usr/bin/env bash
# make-man.sh: assemble the shared man pages from their sources in man/src.
#   man/supkit-audit.1   = man/src/supkit-audit.head + supkit-audit-<sub>.mdoc (in
#                          subcommand order) + man/src/supkit-audit.tail
#   man/supkit-train.1   = supkit-train.head + config keys + arms + run folder + tail
#   man/supkit-formats.5 = man/src/supkit-formats.head + a .Sh per
#                          supkit-formats-<topic>.mdoc + man/src/supkit-formats.tail
# The three pages are build outputs (make builds them; .gitignore); the other
# pages in man/ are written by hand.
#   make-man.sh [PAGE ...]   write the named pages (man/supkit-audit.1 ...; default: all three)
#   make-man.sh --check      write nothing; exit 1 when a page in man/ differs from its sources
set -euo pipefail
cd "$(dirname "$0")/.."
pages=(man/supkit-audit.1 man/supkit-train.1 man/supkit-formats.5)

audit_page() {
	cat man/src/supkit-audit.head
	for sub in compute stats geometry digest step0 trajectory; do
		f=man/src/supkit-audit-$sub.mdoc
		[[ -f $f ]] || continue
		# a fragment may open with its own .Ss heading
		head -n 1 "$f" | grep -q '^\.Ss' || echo ".Ss supkit audit $sub"
		cat "$f"
	done
	cat man/src/supkit-audit.tail
}

# head + the config keys (the formats fragment) + the arms' equations + the
# run folder + tail
train_page() {
	cat man/src/supkit-train.head
	sed 's/^\.Ss /.Ss Keys: /' man/src/supkit-formats-config.mdoc
	cat man/src/supkit-train-arms.mdoc
	echo ".Sh FILES"
	cat man/src/supkit-formats-run.mdoc
	cat man/src/supkit-train.tail
}

formats_page() {
	declare -A title=([config]="TRAINER CONFIG" [data]="TOKENIZER AND TOKEN SHARDS"
		[records]="RUN RECORDS AND CONTRAST SPECS" [safetensors]="CHECKPOINTS"
		[diffs]="DIFFS FILES" [manifest]="SUPPLEMENT MANIFEST" [optim]="OPTIMIZER STATE"
		[checkpoint]="MODEL CHECKPOINTS" [run]="RUN FOLDERS" [derivations]="DERIVATIONS AND CLAIMS")
	cat man/src/supkit-formats.head
	for topic in config run data records checkpoint safetensors optim diffs manifest derivations; do
		f=man/src/supkit-formats-$topic.mdoc
		[[ -f $f ]] || continue
		echo ".Sh ${title[$topic]}"
		cat "$f"
	done
	cat man/src/supkit-formats.tail
}

page() { # man/NAME: its text on stdout
	case "$1" in
	man/supkit-audit.1) audit_page ;;
	man/supkit-train.1) train_page ;;
	man/supkit-formats.5) formats_page ;;
	*) echo "make-man.sh: '$1' is not an assembled page (${pages[*]})" >&2; return 2 ;;
	esac
}

if [[ "${1:-}" == "--check" ]]; then
	rc=0
	for p in "${pages[@]}"; do
		if [[ ! -f $p ]]; then
			echo "$p is missing: run make" >&2
			rc=1
		elif ! cmp -s <(page "$p") "$p"; then
			echo "$p differs from its sources in man/src: run make" >&2
			rc=1
		fi
	done
	exit $rc
fi

(($# > 0)) || set -- "${pages[@]}"
for p in "$@"; do
	[[ " ${pages[*]} " == *" $p "* ]] || { page "$p"; exit 2; }
done
for p in "$@"; do
	page "$p" >"$p.tmp"
	mv "$p.tmp" "$p"
done
