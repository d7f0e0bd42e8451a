# Static bidguard binary on a distroless base. make build builds the same
# binary with the same flags (CGO_ENABLED=0 go build -trimpath -ldflags
# "-s -w -X main.version=... -X main.revision=..."); make image passes the
# version and revision (git describe --tags --always --dirty, git rev-parse
# HEAD) as build args:
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) \
#     --build-arg REVISION=$(git rev-parse HEAD) -t bidguard .
FROM golang:1.26 AS build
ARG VERSION=dev
ARG REVISION=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X main.version=${VERSION} -X main.revision=${REVISION}" \
    -o /out/bidguard ./cmd/bidguard

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bidguard /bidguard
USER nonroot:nonroot
EXPOSE 8080 9090
ENTRYPOINT ["/bidguard"]
# Exchange traffic on :8080 and /metrics, /healthz, /readyz on :9090, on
# every interface of the container (the embedded config binds loopback,
# which `docker run -p` cannot reach). With a config of your own, pass the
# whole command: serve --config /etc/bidguard/bidguard.yaml (its listen and
# adminListen apply unless --listen/--admin are given too).
CMD ["serve", "--listen", ":8080", "--admin", ":9090"]
