# cursor-bridge: `cursor-bridge serve` in a container, reachable from outside it.
#   docker build -t cursor-bridge .
#   docker run -e CURSOR_API_KEY -e APIKEY -p 127.0.0.1:3456:3456 cursor-bridge
# Or `docker compose up -d` (compose.yml). Clients must send APIKEY (x-api-key or Authorization: Bearer).

# Build stage: the devDependencies (TypeScript) build dist/, then `npm pack` makes the same tarball npm
# publishes. Installing a tarball never runs `prepare`, so the runtime stage needs no TypeScript.
# The Node 22 image both stages start from. Tests on machines that cannot pull it pass a local one with
# --build-arg NODE_IMAGE=… (test/docker/build-local-node-image.sh makes one from Debian and npm).
ARG NODE_IMAGE=node:22-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the `node` devDependency would install a second Node 22 from npm; the image has one.
RUN npm install --no-audit --no-fund --ignore-scripts
COPY tsconfig.json tsconfig.build.json ./
COPY bin bin
COPY ccr ccr
COPY lib lib
COPY examples examples
COPY mcp mcp
COPY src src
COPY workspace-templates workspace-templates
COPY console console
# The documentation the package ships, so its links work from an install too.
COPY README.md ./
COPY ARCHITECTURE.md ./
COPY docs docs
COPY deploy deploy
COPY bench/README.md bench/
COPY bench/results bench/results
COPY test/README.md test/
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json \
 && mkdir /pkg \
 && npm pack --ignore-scripts --pack-destination /pkg \
 && mv /pkg/cursor-bridge-*.tgz /pkg/cursor-bridge.tgz

# Runtime stage: production dependencies only. npm picks @cursor/sdk's platform package for this
# image's OS and CPU (@cursor/sdk-linux-x64, or -linux-arm64); the build fails here if it is missing,
# rather than the first request failing at run time.
FROM ${NODE_IMAGE}
ENV NODE_ENV=production
COPY --from=build /pkg/cursor-bridge.tgz /tmp/cursor-bridge.tgz
RUN npm install --global --prefix /usr/local --omit=dev --no-audit --no-fund /tmp/cursor-bridge.tgz \
 && node -e "const p = require('node:path'); const sdk = p.join('/usr/local/lib/node_modules/cursor-bridge/node_modules/@cursor/sdk'); const name = '@cursor/sdk-' + process.platform + '-' + process.arch; console.log(name, 'at', p.dirname(require.resolve(name + '/package.json', { paths: [sdk] })));" \
 && rm /tmp/cursor-bridge.tgz \
 && npm cache clean --force

# The image's non-root user. Its ~/.claude-code-router exists (owned by it) before a volume is mounted
# there, so a new named volume starts out writable by that user.
USER node
WORKDIR /home/node
RUN mkdir -p /home/node/.claude-code-router

# Listen on every interface of the container; serve refuses to start without APIKEY (127.0.0.1 would be
# unreachable from outside). Cursor's local sandbox is forced off in containers (detected at start).
ENV HOST=0.0.0.0
EXPOSE 3456
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:3456/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["cursor-bridge"]
CMD ["serve", "--port", "3456"]
