#!/usr/bin/env bash
# A Junction release, from the VERSION file (the one place the version is written by hand):
#   1. every file that names the release agrees with VERSION (version_sites below);
#   2. the image with every binary (Dockerfile, hack/build.sh), built for PLATFORMS with docker
#      buildx and pushed as REGISTRY/junction:VERSION;
#   3. the chart, its default image set to what step 2 pushed (repository and digest), linted,
#      packaged (junction-X.Y.Z.tgz) and pushed to oci://REGISTRY/charts;
#   4. the git tag VERSION, pushed (the GitOps examples fetch their objects at that tag).
#
#   hack/release.sh                  release (needs docker buildx, registry and git push rights)
#   hack/release.sh --dry-run        steps 1 and 3 run (helm lint and package, into build/release);
#                                    what needs Docker, a registry or changes git is printed only
#   hack/release.sh check            step 1 alone (test/chart runs it)
#   hack/release.sh set-version V    write V (vX.Y.Z) into VERSION and every site
#
#   REGISTRY   (ghcr.io/junction-atsss) where the image and the chart go; `docker login` and
#              `helm registry login` to it first
#   PLATFORMS  (linux/amd64,linux/arm64) the image's platforms
#   OUT        (build/release) where the packaged chart is written
set -euo pipefail
cd "$(dirname "$0")/.."

REGISTRY=${REGISTRY:-ghcr.io/junction-atsss}
PLATFORMS=${PLATFORMS:-linux/amd64,linux/arm64}
OUT=${OUT:-build/release}
HELM=${HELM:-bin/helm}

# The chart's default image repository (values.yaml): a release to another REGISTRY rewrites it
# in the packaged chart only.
DEFAULT_IMAGE=ghcr.io/junction-atsss/junction

# version_sites: FILE|LINE, a line each file must hold, anchored; @V@ is the version as VERSION
# writes it (vX.Y.Z: image and git tags), @SEMVER@ without the v (the chart's version, which
# Helm and OCI tags take as SemVer).
version_sites=(
  'charts/junction/Chart.yaml|version: @SEMVER@'
  'charts/junction/Chart.yaml|appVersion: @V@'
  'config/manager/kustomization.yaml|    newTag: @V@'
  'ue-daemonset/kustomization.yaml|    newTag: @V@'
  'gitops/flux/junction.yaml|    tag: @V@'
  'gitops/argocd/application.yaml|      targetRevision: @SEMVER@'
  'gitops/argocd/application.yaml|      targetRevision: @V@'
)

