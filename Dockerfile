# syntax=docker/dockerfile:1
#
# One image with every Junction binary; each Deployment or DaemonSet picks its own by `command`:
#   /manager       the operator, the default entrypoint              config/manager
#   /softupf       the software UPF (P4Runtime server, AF_PACKET ports)
#   /ue-agent      the UE agent, one per edge node                   ue-daemonset/
#   /gnb-emulator  the gNB emulator, or W-AGF (testbed and demo)
#   /smf-emulator  an SMF's N4 side (testbed and demo, docs/n4.md)
# hack/build.sh names them and builds them; test/chart runs this file's build stage as written.
#
# hack/release.sh builds and pushes it for linux/amd64 and linux/arm64 (edge nodes are often
# arm64), tagged with the VERSION file; by hand:
#   docker buildx build --platform linux/amd64,linux/arm64 -t ghcr.io/junction-atsss/junction:$(cat VERSION) \
#       --build-arg VERSION=$(cat VERSION) --build-arg REVISION=$(git rev-parse HEAD) .
#
# Capabilities at run time. The default user is 65532 (non-root), which holds none: Kubernetes
# sets no ambient capabilities, so a capability added to a non-root container is lost at exec.
# A binary that needs one therefore runs as uid 0 with every other capability dropped and
# allowPrivilegeEscalation false.
#   manager       none: non-root, all dropped, read-only root filesystem (config/manager)
#   softupf       CAP_NET_RAW (packet sockets on its ports); with AF_XDP ports (--port-kind xdp
#                 or auto) also CAP_NET_ADMIN, CAP_BPF and CAP_IPC_LOCK; with --ports-netns also
#                 CAP_SYS_ADMIN (setns), which only the testbed uses
#   ue-agent      CAP_NET_ADMIN and the host's /dev/net/tun, on the host network (ue-daemonset/);
#                 with --netns also CAP_SYS_ADMIN, testbed only
#   gnb-emulator  a testbed tool: CAP_NET_ADMIN and /dev/net/tun (its TUN, policy rules and
#                 ip_forward in its namespace); with --netns also CAP_SYS_ADMIN
#   smf-emulator  none: a UDP client of the UPF's N4 port

ARG GO_VERSION=1.24

# The build runs on the builder's own platform and cross-compiles (CGO_ENABLED=0), which is
# much faster than building under emulation for another architecture.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
COPY p4/ p4/
COPY hack/build.sh hack/
ARG TARGETOS TARGETARCH
RUN --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH:-$(go env GOARCH)} hack/build.sh out

# Static binaries only: no shell, no package manager, CA certificates and /etc/passwd included.
FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
LABEL org.opencontainers.image.title="junction" \
      org.opencontainers.image.description="ATSSS for Kubernetes: the Junction operator, software UPF, UE agent, gNB and SMF emulators" \
      org.opencontainers.image.url="https://github.com/junction-atsss/junction" \
      org.opencontainers.image.source="https://github.com/junction-atsss/junction" \
      org.opencontainers.image.documentation="https://github.com/junction-atsss/junction#readme" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.base.name="gcr.io/distroless/static-debian12:nonroot"
COPY --from=build /src/out/ /
USER 65532:65532
ENTRYPOINT ["/manager"]
