# image-refresh: one compiled Bun executable on an empty base, for linux/amd64 and linux/arm64.
# The binary is glibc-linked; the final image carries exactly what `readelf -d` says it needs
# (glibc's loader, libc, libm, libpthread, libdl), a CA bundle and a passwd entry for the
# non-root user. No shell, no package manager.
#
#   buildah bud --platform linux/amd64,linux/arm64 --manifest image-refresh:0.1.0 .
#   docker buildx build --platform linux/amd64,linux/arm64 -t <registry>/image-refresh:0.1.0 --push .
#
# Nothing runs under emulation: the build stage runs on the build machine and cross-compiles
# for TARGETARCH, and the target's Debian stage is only copied from. BUN_VERSION is the `bun`
# devDependency of package.json (tests/image.test.ts checks); scripts/release.sh passes it.
# tests/image-dockerfile.test.ts builds this file against local stand-ins of both bases.

ARG BUN_VERSION=1.4.5
ARG DEBIAN_VERSION=bookworm

# Runtime libraries of the target architecture, from the Debian release the Bun image is built on.
FROM debian:${DEBIAN_VERSION}-slim AS runtime

FROM --platform=$BUILDPLATFORM oven/bun:${BUN_VERSION} AS build
ARG TARGETARCH
WORKDIR /src
COPY package.json package-lock.json ./
# The npm ci equivalent: exact versions from package-lock.json, no lifecycle scripts; only the
# runtime dependencies, since the bundler inlines them and types are not needed to compile.
RUN bun install --frozen-lockfile --production --ignore-scripts
COPY . .
# --bytecode: the runtime loads precompiled bytecode instead of parsing ~480 bundled modules on
# every tick; --splitting keeps the lazily imported parts (telemetry SDK, simulators) in chunks
# of their own, so `version` and a tick load only what they use. --no-compile-autoload-*: a
# compiled Bun program would otherwise read .env and bunfig.toml (even its `preload` scripts)
# from the working directory. --compile-jit-policy=1000: a tick is run-once code, which the
# JIT would compile at a cost it never earns back; keeping it in the interpreter longer brings
# the first request ~2 ms sooner and a no-op tick ~20 % faster (docs/benchmarks.md).
# Same flags as `npm run build` (tests/image.test.ts checks).
# A cross-compile fetches Bun's runtime for the target (@oven/bun-linux-aarch64) from npm.
RUN case "$TARGETARCH" in amd64) target=x64 ;; arm64) target=arm64 ;; \
      *) echo "unsupported TARGETARCH=$TARGETARCH (amd64 or arm64)" >&2; exit 1 ;; esac \
 && bun build ./refresh.ts --compile --minify --bytecode --format=esm --splitting --no-compile-autoload-dotenv --no-compile-autoload-bunfig --compile-jit-policy=1000 --target=bun-linux-$target --outfile /rootfs/usr/local/bin/image-refresh

# The final stage's files, picked for TARGETARCH. The loader goes where the binary's
# PT_INTERP names it; the libraries go to /lib, which glibc's loader searches without ld.so.cache.
COPY --from=runtime /usr/lib/*-linux-gnu/ld-linux-*.so.* /usr/lib/*-linux-gnu/libc.so.6 /usr/lib/*-linux-gnu/libm.so.6 /usr/lib/*-linux-gnu/libpthread.so.0 /usr/lib/*-linux-gnu/libdl.so.2 /runtime/
RUN case "$TARGETARCH" in amd64) loader=/lib64/ld-linux-x86-64.so.2 ;; arm64) loader=/lib/ld-linux-aarch64.so.1 ;; esac \
 && mkdir -p /rootfs/lib /rootfs/lib64 /rootfs/etc/ssl/certs \
 && cp /runtime/libc.so.6 /runtime/libm.so.6 /runtime/libpthread.so.0 /runtime/libdl.so.2 /rootfs/lib/ \
 && cp "/runtime/${loader##*/}" "/rootfs$loader" \
 && cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ \
 && echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > /rootfs/etc/passwd \
 && echo 'nonroot:x:65532:' > /rootfs/etc/group

FROM scratch
COPY --from=build /rootfs/ /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/image-refresh"]
CMD ["tick"]
