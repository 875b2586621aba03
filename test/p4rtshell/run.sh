#!/usr/bin/env bash
# Interoperability check with p4runtime-shell, the P4 community's Python P4Runtime client.
#
#   test/p4rtshell/run.sh                       build and start the software UPF, run the check
#   test/p4rtshell/run.sh --target ADDR [--device-config FILE]
#                                               run the check against a running target (BMv2...)
#
# p4runtime-shell and its dependencies (pinned in requirements.txt) are installed once into
# bin/p4runtime-shell-<version>/ (git-ignored) and reused while requirements.txt is unchanged.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
version=$(sed -n 's/^p4runtime-shell==//p' "$here/requirements.txt")
venv="$root/bin/p4runtime-shell-$version"
stamp=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)

target=""
device_config=""
p4info="$root/p4/p4info.txtpb"
while [[ $# -gt 0 ]]; do
  case $1 in
    --target) target=$2; shift 2 ;;
    --device-config) device_config=$2; shift 2 ;;
    --p4info) p4info=$2; shift 2 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

log() { printf '[p4rtshell] %s\n' "$*" >&2; }

if [[ ! -x "$venv/bin/python" || "$(cat "$venv/.requirements.sha256" 2>/dev/null)" != "$stamp" ]]; then
  log "installing p4runtime-shell $version into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
  echo "$stamp" >"$venv/.requirements.sha256"
fi

if [[ -z "$target" ]]; then
  tmp=$(mktemp -d)
  upf_pid=""
  cleanup() {
    if [[ -n "$upf_pid" ]]; then kill "$upf_pid" 2>/dev/null || true; wait "$upf_pid" 2>/dev/null || true; fi
    rm -rf "$tmp"
  }
  trap cleanup EXIT
  log "building the software UPF"
  (cd "$root" && go build -o "$tmp/softupf" ./cmd/softupf)
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  target="127.0.0.1:$port"
  # No ports: the check only speaks P4Runtime.
  "$tmp/softupf" --grpc-addr "$target" --device-id 1 >"$tmp/softupf.log" 2>&1 &
  upf_pid=$!
  for _ in $(seq 1 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null; then break; fi
    if ! kill -0 "$upf_pid" 2>/dev/null; then cat "$tmp/softupf.log" >&2; log "softupf exited"; exit 1; fi
    sleep 0.1
  done
fi

log "checking $target with p4runtime-shell $version"
status=0
"$venv/bin/python" "$here/check.py" --grpc-addr "$target" --p4info "$p4info" ${device_config:+--device-config "$device_config"} || status=$?
if [[ $status -ne 0 && -n "${tmp:-}" ]]; then
  log "softupf output:"; cat "$tmp/softupf.log" >&2
fi
exit $status
