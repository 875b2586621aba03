#!/usr/bin/env bash
# Compiles the JUNCTION-UPF P4 program for both profiles, each with its own compiler, and
# fails on any error:
#
#   v1model (BMv2)    p4c-bm2-ss  -> build/p4/v1model/junction_upf.json and its P4Info
#   TNA (Tofino 2)    bf-p4c      -> build/p4/tna: tofino2.bin, context.json, bfrt.json, P4Info,
#                                    and the resource logs (-g) that docs/tofino.md is made from
#
# Tofino 1 (--arch tna) is not built: the reorder engine pauses queues with Tofino 2's
# advanced flow control, which Tofino 1 does not have (docs/tofino.md).
#
# The checked-in outputs must be the compilers', byte for byte:
#
#   hack/p4-build.sh           build, and fail if p4/p4info.txtpb, p4/tna/p4info.txtpb or
#                              the resource tables in docs/tofino.md are stale
#   hack/p4-build.sh --write   build, and write them (make p4)
#
# The compilers come from hack/tools.sh p4tools (bin/p4tools, bin/bf-p4c), else from the PATH.
# Environment: OUT (default build/p4); BF_P4C_FLAGS, extra bf-p4c flags (e.g. -DMAX_USERS=...
# to try another size; the check against the checked-in files then fails, by design).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/build/p4}
write=0
[[ ${1:-} == --write ]] && write=1

log() { printf 'p4-build: %s\n' "$*" >&2; }

"$ROOT/hack/tools.sh" p4tools
[[ -x "$ROOT/bin/p4tools/bin/p4c-bm2-ss" ]] && PATH="$ROOT/bin/p4tools/bin:$PATH"
[[ -x "$ROOT/bin/bf-p4c/bin/bf-p4c" ]] && PATH="$ROOT/bin/bf-p4c/bin:$PATH"
rm -rf "$OUT/v1model" "$OUT/tna"
mkdir -p "$OUT/v1model" "$OUT/tna"

log "v1model: $(command -v p4c-bm2-ss)"
p4c-bm2-ss --arch v1model --std p4-16 -o "$OUT/v1model/junction_upf.json" \
  --p4runtime-files "$OUT/v1model/p4info.txtpb" "$ROOT/p4/v1model/junction_upf.p4"
# The BMv2 JSON without p4c's indentation: it must fit a pipeline ConfigMap (1 MiB).
(cd "$ROOT" && go run ./hack/compact-json "$OUT/v1model/junction_upf.json")

# -g writes the resource logs. --p4runtime-force-std-externs lists registers and counters as
# P4Runtime's own objects, as p4c does for v1model, so that the operator reads both alike.
# Two back-end flags of bf-p4c 9.13.4, each for a fault of its default path:
#   --alt-phv-alloc  places tables first and allocates the PHV to fit them. The default
#                    (PHV first) needs 21-23 stages for this program and, when placement
#                    moves a stateful ALU after PHV allocation, fails with "cannot find
#                    allocation of <its input>".
#   --no-clot        keeps every header field in the PHV: with CLOTs, bf-p4c's deparser
#                    emits CLOTs (Ethernet's, IPv4's, the internal header's) that no
#                    parser state fills, and bfas stops ("No length for clot").
# Its log goes beside build/p4/tna, not into it: bf-p4c empties its output directory first.
tna_flags=(-Xp4c=--alt-phv-alloc -Xp4c=--no-clot)
log "tna: $(command -v bf-p4c) (Tofino 2; minutes)"
start=$SECONDS
# shellcheck disable=SC2086 # BF_P4C_FLAGS is a list of flags
if ! bf-p4c -g --target tofino2 --arch t2na --std p4-16 "${tna_flags[@]}" ${BF_P4C_FLAGS:-} -o "$OUT/tna" \
    --bf-rt-schema "$OUT/tna/bfrt.json" \
    --p4runtime-files "$OUT/tna/p4info.txtpb" --p4runtime-force-std-externs \
    "$ROOT/p4/tna/junction_upf.p4" >"$OUT/bf-p4c.log" 2>&1; then
  grep -v -e '--Wwarn' -e '^\s*\^' "$OUT/bf-p4c.log" | grep -B3 -A12 -i 'error' | head -80 >&2 || true
  log "bf-p4c failed (full output: $OUT/bf-p4c.log)"
  exit 1
fi
[[ -s "$OUT/tna/pipe/tofino2.bin" ]] || { log "bf-p4c wrote no tofino2.bin"; exit 1; }
log "tna: compiled in $((SECONDS - start)) s, $(grep -c 'warning:' "$OUT/bf-p4c.log") warnings"

(cd "$ROOT" && go run ./hack/tofino-report "$OUT/tna") >"$OUT/tna/report.md"

stale=0
check() { # check GENERATED CHECKED-IN: write, or compare
  if [[ $write == 1 ]]; then
    cp "$1" "$2"
    log "wrote ${2#"$ROOT"/}"
  elif ! cmp -s "$1" "$2"; then
    diff -u "$2" "$1" | head -40 >&2 || true
    log "${2#"$ROOT"/} is stale: run 'make p4' and commit it"
    stale=1
  fi
}
check "$OUT/v1model/p4info.txtpb" "$ROOT/p4/p4info.txtpb"
check "$OUT/tna/p4info.txtpb" "$ROOT/p4/tna/p4info.txtpb"
# docs/tofino.md: everything between the markers is the report.
doc="$ROOT/docs/tofino.md"
awk -v report="$OUT/tna/report.md" '
  /<!-- tofino-report begin -->/ { print; while ((getline line < report) > 0) print line; skip = 1; next }
  /<!-- tofino-report end -->/ { skip = 0 }
  !skip { print }
' "$doc" >"$OUT/tna/tofino.md"
grep -q '<!-- tofino-report end -->' "$OUT/tna/tofino.md" || { log "docs/tofino.md lacks its report markers"; exit 1; }
check "$OUT/tna/tofino.md" "$doc"
[[ $stale == 0 ]] || exit 1
log "done; outputs in $OUT"
