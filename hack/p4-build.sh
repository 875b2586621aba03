#!/usr/bin/env bash
# Builds the JUNCTION-UPF P4 program for both targets with whichever compiler is
# present, and checks that the P4Info p4c generates for v1model has the names and
# IDs of the checked-in p4/p4info.txtpb.
#
#   v1model (BMv2): p4c on the PATH, else the p4lang/p4c Docker image
#   TNA (Tofino 2): bf-p4c from the Intel SDE ($SDE_INSTALL/bin or the PATH)
#
# Compilers are optional: without them the script says so and still runs the
# source-level checks (go test ./p4/...). P4_BUILD_REQUIRE=1 makes a missing
# compiler an error (for CI machines that have them).
#
# Environment: OUT (default build/p4), P4C_IMAGE (default p4lang/p4c:latest),
# SDE_INSTALL, P4_BUILD_REQUIRE.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-$ROOT/build/p4}
P4C_IMAGE=${P4C_IMAGE:-p4lang/p4c:latest}
REQUIRE=${P4_BUILD_REQUIRE:-0}

mkdir -p "$OUT/v1model" "$OUT/tna"
OUT=$(cd "$OUT" && pwd)
missing=()

log() { printf 'p4-build: %s\n' "$*" >&2; }

# --- v1model -------------------------------------------------------------------
v1_p4info="$OUT/v1model/p4info.txt"
rm -f "$v1_p4info"
v1_args=(--target bmv2 --arch v1model --std p4-16)
if command -v p4c >/dev/null 2>&1; then
    log "v1model: $(command -v p4c)"
    p4c "${v1_args[@]}" -o "$OUT/v1model" --p4runtime-files "$v1_p4info" \
        "$ROOT/p4/v1model/junction_upf.p4"
elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    log "v1model: docker image $P4C_IMAGE"
    docker run --rm -u "$(id -u):$(id -g)" \
        -v "$ROOT/p4:/src/p4:ro" -v "$OUT:/out" -w /src "$P4C_IMAGE" \
        p4c "${v1_args[@]}" -o /out/v1model --p4runtime-files /out/v1model/p4info.txt \
        p4/v1model/junction_upf.p4
else
    log "v1model: SKIPPED, no p4c on the PATH and no usable docker (install p4c, or start"
    log "         docker and 'docker pull $P4C_IMAGE')"
    missing+=(p4c)
fi

# --- TNA (Tofino 2) --------------------------------------------------------------
tna_p4info="$OUT/tna/p4info.txt"
rm -f "$tna_p4info"
bf_p4c=""
if [[ -n "${SDE_INSTALL:-}" && -x "$SDE_INSTALL/bin/bf-p4c" ]]; then
    bf_p4c="$SDE_INSTALL/bin/bf-p4c"
elif command -v bf-p4c >/dev/null 2>&1; then
    bf_p4c=$(command -v bf-p4c)
fi
if [[ -n "$bf_p4c" ]]; then
    log "tna: $bf_p4c"
    "$bf_p4c" --target tofino2 --arch t2na --std p4-16 -o "$OUT/tna" \
        --bf-rt-schema "$OUT/tna/bfrt.json" --p4runtime-files "$tna_p4info" \
        "$ROOT/p4/tna/junction_upf.p4"
else
    log "tna: SKIPPED, no bf-p4c (the Intel P4 Studio SDE: source its set_sde.bash or set"
    log "     SDE_INSTALL)"
    missing+=(bf-p4c)
fi

# --- checks ------------------------------------------------------------------------
test_env=()
[[ -s "$v1_p4info" ]] && test_env+=("JUNCTION_GENERATED_P4INFO=$v1_p4info")
[[ -s "$tna_p4info" ]] && test_env+=("JUNCTION_GENERATED_TNA_P4INFO=$tna_p4info")
log "checking the P4 source against p4/p4info.txtpb${test_env:+ and the generated P4Info}"
(cd "$ROOT" && env "${test_env[@]}" go test -count=1 ./p4/...)
if [[ ${#test_env[@]} -gt 0 ]]; then
    (cd "$ROOT" && env "${test_env[@]}" go test -count=1 -run TestGeneratedP4Info -v ./p4/ |
        grep -E '^(=== RUN|--- |    )' || true)
fi

if [[ ${#missing[@]} -gt 0 ]]; then
    log "not built with: ${missing[*]} (source checks passed)"
    if [[ "$REQUIRE" == 1 ]]; then
        exit 1
    fi
fi
log "done; outputs in $OUT"
