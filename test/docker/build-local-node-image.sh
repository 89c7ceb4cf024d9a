#!/usr/bin/env bash
# A local stand-in for node:22-slim, for machines that reach Debian's mirror and the npm registry but not
# Docker Hub: Debian bookworm (debootstrap, minbase) with the Node 22 the project pins and npm 10, both from
# the npm registry, a `node` user (uid 1000) as in the official image, and this machine's CA bundle
# (NODE_EXTRA_CA_CERTS), so npm inside a build trusts what this machine trusts. Needs root, debootstrap and
# a Docker daemon. Prints the image's name on stdout.
#
#   test/docker/build-local-node-image.sh [NAME]    (default cursor-bridge-local/node:22-slim)
#   CURSOR_BRIDGE_DOCKER_TEST=1 CURSOR_BRIDGE_DOCKER_NODE_IMAGE=<NAME> npx vitest run test/docker
set -euo pipefail
name=${1:-cursor-bridge-local/node:22-slim}
repo=$(cd "$(dirname "$0")/../.." && pwd)
node_version=$(node -p "require('$repo/package.json').devDependencies.node")
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64) arch=arm64 ;;
  *) echo "build-local-node-image: no Node build for $(uname -m)" >&2; exit 1 ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

echo "build-local-node-image: debootstrap bookworm (minbase) into $rootfs" >&2
debootstrap --variant=minbase bookworm "$rootfs" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }

echo "build-local-node-image: node-linux-$arch@$node_version and npm@10 from the npm registry" >&2
(cd "$work" && npm pack --silent "node-linux-$arch@$node_version" npm@10 >/dev/null)
mkdir -p "$work/node" "$work/npm" "$rootfs/usr/local/lib/node_modules"
tar -xzf "$work"/node-linux-"$arch"-*.tgz -C "$work/node"
tar -xzf "$work"/npm-10*.tgz -C "$work/npm"
install -m 0755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
mv "$work/npm/package" "$rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
chroot "$rootfs" sh -c 'groupadd -g 1000 node && useradd -u 1000 -g node -m -d /home/node -s /bin/sh node'
mkdir -p "$rootfs/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
chroot "$rootfs" /usr/local/bin/node --version >&2

echo "build-local-node-image: docker import as $name" >&2
tar -C "$rootfs" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  - "$name" >/dev/null
echo "$name"
