# Multi-stage build: a static binary on a distroless base, run as non-root.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make build

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /src/redis-prober /bin/redis-prober
USER 65532:65532
EXPOSE 9379
ENTRYPOINT ["/bin/redis-prober"]
