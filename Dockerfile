# Static bidguard binary on a distroless base. CI builds the same binary with
# the same command (make build): CGO_ENABLED=0 go build -trimpath ./cmd/bidguard
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/bidguard ./cmd/bidguard

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/bidguard /bidguard
USER nonroot:nonroot
EXPOSE 8080 9090
ENTRYPOINT ["/bidguard"]
CMD ["serve"]
