/* derive.h: which entries of a supplement are derived, and from which
 * entries: the records supkit pack writes into the manifest (each entry's
 * "derivation") and supkit verify re-derives.
 *
 * The kinds (an entry's derivation "kind"):
 *   "command"  a supkit command's JSON output carrying its own derivation
 *              block (lib/derivation.h: every audit's --json): the block,
 *              each input given "entry", the supplement entry with its bytes
 *              (found by SHA-256 and size; among several, the one whose path
 *              ends in the most components of the recorded one, then the
 *              first; when no entry has those bytes, the one entry whose path
 *              ends in the most components of the recorded one, so that an
 *              input changed since is still found, and named in a note); an
 *              input no entry holds has no "entry";
 *   "claims"   a claims file (lib/claims.h): "derivations", the distinct
 *              derivations of its claims, resolved the same way;
 *   "run"      a trainer's result.json with config.cfg beside it: "inputs",
 *              [{"role": "config" | "curve" | "checkpoint", "entry"}]: the
 *              config.cfg and curve.jsonl beside it, and its checkpoint:
 *              model.safetensors beside it, or else the one entry named
 *              <its folder's name>.safetensors;
 *   "check"    a compute audit JSON without a derivation block (an "arms"
 *              array of figures, the papers' layout; not an older supkit's
 *              own --json, whose arms carry "config_sha256"): {"tool":
 *              "supkit-audit", "command": "compute"}, checked by
 *              `supkit audit compute --check`.
 * A safetensors entry's "safetensors_digest" is derived too (verify computes
 * it again); it needs no record.
 *
 * Leaves out: running anything (rederive.h). Reference: supkit-pack(1),
 * supkit-formats(5) SUPPLEMENT MANIFEST.
 */
#ifndef SUPKIT_SUPPLEMENTS_DERIVE_H
#define SUPKIT_SUPPLEMENTS_DERIVE_H

#include <stddef.h>
#include "supplements/manifest.h"
#include "supplements/scan.h"

#define DERIVE_CAPTURE_MAX ((size_t)64 << 20)  /* JSON entries read for their records */

/* The scan's capture_if for derive_lift (and verify's sha256sum manifests):
 * entries ending in ".json", and top-level "SHA256SUMS" and "*.sha256". */
int derive_capture(const char *path);

/* Record in m (the scan's entries, sorted) the derivation of every derived
 * entry among s's captured ones. Appends to *notes (owned lines, *n_notes)
 * one line per input no entry holds and per record that could not be read. */
void derive_lift(const struct scan *s, struct manifest *m, char ***notes, size_t *n_notes);

/* The entry of m holding bytes with this SHA-256 and size, preferring the
 * path that ends most like want (NULL when none). */
const struct manifest_entry *derive_find(const struct manifest *m, const char *sha256, uint64_t size,
					 const char *want);

/* When no entry has an input's bytes: the one entry whose path ends in the
 * most components of want (NULL when none shares a component, or several
 * share the most). */
const struct manifest_entry *derive_find_path(const struct manifest *m, const char *want);

#endif
