# Multi-stage, multi-arch build: the Go stage runs on the builder's own
# platform and cross-compiles for the target's (docker buildx build
# --platform linux/amd64,linux/arm64 ., or buildah build --platform), so no
# stage runs under emulation. A static binary on distroless, as non-root.
FROM --platform=$BUILDPLATFORM golang:1.26-bookworm AS build
ARG TARGETOS=linux
ARG TARGETARCH=amd64
# The build context has no .git (.dockerignore): make docker passes these.
ARG VERSION=dev
ARG REVISION=unknown
ARG BRANCH=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN GOOS=$TARGETOS GOARCH=$TARGETARCH make build VERSION=$VERSION REVISION=$REVISION BRANCH=$BRANCH

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/redis-prober /bin/redis-prober
COPY --from=build /src/LICENSE /src/NOTICE /
USER 65532:65532
EXPOSE 9379
ENTRYPOINT ["/bin/redis-prober"]
