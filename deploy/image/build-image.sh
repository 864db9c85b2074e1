#!/usr/bin/env bash
# Builds the OCI image of ura-sidecar with buildah: FROM scratch, the compiled binary and
# exactly the shared libraries `ldd` lists for it, a non-root user, /data as the records
# volume, the listen address set for a container, OCI labels (version, revision).
# Also writes an oci-archive file and prints the image size and the start-up-to-ready time.
#   deploy/image/build-image.sh [BINARY]      (make image)
# Root with STORAGE_DRIVER=vfs BUILDAH_ISOLATION=chroot works without a daemon or user namespaces.
set -euo pipefail
cd "$(dirname "$0")/../.."
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}" BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
binary="${1:-dist/ura-sidecar}"
version="$(node -p 'require("./package.json").version')"
revision="$(git rev-parse HEAD 2>/dev/null || echo unknown)"
[ -n "$(git status --porcelain 2>/dev/null)" ] && revision="$revision-dirty"
image="${URA_IMAGE:-ura-sidecar:$version}"
archive="${URA_IMAGE_ARCHIVE:-dist/ura-sidecar-$version.oci.tar}"
uid=65532
command -v buildah >/dev/null || { echo "buildah is required (Debian package buildah)"; exit 1; }

stage="$(mktemp -d)"
trap 'rm -rf "$stage" "$stage.data"; [ -n "${ctr:-}" ] && buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
install -D -m 0755 "$binary" "$stage/ura-sidecar"
# The dynamic loader and every library ldd resolves, at the paths the binary asks for.
ldd "$binary" | grep -oE '(/[^ ]+)' | sort -u | while read -r lib; do
  install -D -m 0755 "$(readlink -f "$lib")" "$stage$lib"
done
mkdir -p "$stage/etc" "$stage/tmp" "$stage.data"
chmod 1777 "$stage/tmp"
echo "ura:x:$uid:$uid:ura-sidecar:/data:/ura-sidecar" > "$stage/etc/passwd"
echo "ura:x:$uid:" > "$stage/etc/group"

ctr="$(buildah from scratch)"
buildah copy --quiet "$ctr" "$stage" / >/dev/null
# The records directory belongs to the image's user: an anonymous volume starts as a copy of it.
buildah copy --quiet --chown "$uid:$uid" "$ctr" "$stage.data" /data >/dev/null
buildah config \
  --user "$uid:$uid" \
  --workingdir /data \
  --entrypoint '["/ura-sidecar"]' \
  --cmd serve \
  --env URA_LISTEN=0.0.0.0:8787 \
  --env URA_DATA_DIR=/data \
  --port 8787/tcp \
  --volume /data \
  --label org.opencontainers.image.title=ura-sidecar \
  --label org.opencontainers.image.version="$version" \
  --label org.opencontainers.image.revision="$revision" \
  --label org.opencontainers.image.source="https://github.com/ura-sidecar/ura-sidecar" \
  "$ctr"
buildah commit --quiet --format oci --rm "$ctr" "$image" >/dev/null
ctr=""
rm -f "$archive"
buildah push --quiet "$image" "oci-archive:$archive:$image"

# Milliseconds from starting "$@" (which serves on $port) to GET /health/ready = 200; then SIGTERM.
time_to_ready() {
  local log="$1"; shift
  local started pid contained ms="" deadline=$(( $(date +%s) + 60 ))
  started=$(date +%s%N)
  "$@" >"$log" 2>&1 &
  pid=$!
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if curl -fsS -o /dev/null "http://127.0.0.1:$port/health/ready" 2>/dev/null; then
      ms=$(( ($(date +%s%N) - started) / 1000000 )); break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.02
  done
  # buildah run (chroot isolation) does not pass SIGTERM on: signal the contained process itself, as a runtime would.
  contained="$pid"
  for _ in 1 2 3 4; do
    [ "$(cat "/proc/$contained/comm" 2>/dev/null)" = "ura-sidecar" ] && break
    contained="$(pgrep -P "$contained" | head -1)"; [ -n "$contained" ] || break
  done
  [ -n "$contained" ] && kill -TERM "$contained" 2>/dev/null
  wait "$pid" || true
  [ -n "$ms" ] || { echo "not ready after 60 s:" >&2; cat "$log" >&2; }
  echo "$ms"
}

# Start-up to ready: the image's own user and its own /data volume (which must be writable by that user),
# against the bare binary started the same way on this machine just before (the same load).
logs="$(mktemp -d)"
# Below the kernel's ephemeral range (32768+), where outgoing connections and port-0 listeners land.
port=$((20000 + RANDOM % 12000))
bare_ms="$(time_to_ready "$logs/bare.log" env URA_LISTEN="127.0.0.1:$port" URA_DATA_DIR="$logs/data" "$binary" serve)"
run="$(buildah from --quiet "$image")"
ready_ms="$(time_to_ready "$logs/image.log" buildah run --env URA_LISTEN="127.0.0.1:$port" "$run" -- /ura-sidecar serve)"
buildah rm "$run" >/dev/null
rm -rf "$logs"

echo "image        $image (revision $revision)"
echo "archive      $archive ($(du -h "$archive" | cut -f1))"
echo "image size   $(buildah images --format '{{.Size}}' "$image" | head -1)"
ratio="$( [ -n "$ready_ms" ] && [ -n "$bare_ms" ] && [ "$bare_ms" -gt 0 ] && awk "BEGIN{printf \"%.2f\", $ready_ms/$bare_ms}" )"
echo "ready after  ${ready_ms:-not ready} ms (buildah run to GET /health/ready = 200; the bare binary: ${bare_ms:-not ready} ms, ratio ${ratio:-?}; load average $(cut -d' ' -f1 /proc/loadavg))"
[ -n "$ready_ms" ]
