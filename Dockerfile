# Builds the operator (/manager) and the software UPF (/softupf) into one small image.
#   docker build -t ghcr.io/junction-atsss/junction:v0.1.0 .
# The software UPF needs CAP_NET_RAW (AF_PACKET ports) when run from this image.
FROM golang:1.24 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY controllers/ controllers/
COPY internal/ internal/
COPY p4/ p4/
ARG TARGETOS=linux TARGETARCH=amd64
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w" -o /out/manager ./cmd/manager && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags "-s -w" -o /out/softupf ./cmd/softupf

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/manager /out/softupf /
USER 65532:65532
ENTRYPOINT ["/manager"]
