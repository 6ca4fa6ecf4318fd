#!/usr/bin/env bash
# A real S3 server for the media storage tests: a single-node, single-replica OpenStack Swift from Debian's
# packages with the s3api and tempauth middlewares, configured and run from one folder ($SWIFT_DIR). Installs
# Swift when it is missing, starts what is not running, and makes sure the test bucket exists. Harmless to re-run.
set -euo pipefail

dir="${SWIFT_DIR:-/tmp/postline-swift}"
port="${SWIFT_PORT:-8089}"
# Backends beside the proxy, on loopback: account, container and object servers.
account_port=$((port + 100)) container_port=$((port + 101)) object_port=$((port + 102))
endpoint="http://127.0.0.1:$port"
access_key="postline:tester" secret_key="testing" bucket="postline-test"
python=/usr/bin/python3 # Debian's, which has Swift's modules (not a pyenv or venv one first on PATH)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else echo "swift-s3.sh: configuring Swift needs root (or sudo)" >&2; exit 1; fi
}

installed() {
  command -v swift-proxy-server >/dev/null 2>&1 && command -v swift-ring-builder >/dev/null 2>&1 &&
    "$python" -c 'import swift.common.middleware.s3api' >/dev/null 2>&1
}

if ! installed; then
  echo "swift-s3.sh: installing Swift from Debian's packages"
  bash "$(dirname "$0")/apt-install.sh" swift swift-proxy swift-object swift-container swift-account python3-swift
  installed || { echo "swift-s3.sh: Swift is still not usable after the install" >&2; exit 1; }
fi

# Swift reads its hash settings and storage policies from this fixed path only.
if [ ! -s /etc/swift/swift.conf ]; then
  as_root mkdir -p /etc/swift
  as_root sh -c 'cat > /etc/swift/swift.conf' <<'EOF'
[swift-hash]
swift_hash_path_suffix = postline-test-suffix
swift_hash_path_prefix = postline-test-prefix

[storage-policy:0]
name = Policy-0
default = yes
EOF
fi

# Prints the names of the servers that do not answer their healthcheck.
down() {
  "$python" - "$@" <<'EOF'
import sys, urllib.request
for name_port in sys.argv[1:]:
    name, port = name_port.split(":")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthcheck", timeout=1) as response:
            if response.read() == b"OK":
                continue
    except Exception:
        pass
    print(name)
EOF
}
servers=(account:$account_port container:$container_port object:$object_port proxy:$port)

