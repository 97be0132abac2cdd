# nfkube agent image. The build stage compiles the N-API addon and the TypeScript; the final
# stage, built from scratch, holds only node and the shared libraries it loads, the compiled
# code, production dependencies, the addon and the compiled CNI plugin (static; the init container
# copies it to the host): no shell and no package manager.
# nfkube speaks nfnetlink itself, so the runtime stage installs no iptables, ipset, nft or
# iproute2 (test/ship/image.test.ts checks the built image for them).
#
# Base images are build arguments so the image builds without a registry:
#   podman build --isolation chroot \
#     --build-arg BUILD_BASE=<node 24 + python3, make, g++> \
#     --build-arg RUNTIME_BASE=<node 24, nothing else needed> -t nfkube .
# Node must be at /usr/local/bin/node with its headers in /usr/local/include/node (the official
# node images' layout), so node-gyp builds against them instead of downloading headers.
ARG BUILD_BASE=docker.io/library/node:24-bookworm
ARG RUNTIME_BASE=docker.io/library/node:24-bookworm-slim

FROM ${BUILD_BASE} AS build
# The commit the image is built from (the build context has no .git): --build-arg NFKUBE_REVISION=$(git rev-parse HEAD)
ARG NFKUBE_REVISION=
WORKDIR /src
# The image builds the addon for its own base rather than using the package's prebuilt binaries.
ENV NFKUBE_BUILD_FROM_SOURCE=1 \
    NFKUBE_REVISION=${NFKUBE_REVISION} \
    npm_config_nodedir=/usr/local \
    npm_config_audit=false \
    npm_config_fund=false \
    npm_config_update_notifier=false
COPY package.json package-lock.json binding.gyp tsconfig.json ./
COPY native/ native/
COPY src/ src/
COPY bin/ bin/
COPY scripts/ scripts/
# The package's install script builds the addon and the CNI plugin (node-gyp), prepare compiles
# the TypeScript.
RUN npm ci && npm prune --omit=dev \
 && test -f build/Release/nfnl.node && test -f build/Release/nfkube-cni-ipam && test -f dist/src/cli/main.js

# The runtime root filesystem, distroless-style: node, the shared libraries node and the addon
# load (as ldd lists them), the minimum of /etc, and nothing else from the base image: no shell,
# no package manager, no coreutils. Assembled in a stage of the runtime base, which has them.
FROM ${RUNTIME_BASE} AS rootfs
COPY --from=build /src/build/Release/nfnl.node /tmp/nfnl.node
RUN set -eu; \
    mkdir -p /rootfs/usr/local/bin /rootfs/etc /rootfs/tmp /rootfs/opt/nfkube; \
    chmod 1777 /rootfs/tmp; \
    cp -a /usr/local/bin/node /rootfs/usr/local/bin/node; \
    for lib in $(ldd /usr/local/bin/node /tmp/nfnl.node | grep -v ':$' | grep -o '/[^ ]*' | sort -u); do \
      cp -aL --parents "$lib" /rootfs/; \
    done; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n' > /rootfs/etc/passwd; \
    printf 'root:x:0:\nnogroup:x:65534:\n' > /rootfs/etc/group; \
    printf 'hosts: files dns\n' > /rootfs/etc/nsswitch.conf

FROM scratch
COPY --from=rootfs /rootfs/ /
WORKDIR /opt/nfkube
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/dist/src/ dist/src/
COPY --from=build /src/build/Release/nfnl.node build/Release/
COPY --from=build /src/build/Release/nfkube-cni-ipam build/Release/
COPY --from=build /src/bin/ bin/
ENV NODE_ENV=production
ENTRYPOINT ["/usr/local/bin/node", "/opt/nfkube/bin/nfkube"]
CMD ["agent"]
