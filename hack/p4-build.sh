#!/usr/bin/env bash
# Compiles the JUNCTION-UPF P4 program for both profiles with p4c and fails on any error:
#
#   v1model (BMv2)    p4c-bm2-ss  -> build/p4/v1model/junction_upf.json and its P4Info
#   TNA (Tofino 2)    p4test with p4c's Tofino includes (front and mid end: the program is
#                     checked, not compiled for the chip), and bf-p4c too where the Intel SDE is
#                     present ($SDE_INSTALL/bin or the PATH)
#
# The checked-in p4/p4info.txtpb must be p4c's P4Info, byte for byte:
#
#   hack/p4-build.sh           build, and fail if p4/p4info.txtpb is stale
#   hack/p4-build.sh --write   build, and write p4c's P4Info to p4/p4info.txtpb (make p4)
#
# p4c comes from hack/tools.sh p4tools (bin/p4tools), else from the PATH. Environment: OUT
# (default build/p4), SDE_INSTALL.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/build/p4}
write=0
[[ ${1:-} == --write ]] && write=1

log() { printf 'p4-build: %s\n' "$*" >&2; }

"$ROOT/hack/tools.sh" p4tools
if [[ -x "$ROOT/bin/p4tools/bin/p4c-bm2-ss" ]]; then
  PATH="$ROOT/bin/p4tools/bin:$PATH"
  tofino_include="$ROOT/bin/p4tools/share/p4c/tofino-p4include"
else
  tofino_include=$(dirname "$(command -v p4test)")/../share/p4c/tofino-p4include
fi
mkdir -p "$OUT/v1model" "$OUT/tna"

log "v1model: $(command -v p4c-bm2-ss)"
p4c-bm2-ss --arch v1model --std p4-16 -o "$OUT/v1model/junction_upf.json" \
  --p4runtime-files "$OUT/v1model/p4info.txtpb" "$ROOT/p4/v1model/junction_upf.p4"

log "tna: p4test (Tofino 2 includes)"
p4test --std p4-16 -D__TARGET_TOFINO__=2 -I "$tofino_include" "$ROOT/p4/tna/junction_upf.p4"
bf_p4c=""
if [[ -n "${SDE_INSTALL:-}" && -x "$SDE_INSTALL/bin/bf-p4c" ]]; then
  bf_p4c="$SDE_INSTALL/bin/bf-p4c"
elif command -v bf-p4c >/dev/null 2>&1; then
  bf_p4c=$(command -v bf-p4c)
fi
if [[ -n "$bf_p4c" ]]; then
  log "tna: $bf_p4c"
  "$bf_p4c" --target tofino2 --arch t2na --std p4-16 -o "$OUT/tna" \
    --bf-rt-schema "$OUT/tna/bfrt.json" --p4runtime-files "$OUT/tna/p4info.txtpb" \
    "$ROOT/p4/tna/junction_upf.p4"
  (cd "$ROOT" && JUNCTION_GENERATED_TNA_P4INFO="$OUT/tna/p4info.txtpb" go test -count=1 -run TestGeneratedP4Info ./p4/)
fi

if [[ $write == 1 ]]; then
  cp "$OUT/v1model/p4info.txtpb" "$ROOT/p4/p4info.txtpb"
  log "wrote p4/p4info.txtpb"
elif ! cmp -s "$OUT/v1model/p4info.txtpb" "$ROOT/p4/p4info.txtpb"; then
  diff -u "$ROOT/p4/p4info.txtpb" "$OUT/v1model/p4info.txtpb" | head -40 >&2 || true
  log "p4/p4info.txtpb is not p4c's P4Info: run 'make p4' and commit it"
  exit 1
fi
log "done; outputs in $OUT"
