#!/usr/bin/env bash
# make-man.sh: assemble the shared man pages from their fragments.
#   man/supkit-audit.1   = man/src/supkit-audit.head + supkit-audit-<sub>.mdoc (in
#                          subcommand order) + man/src/supkit-audit.tail
#   man/supkit-train.1   = supkit-train.head + config keys + arms + run folder + tail
#   man/supkit-formats.5 = man/src/supkit-formats.head + a .Sh per
#                          supkit-formats-<topic>.mdoc + man/src/supkit-formats.tail
# With --check, write nothing and exit 1 when a committed page is out of date.
set -euo pipefail
cd "$(dirname "$0")/.."
out_dir=man
if [[ "${1:-}" == "--check" ]]; then out_dir=$(mktemp -d); trap 'rm -rf "$out_dir"' EXIT; fi

{
	cat man/src/supkit-audit.head
	for sub in compute stats geometry digest step0 trajectory; do
		f=man/src/supkit-audit-$sub.mdoc
		[[ -f $f ]] || continue
		# a fragment may open with its own .Ss heading
		head -n 1 "$f" | grep -q '^\.Ss' || echo ".Ss supkit audit $sub"
		cat "$f"
	done
	cat man/src/supkit-audit.tail
} >"$out_dir/supkit-audit.1.tmp"
mv "$out_dir/supkit-audit.1.tmp" "$out_dir/supkit-audit.1"

# man/supkit-train.1 = head + the config keys (the formats fragment) + the arms'
# equations + the run folder + tail
{
	cat man/src/supkit-train.head
	sed 's/^\.Ss /.Ss Keys: /' man/src/supkit-formats-config.mdoc
	cat man/src/supkit-train-arms.mdoc
	echo ".Sh FILES"
	cat man/src/supkit-formats-run.mdoc
	cat man/src/supkit-train.tail
} >"$out_dir/supkit-train.1.tmp"
mv "$out_dir/supkit-train.1.tmp" "$out_dir/supkit-train.1"

declare -A title=([config]="TRAINER CONFIG" [data]="TOKENIZER AND TOKEN SHARDS"
	[records]="RUN RECORDS AND CONTRAST SPECS" [safetensors]="CHECKPOINTS"
	[diffs]="DIFFS FILES" [manifest]="SUPPLEMENT MANIFEST" [optim]="OPTIMIZER STATE"
	[checkpoint]="MODEL CHECKPOINTS" [run]="RUN FOLDERS" [derivations]="DERIVATIONS AND CLAIMS")
{
	cat man/src/supkit-formats.head
	for topic in config run data records checkpoint safetensors optim diffs manifest derivations; do
		f=man/src/supkit-formats-$topic.mdoc
		[[ -f $f ]] || continue
		echo ".Sh ${title[$topic]}"
		cat "$f"
	done
	cat man/src/supkit-formats.tail
} >"$out_dir/supkit-formats.5.tmp"
mv "$out_dir/supkit-formats.5.tmp" "$out_dir/supkit-formats.5"

if [[ "${1:-}" == "--check" ]]; then
	rc=0
	for p in supkit-audit.1 supkit-formats.5 supkit-train.1; do
		cmp -s "$out_dir/$p" "man/$p" || { echo "man/$p is out of date: run scripts/make-man.sh" >&2; rc=1; }
	done
	exit $rc
fi