if [ -n "$(down "${servers[@]}")" ]; then
  mkdir -p "$dir/devices/d1" "$dir/run" "$dir/log"
  # Whatever is left of an earlier start (some servers died): stop it, then start all four afresh.
  stopping=()
  for pidfile in "$dir"/run/*.pid; do
    [ -e "$pidfile" ] || continue
    pid="$(cat "$pidfile")"
    if grep -qs swift "/proc/$pid/cmdline" && kill "$pid" 2>/dev/null; then stopping+=("$pid"); fi
    rm -f "$pidfile"
  done
  alive() { for pid in "$@"; do kill -0 "$pid" 2>/dev/null && return 0; done; return 1; }
  for _ in $(seq 1 40); do alive "${stopping[@]}" && sleep 0.25 || break; done
  for name_port in "${servers[@]}"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/${name_port#*:}") 2>/dev/null; then
      echo "swift-s3.sh: port ${name_port#*:} (for the $name_port server) is taken by another program" >&2; exit 1
    fi
  done

  common() {
    cat <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $1
user = $(id -un)
swift_dir = $dir
devices = $dir/devices
mount_check = false
disable_fallocate = true
# One process per server: enough for tests, and its pid is the server's.
workers = 0

[filter:healthcheck]
use = egg:swift#healthcheck
EOF
  }
  for kind in account container object; do
    kind_port="${kind}_port"
    cat > "$dir/$kind-server.conf" <<EOF
$(common "${!kind_port}")

[pipeline:main]
pipeline = healthcheck $kind-server

[app:$kind-server]
use = egg:swift#$kind
EOF
  done
  # The cache filter is there because tempauth wants a cache object; no memcached listens there, lookups miss.
  cat > "$dir/proxy-server.conf" <<EOF
$(common "$port")

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:tempauth]
use = egg:swift#tempauth
# S3 access key "account:user", secret the user's key; .admin lets the user create buckets in its account.
user_postline_tester = $secret_key .admin

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$((port + 103))

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:copy]
use = egg:swift#copy

[filter:slo]
use = egg:swift#slo

[filter:dlo]
use = egg:swift#dlo
EOF

  # One device, one replica, 2^6 partitions: rebuilt only when the ports change.
  ring_spec="$account_port $container_port $object_port"
  if [ "$(cat "$dir/rings.spec" 2>/dev/null)" != "$ring_spec" ]; then
    rm -f "$dir"/*.builder "$dir"/*.ring.gz
    for kind in account container object; do
      kind_port="${kind}_port"
      swift-ring-builder "$dir/$kind.builder" create 6 1 1 >/dev/null
      swift-ring-builder "$dir/$kind.builder" add "r1z1-127.0.0.1:${!kind_port}/d1" 100 >/dev/null
      swift-ring-builder "$dir/$kind.builder" rebalance >/dev/null || [ $? -eq 1 ] # 1 is a warning
    done
    echo "$ring_spec" > "$dir/rings.spec"
  fi

  for name_port in "${servers[@]}"; do
    name="${name_port%%:*}"
    # Detached, with no tie to the caller's terminal or output, so that CI's pipes close when the script ends.
    setsid "swift-$name-server" "$dir/$name-server.conf" --verbose </dev/null >"$dir/log/$name.log" 2>&1 &
    echo $! > "$dir/run/$name.pid"
  done
  for _ in $(seq 1 60); do
    failing="$(down "${servers[@]}")"
    [ -n "$failing" ] || break
    for name in $failing; do
      if ! kill -0 "$(cat "$dir/run/$name.pid")" 2>/dev/null; then
        echo "swift-s3.sh: the $name server stopped; the end of $dir/log/$name.log:" >&2
        tail -n 30 "$dir/log/$name.log" >&2; exit 1
      fi
    done
    sleep 0.5
  done
  [ -z "$failing" ] || { echo "swift-s3.sh: no healthcheck answer from: $failing (logs in $dir/log)" >&2; exit 1; }
fi

# The bucket, made through the S3 API itself (signature version 2 keeps this short; s3api accepts it).
"$python" - "$endpoint" "$bucket" "$access_key" "$secret_key" <<'EOF'
import base64, hmac, sys, time, urllib.error, urllib.request
from email.utils import formatdate
endpoint, bucket, access_key, secret_key = sys.argv[1:]
def request(method):
    date = formatdate(usegmt=True)
    signature = hmac.digest(secret_key.encode(), f"{method}\n\n\n{date}\n/{bucket}".encode(), "sha1")
    headers = {"Date": date, "Authorization": f"AWS {access_key}:{base64.b64encode(signature).decode()}"}
    try:
        with urllib.request.urlopen(urllib.request.Request(f"{endpoint}/{bucket}", method=method, headers=headers), timeout=10) as r:
            return r.status, b""
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return None, str(e).encode()
# The account and container servers may still be settling just after a start: retry for a few seconds.
for attempt in range(20):
    status, body = request("HEAD")
    if status == 200:
        sys.exit(0)
    if status == 404:
        status, body = request("PUT")
        if status == 200:
            sys.exit(0)
    time.sleep(0.5)
sys.exit(f"swift-s3.sh: could not create the bucket {bucket}: HTTP {status} {body[:500]!r}")
EOF

cat <<EOF
Swift with the S3 API is up (folder $dir, logs in $dir/log). The media storage tests use:
TEST_S3_ENDPOINT=$endpoint
TEST_S3_ACCESS_KEY_ID=$access_key
TEST_S3_SECRET_ACCESS_KEY=$secret_key
TEST_S3_BUCKET=$bucket
EOF
