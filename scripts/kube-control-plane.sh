#!/usr/bin/env bash
# Builds the real control plane test/cluster runs against: kube-apiserver and kube-controller-manager
# from k8s.io/kubernetes, and etcd, all from the Go module proxy (never a source checkout).
# Idempotent: a stamp per pinned version skips the build when the binaries are already there.
# Prints the bin directory on its last line.
set -euo pipefail

KUBE_VERSION="${NFKUBE_KUBE_VERSION:-v1.36.3}"
ETCD_VERSION="${NFKUBE_ETCD_VERSION:-v3.6.16}"
CACHE="${NFKUBE_TOOLS_CACHE:-/var/cache/nfkube-tools}"

if ! command -v go >/dev/null 2>&1; then
  echo "kube-control-plane: Go >= 1.26 is required to build kube-apiserver/etcd (install golang-go or https://go.dev/dl)" >&2
  exit 2
fi

# Module and build caches live beside the binaries so CI on the same machine reuses them.
export GOMODCACHE="$CACHE/go/mod" GOCACHE="$CACHE/go/build" GOFLAGS=-mod=mod CGO_ENABLED=0
export GOPATH="$CACHE/go/path"
JOBS="${NFKUBE_GO_JOBS:-2}"

kube_dir="$CACHE/kube-$KUBE_VERSION"
etcd_dir="$CACHE/etcd-$ETCD_VERSION"
bin_dir="$CACHE/bin-kube-$KUBE_VERSION-etcd-$ETCD_VERSION"
stamp="$bin_dir/.stamp"
want_stamp="kube=$KUBE_VERSION etcd=$ETCD_VERSION go=$(go env GOVERSION) version-stamped"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want_stamp" ]; then
  echo "$bin_dir"
  exit 0
fi

mkdir -p "$kube_dir" "$etcd_dir" "$bin_dir"
started=$(date +%s)

# Staging modules are `replace`d with local paths in kubernetes' go.mod; a wrapper module must pin
# each to the published k8s.io/<name> v0.<minor>.<patch> that matches the kubernetes release.
staging_version="v0.${KUBE_VERSION#v1.}"
(
  cd "$kube_dir"
  printf 'module nfkube.local/kube-tools\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n' "$KUBE_VERSION" > go.mod
  kube_mod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')"
  {
    echo
    echo 'replace ('
    sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/[a-z0-9-]*$#\t\1 => \1 '"$staging_version"'#p' "$kube_mod"
    echo ')'
  } >> go.mod
  printf 'package tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver/app"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager/app"\n)\n' > tools.go
  go mod tidy >&2
  # What kubernetes' own build (hack/lib/version.sh) stamps in, so /version names the release.
  minor="${KUBE_VERSION#v1.}"; minor="${minor%%.*}"
  released="$(go list -m -f '{{.Time.Format "2006-01-02T15:04:05Z"}}' "k8s.io/kubernetes@$KUBE_VERSION")"
  ldflags=""
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean -X $pkg.buildDate=$released"
  done
  go build -p "$JOBS" -trimpath -ldflags="$ldflags" -o "$bin_dir/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager >&2
)
(
  cd "$etcd_dir"
  printf 'module nfkube.local/etcd-tools\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > go.mod
  printf 'package tools\n\nimport _ "go.etcd.io/etcd/server/v3/etcdmain"\n' > tools.go
  go mod tidy >&2
  go build -p "$JOBS" -trimpath -o "$bin_dir/etcd" go.etcd.io/etcd/server/v3 >&2
)

echo "$want_stamp" > "$stamp"
echo "kube-control-plane: built in $(( $(date +%s) - started )) s: $(cd "$bin_dir" && du -sh etcd kube-apiserver kube-controller-manager | tr '\n\t' '  ')" >&2
echo "$bin_dir"
