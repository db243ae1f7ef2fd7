#!/usr/bin/env bash
# A single-node OpenStack Swift with its S3 API (s3api + tempauth), on 127.0.0.1 only, for the
# remote tests (`deno task test:remote`), the remote benchmark and `.ci/run`.
#
#   scripts/swift.sh start    # start (idempotent) and print the S3 settings as KEY=VALUE lines
#   scripts/swift.sh env      # print the settings of a running server (exit 1 when none runs)
#   scripts/swift.sh stop     # stop every process this script started
#   scripts/swift.sh install  # apt-get install the Debian packages it needs
#
# Everything lives in $CTXSNAP_SWIFT_DIR (default /tmp/ctxsnap-swift): configuration, rings, the
# device directory (owned by the `swift` user, as the object server requires), logs, pids and
# `env`, the settings file the tests read. Ports: proxy $CTXSNAP_SWIFT_PORT (default 18080),
# account/container/object 16202/16201/16200, memcached 16211. Credentials are tempauth's test
# user: access key `test:tester`, secret `testing`. Needs root (to start the servers as `swift`).
set -euo pipefail

DIR=${CTXSNAP_SWIFT_DIR:-/tmp/ctxsnap-swift}
PORT=${CTXSNAP_SWIFT_PORT:-18080}
OBJECT_PORT=16200
CONTAINER_PORT=16201
ACCOUNT_PORT=16202
MEMCACHE_PORT=16211
PACKAGES=(swift-proxy swift-object swift-container swift-account memcached curl)

settings() {
  cat <<EOF
AWS_ENDPOINT_URL=http://127.0.0.1:$PORT
AWS_ACCESS_KEY_ID=test:tester
AWS_SECRET_ACCESS_KEY=testing
AWS_REGION=us-east-1
CTXSNAP_SWIFT_AUTH_URL=http://127.0.0.1:$PORT/auth/v1.0
EOF
}

healthy() {
  curl -fsS -m 2 "http://127.0.0.1:$PORT/healthcheck" >/dev/null 2>&1
}

write_conf() {
  local conf=$DIR/conf
  cat >"$conf/swift.conf" <<EOF
[swift-hash]
swift_hash_path_suffix = ctxsnap-test-suffix
swift_hash_path_prefix = ctxsnap-test-prefix

[storage-policy:0]
name = Policy-0
default = yes
EOF
  local server port
  for server in account container object; do
    case $server in
      account) port=$ACCOUNT_PORT ;;
      container) port=$CONTAINER_PORT ;;
      object) port=$OBJECT_PORT ;;
    esac
    cat >"$conf/$server-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $port
workers = 0
user = swift
swift_dir = $conf
devices = $DIR/srv
mount_check = false
log_address = /dev/null

[pipeline:main]
pipeline = $server-server

[app:$server-server]
use = egg:swift#$server
EOF
  done
  # s3api sits before tempauth; multipart uploads need slo after it. Container listings must be
  # immediately consistent for the tests, so updates are never deferred (one node, no async).
  cat >"$conf/proxy-server.conf" <<EOF
[DEFAULT]
bind_ip = 127.0.0.1
bind_port = $PORT
workers = 1
user = swift
swift_dir = $conf
log_address = /dev/null

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats bulk s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
allow_account_management = true

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin http://127.0.0.1:$PORT/v1/AUTH_test
user_test2_tester2 = testing2 .admin http://127.0.0.1:$PORT/v1/AUTH_test2

[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:$MEMCACHE_PORT

[filter:catch_errors]
use = egg:swift#catch_errors

[filter:gatekeeper]
use = egg:swift#gatekeeper

[filter:healthcheck]
use = egg:swift#healthcheck

[filter:proxy-logging]
use = egg:swift#proxy_logging

[filter:listing_formats]
use = egg:swift#listing_formats

[filter:bulk]
use = egg:swift#bulk

[filter:copy]
use = egg:swift#copy

[filter:slo]
use = egg:swift#slo

[filter:dlo]
use = egg:swift#dlo
EOF
}

build_rings() {
  local conf=$DIR/conf server port
  for server in account container object; do
    case $server in
      account) port=$ACCOUNT_PORT ;;
      container) port=$CONTAINER_PORT ;;
      object) port=$OBJECT_PORT ;;
    esac
    swift-ring-builder "$conf/$server.builder" create 0 1 1 >/dev/null
    swift-ring-builder "$conf/$server.builder" add "r1z1-127.0.0.1:$port/d1" 1 >/dev/null
    swift-ring-builder "$conf/$server.builder" rebalance >/dev/null
  done
}

launch() {
  local name=$1
  shift
  "$@" >"$DIR/log/$name.log" 2>&1 &
  echo $! >"$DIR/run/$name.pid"
}

start() {
  if healthy && [ -f "$DIR/env" ]; then
    cat "$DIR/env"
    return 0
  fi
  for tool in swift-proxy-server swift-object-server swift-container-server swift-account-server swift-ring-builder memcached curl; do
    command -v "$tool" >/dev/null 2>&1 || {
      echo "swift.sh: $tool is not installed (run: scripts/swift.sh install)" >&2
      exit 3
    }
  done
  stop >/dev/null 2>&1 || true
  rm -rf "$DIR"
  mkdir -p "$DIR/conf" "$DIR/run" "$DIR/log" "$DIR/srv/d1"
  chown -R swift:swift "$DIR/srv"
  write_conf
  build_rings
  chown -R swift:swift "$DIR/conf"
  launch memcached memcached -u swift -l 127.0.0.1 -p "$MEMCACHE_PORT" -U 0
  launch account swift-account-server "$DIR/conf/account-server.conf" -v
  launch container swift-container-server "$DIR/conf/container-server.conf" -v
  launch object swift-object-server "$DIR/conf/object-server.conf" -v
  launch proxy swift-proxy-server "$DIR/conf/proxy-server.conf" -v
  local i
  for i in $(seq 1 150); do
    healthy && break
    sleep 0.2
  done
  if ! healthy; then
    echo "swift.sh: the proxy did not answer on 127.0.0.1:$PORT; logs in $DIR/log" >&2
    tail -n 20 "$DIR"/log/*.log >&2 || true
    stop
    exit 1
  fi
  settings >"$DIR/env"
  cat "$DIR/env"
}

stop() {
  local pidfile
  for pidfile in "$DIR"/run/*.pid; do
    [ -f "$pidfile" ] || continue
    local pid
    pid=$(cat "$pidfile")
    # The servers fork workers: end the whole process group of each one we started.
    kill "$pid" 2>/dev/null || true
    rm -f "$pidfile"
  done
  # Workers of the proxy (workers = 1) exit when their parent does; wait for the port to close.
  local i
  for i in $(seq 1 50); do
    healthy || break
    sleep 0.1
  done
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  env)
    if healthy && [ -f "$DIR/env" ]; then cat "$DIR/env"; else exit 1; fi
    ;;
  install)
    missing=()
    for pkg in "${PACKAGES[@]}"; do dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg"); done
    [ ${#missing[@]} -eq 0 ] && exit 0
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1 ||
      { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; }
    ;;
  *)
    echo "usage: scripts/swift.sh start|stop|env|install" >&2
    exit 2
    ;;
esac
