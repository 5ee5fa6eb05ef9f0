# syntax=docker/dockerfile:1
# image-refresh: one compiled Bun executable on an empty base. The runtime is musl-linked, so the
# final image carries exactly what `readelf -d` says that binary needs (the musl loader, which
# also serves libc.musl-x86_64.so.1, plus libstdc++ and the libgcc_s it pulls in), a CA bundle
# and a passwd entry for the non-root user. No shell, no package manager.
# tests/image.test.ts builds the same binary and checks this file's final stage.

ARG BUN_VERSION=1.4.5
ARG ALPINE_VERSION=3.22

# Build on Alpine so the musl target is the host's own runtime: nothing is downloaded at compile.
FROM oven/bun:${BUN_VERSION}-alpine AS build
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
# from the working directory. Same flags as `npm run build` (tests/image.test.ts checks).
RUN bun build ./refresh.ts --compile --minify --bytecode --format=esm --splitting --no-compile-autoload-dotenv --no-compile-autoload-bunfig --target=bun-linux-x64-musl --outfile /out/image-refresh

# Runtime libraries and certificates come from the Alpine release the binary was built against.
FROM alpine:${ALPINE_VERSION} AS runtime
RUN apk add --no-cache libstdc++ libgcc ca-certificates \
 && mkdir -p /rootfs/etc \
 && echo 'nonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin' > /rootfs/etc/passwd \
 && echo 'nonroot:x:65532:' > /rootfs/etc/group

FROM scratch
COPY --from=runtime /lib/ld-musl-x86_64.so.1 /lib/ld-musl-x86_64.so.1
COPY --from=runtime /usr/lib/libstdc++.so.6 /usr/lib/libstdc++.so.6
COPY --from=runtime /usr/lib/libgcc_s.so.1 /usr/lib/libgcc_s.so.1
# The distribution CA bundle, for anything that reads the system trust store (Bun itself also
# carries its own bundled Mozilla roots).
COPY --from=runtime /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=runtime /rootfs/etc/passwd /rootfs/etc/group /etc/
COPY --from=build /out/image-refresh /usr/local/bin/image-refresh
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/image-refresh"]
CMD ["tick"]
