# Sourced by .ci/run: install and start the servers the fleet tests use, on loopback, and export
# where they are. Idempotent: packages already installed are not reinstalled, servers already
# answering on their port are reused. Tests that kill or stop a server start their own instances.
#   CHECKREIN_TEST_REDIS_URL      redis://127.0.0.1:16379/0
#   CHECKREIN_TEST_POSTGRES_DSN   postgresql://postgres@127.0.0.1:15432/checkrein
set -euo pipefail

_ci_need=()
command -v redis-server >/dev/null 2>&1 || _ci_need+=(redis-server)
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || _ci_need+=(nginx)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || _ci_need+=(postgresql)
if [ "${#_ci_need[@]}" -gt 0 ]; then
  echo "services: apt-get install ${_ci_need[*]}"
  _ci_sudo=""
  if [ "$(id -u)" != 0 ]; then _ci_sudo="sudo"; fi
  $_ci_sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $_ci_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${_ci_need[@]}" >/dev/null
fi

_ci_port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

_CI_REDIS_PORT=16379
if ! _ci_port_open "$_CI_REDIS_PORT"; then
  redis-server --port "$_CI_REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --daemonize yes \
    --dir /tmp --logfile /tmp/checkrein-ci-redis.log >/dev/null
fi

_CI_PG_PORT=15432
_CI_PG_DIR=/tmp/checkrein-ci-pg
_ci_pg_bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
_ci_as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
if ! _ci_port_open "$_CI_PG_PORT"; then
  if [ ! -f "$_CI_PG_DIR/data/PG_VERSION" ]; then
    rm -rf "$_CI_PG_DIR"; mkdir -p "$_CI_PG_DIR"
    [ "$(id -u)" = 0 ] && chown postgres:postgres "$_CI_PG_DIR"
    _ci_as_pg "$_ci_pg_bin/initdb" -D "$_CI_PG_DIR/data" -U postgres -A trust --no-sync -E UTF8 >/dev/null
  fi
  _ci_as_pg "$_ci_pg_bin/pg_ctl" -D "$_CI_PG_DIR/data" -l "$_CI_PG_DIR/log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $_CI_PG_PORT -k $_CI_PG_DIR -c fsync=off" start >/dev/null
fi
_ci_as_pg "$_ci_pg_bin/psql" -h 127.0.0.1 -p "$_CI_PG_PORT" -U postgres -tAc \
  "SELECT 1 FROM pg_database WHERE datname = 'checkrein'" | grep -q 1 \
  || _ci_as_pg "$_ci_pg_bin/createdb" -h 127.0.0.1 -p "$_CI_PG_PORT" -U postgres checkrein

export CHECKREIN_TEST_REDIS_URL="redis://127.0.0.1:${_CI_REDIS_PORT}/0"
export CHECKREIN_TEST_POSTGRES_DSN="postgresql://postgres@127.0.0.1:${_CI_PG_PORT}/checkrein"
echo "services: redis on ${_CI_REDIS_PORT}, postgres on ${_CI_PG_PORT}"
set +e +u +o pipefail
