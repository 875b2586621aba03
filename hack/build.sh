#!/bin/sh
# Builds every binary of the Junction image into OUTDIR: the Dockerfile's build stage runs this,
# and test/chart (TestDockerfileBuildsEveryBinary) runs the Dockerfile's RUN lines, this included,
# on a copy of what the Dockerfile copies in. Static binaries (CGO_ENABLED=0) for GOOS/GOARCH, so
# one builder cross-compiles every platform of a multi-arch image.
#
#   hack/build.sh OUTDIR         GOOS, GOARCH: the target (default: the Go toolchain's own)
#
# cmd/vectors is not in the image: it runs the packet vectors of test/ (a test tool).
set -eu

# The image's binaries, each ./cmd/<name> (the Dockerfile's header says what each is for).
BINARIES="manager softupf ue-agent gnb-emulator smf-emulator"

out=${1:?usage: hack/build.sh OUTDIR}
pkgs=
for b in $BINARIES; do pkgs="$pkgs ./cmd/$b"; done
mkdir -p "$out"
# -trimpath: no builder paths in the binaries; -s -w: no symbol table or DWARF (smaller image).
# shellcheck disable=SC2086
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out/" $pkgs
