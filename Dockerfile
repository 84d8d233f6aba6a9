# The sidesync image (issue 9): the static release binary alone, at /sidesync, on scratch.
# It is the same layout as the daemonless build (go run ./cmd/sidesync-image, docs/IMAGE.md),
# which is how releases are built; internal/cluster/image's TestContract keeps the two in step.
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --always) --build-arg COMMIT=$(git rev-parse HEAD) \
#     -t ghcr.io/sidesync/sidesync:dev .

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=v0.0.0-unknown
ARG COMMIT=unknown
WORKDIR /src
# go build fetches only the modules cmd/sidesync links (golang.org/x/sys), not the whole go.mod.
COPY . .
# The release build itself: static (no C library in scratch), stripped, reproducible, stamped.
RUN PROGRAMS=sidesync PLATFORMS="$TARGETOS/$TARGETARCH" VERSION="$VERSION" COMMIT="$COMMIT" \
      scripts/release.sh /out \
 && mv "/out/sidesync-$TARGETOS-$TARGETARCH" /out/sidesync \
 && chmod 0555 /out/sidesync

FROM scratch
ARG VERSION=v0.0.0-unknown
ARG COMMIT=unknown
LABEL org.opencontainers.image.source="https://github.com/sidesync/sidesync" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
COPY --from=build /out/sidesync /sidesync
USER 65532:65532
ENTRYPOINT ["/sidesync"]
