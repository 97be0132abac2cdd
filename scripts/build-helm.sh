#!/usr/bin/env bash
# Test infrastructure only: builds the real `helm` (helm.sh/helm/v4) from the Go module proxy into
# a cache shared by checkouts, so the chart test can run `helm lint` and `helm template`. Cached:
# a second run with the binary present does nothing. Never used by nfkube itself.
set -euo pipefail
version=v4.3.2
cache="${NFKUBE_TOOLS_CACHE:-/var/cache/nfkube-tools}"
dest="$cache/helm-$version"
if [ -x "$dest/helm" ]; then
  echo "$dest/helm"
  exit 0
fi
command -v go >/dev/null || { echo "build-helm: go is not installed (Debian: golang-go)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
go mod init nfkube-tools-helm >/dev/null 2>&1
GOFLAGS=-mod=mod go get "helm.sh/helm/v4/cmd/helm@$version" >&2
mkdir -p "$dest"
# Built to a temporary name and renamed: a concurrent reader sees no binary or a whole one.
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -o "$dest/helm.tmp-$$" helm.sh/helm/v4/cmd/helm
mv "$dest/helm.tmp-$$" "$dest/helm"
echo "$dest/helm"