log() { printf '[release] %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

read_version() {
  local v
  v=$(<VERSION)
  [[ $v =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "VERSION: \"$v\" is not vMAJOR.MINOR.PATCH[-PRERELEASE]"
  echo "$v"
}

# site_line LINE V: LINE with the placeholders filled for version V.
site_line() { local l=${1//@V@/$2}; echo "${l//@SEMVER@/${2#v}}"; }

check() {
  local v site file line bad=0
  v=$(read_version)
  for site in "${version_sites[@]}"; do
    file=${site%%|*}
    line=$(site_line "${site#*|}" "$v")
    if ! grep -qxF -- "$line" "$file"; then
      log "$file: no line \"$line\" (VERSION says $v)"
      bad=1
    fi
  done
  ((bad == 0)) || exit 1
  log "every version site says $v"
}

set_version() {
  local new=$1 old site file from to
  [[ $new =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || die "set-version: \"$new\" is not vMAJOR.MINOR.PATCH[-PRERELEASE]"
  old=$(read_version)
  check
  for site in "${version_sites[@]}"; do
    file=${site%%|*}
    from=$(site_line "${site#*|}" "$old")
    to=$(site_line "${site#*|}" "$new")
    FROM=$from TO=$to perl -0pi -e 's/^\Q$ENV{FROM}\E$/$ENV{TO}/mg' "$file"
  done
  echo "$new" >VERSION
  check
}

# step CMD...: run CMD, or with --dry-run print it.
step() {
  if ((dry_run)); then
    local a line='[release] would run:'
    for a in "$@"; do
      if [[ $a =~ ^[][A-Za-z0-9_./:=,@+-]+$ ]]; then line+=" $a"; else line+=" '$a'"; fi
    done
    echo "$line"
  else
    log "running: $*"
    "$@"
  fi
}

release() {
  local v semver revision image chart_dir digest=""
  v=$(read_version)
  semver=${v#v}
  check
  revision=$(git rev-parse HEAD)
  if [[ -n $(git status --porcelain --untracked-files=no) ]]; then
    ((dry_run)) || die "the work tree has uncommitted changes: a release is a commit"
    log "the work tree has uncommitted changes (a release would refuse)"
  fi
  if git rev-parse -q --verify "refs/tags/$v" >/dev/null && [[ $(git rev-parse "$v^{commit}") != "$revision" ]]; then
    die "tag $v exists at another commit: raise VERSION (hack/release.sh set-version)"
  fi
  [[ -x $HELM ]] || hack/tools.sh helm
  rm -rf "$OUT/chart" "$OUT/image-metadata.json" "$OUT"/junction-*.tgz && mkdir -p "$OUT"

  image=$REGISTRY/junction
  log "image $image:$v for $PLATFORMS"
  if ! ((dry_run)); then
    docker buildx version >/dev/null 2>&1 || die "docker buildx is not available"
  fi
  step docker buildx build --platform "$PLATFORMS" \
    --build-arg VERSION="$v" --build-arg REVISION="$revision" \
    --label org.opencontainers.image.created="$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --tag "$image:$v" --metadata-file "$OUT/image-metadata.json" --push .
  if ! ((dry_run)); then
    digest=$(sed -n 's/.*"containerimage.digest": *"\(sha256:[0-9a-f]*\)".*/\1/p' "$OUT/image-metadata.json")
    [[ -n $digest ]] || die "$OUT/image-metadata.json: no containerimage.digest"
    log "pushed $image@$digest"
  fi

  # The chart, pointing at the image just pushed: the repository, and the digest, so the chart
  # version pins one image whatever later happens to the tag.
  chart_dir=$OUT/chart/junction
  mkdir -p "$(dirname "$chart_dir")"
  cp -R charts/junction "$chart_dir"
  IMAGE=$image DIGEST=$digest perl -pi -e '
    s{^  repository: \Q'"$DEFAULT_IMAGE"'\E$}{  repository: $ENV{IMAGE}};
    s{^  digest: ""$}{  digest: "$ENV{DIGEST}"};' "$chart_dir/values.yaml"
  grep -qxF "  repository: $image" "$chart_dir/values.yaml" || die "values.yaml: no image.repository line to set"
  grep -qxF "  digest: \"$digest\"" "$chart_dir/values.yaml" || die "values.yaml: no image.digest line to set"
  "$HELM" lint --strict "$chart_dir"
  "$HELM" package "$chart_dir" --destination "$OUT"
  [[ -f $OUT/junction-$semver.tgz ]] || die "helm package wrote no $OUT/junction-$semver.tgz"
  step "$HELM" push "$OUT/junction-$semver.tgz" "oci://$REGISTRY/charts"

  # A tag made by an earlier run of this release (at this commit, checked above) stays.
  git rev-parse -q --verify "refs/tags/$v" >/dev/null || step git tag -a "$v" -m "Junction $v" "$revision"
  step git push origin "refs/tags/$v"
  local done=released
  ((dry_run)) && done="dry run done, nothing published; a release would publish"
  log "$done $v: image $image:$v${digest:+ ($digest)}, chart oci://$REGISTRY/charts/junction --version $semver, tag $v"
}

dry_run=0
case ${1:-} in
  check) check ;;
  set-version) set_version "${2:?usage: hack/release.sh set-version vX.Y.Z}" ;;
  --dry-run) dry_run=1; release ;;
  "") release ;;
  *) die "usage: hack/release.sh [--dry-run | check | set-version vX.Y.Z]" ;;
esac
