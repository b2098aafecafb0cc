# b3: a static binary in an empty image.
#
#   docker build -t b3 .
#   docker run -p 9000:9000 -p 127.0.0.1:9001:9001 -p 127.0.0.1:9002:9002 -v b3data:/data b3
#
# The binary is built with CGO_ENABLED=0 (cmd/b3's TestStaticBinary checks
# that such a build has no ELF interpreter), so FROM scratch suffices.
# .dockerignore keeps a local data root (credentials!) and .git out of the
# build context; name the build with --build-arg VERSION=... REVISION=...
# (b3 version, b3_build_info).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=""
ARG REVISION=""
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags="-s -w -X github.com/b3-storage/b3/internal/admin.stampedVersion=${VERSION} -X github.com/b3-storage/b3/internal/admin.stampedRevision=${REVISION}" \
      -o /out/b3 ./cmd/b3 \
 && mkdir -p -m 0700 /out/data

FROM scratch
COPY --from=build /out/b3 /b3
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
# Inside a container the listeners must not be bound to loopback. Keep the
# admin port (9001) unpublished or published on a private address only:
# /metrics and /health are unauthenticated there. The console (9002) logs
# in with any access key; publish it on a private address too.
ENV B3_DATA=/data \
    B3_ADDRESS=0.0.0.0:9000 \
    B3_ADMIN_ADDRESS=0.0.0.0:9001 \
    B3_CONSOLE_ADDRESS=0.0.0.0:9002
VOLUME /data
EXPOSE 9000 9001 9002
# FROM scratch has no curl: b3 asks its own /health/ready (admin port).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
    CMD ["/b3", "healthcheck", "--url", "http://127.0.0.1:9001/health/ready"]
ENTRYPOINT ["/b3"]
CMD ["server"]
