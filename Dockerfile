# nfkube agent image. Two stages: the build stage compiles the N-API addon and the TypeScript;
# the runtime stage holds only node, the compiled code, production dependencies and the addon.
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
# The package's install script builds the addon (node-gyp), prepare compiles the TypeScript.
RUN npm ci && npm prune --omit=dev \
 && test -f build/Release/nfnl.node && test -f dist/src/cli/main.js

FROM ${RUNTIME_BASE}
WORKDIR /opt/nfkube
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/dist/src/ dist/src/
COPY --from=build /src/build/Release/nfnl.node build/Release/
COPY --from=build /src/bin/ bin/
ENV NODE_ENV=production
ENTRYPOINT ["node", "/opt/nfkube/bin/nfkube"]
CMD ["agent"]
