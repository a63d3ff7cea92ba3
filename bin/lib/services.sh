# shellcheck shell=bash
# Service helpers for bin/test, bin/demo and .ci/run. Source it; don't run it.
#
#   ensure_node_modules  npm ci when node_modules is missing or older than package-lock.json
#   ensure_postgres      DATABASE_URL reachable, or the local server on 127.0.0.1:5432 (started if stopped)
#   ensure_redis         REDIS_URL reachable, or the local server on 127.0.0.1:6379 (started if stopped)
#   ensure_chromium      /usr/bin/chromium for browser tests (apt-get install when root)
#
# Functions that cannot recover print why and `exit 1`; ensure_chromium returns non-zero instead.
# With CADRE_CONTAINERS_OK=1 (bin/test), a service that is neither configured nor installed
# here, where a Docker engine answers, is left to the test run: its name is added to
# CADRE_TEST_CONTAINERS and test/global-setup.ts starts it with testcontainers.

CADRE_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CADRE_DEFAULT_DATABASE_URL="postgresql://postgres@127.0.0.1:5432/cadre"
CADRE_DEFAULT_REDIS_URL="redis://127.0.0.1:6379"
CADRE_SERVICE_WAIT_SECONDS="${CADRE_SERVICE_WAIT_SECONDS:-30}"

say() { printf '==> %s\n' "$*" >&2; }
fail() {
  printf '\nerror: %s\n' "$1" >&2
  shift
  local line
  for line in "$@"; do printf '       %s\n' "$line" >&2; done
  exit 1
}

# "host port" of a URL (brackets stripped from IPv6 hosts; ?host= overrides, as libpq does).
_url_host_port() {
  node -e '
    const u = new URL(process.argv[1]);
    const host = u.searchParams.get("host") || u.hostname.replace(/^\[|\]$/g, "") || "127.0.0.1";
    console.log(host, u.port || process.argv[2]);
  ' "$1" "$2"
}

# URL with any password replaced, for messages.
_redact() { printf '%s' "$1" | sed -E 's#(://[^:/@]*):[^@/]*@#\1:***@#'; }

# Plain TCP connect, for machines without the service's client tools.
# shellcheck disable=SC2016  # $1 and $2 expand in the inner bash
_tcp_open() { timeout 3 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null; }

_pg_ready() { # host port
  if command -v pg_isready >/dev/null 2>&1; then
    pg_isready -q -h "$1" -p "$2" -t 3
  else
    _tcp_open "$1" "$2"
  fi
}

_redis_ready() { # url
  if command -v redis-cli >/dev/null 2>&1; then
    # -u also sends the URL's credentials, so a protected server answers PONG too.
    [[ "$(timeout 5 redis-cli -u "$1" ping 2>/dev/null)" == PONG ]]
  else
    local hp parsed
    parsed="$(_url_host_port "$1" 6379 2>/dev/null)" || return 1
    read -r -a hp <<<"$parsed"
    _tcp_open "${hp[0]}" "${hp[1]}"
  fi
}

# A Docker engine that answers: through the docker CLI, or its socket when there is no CLI.
# (DOCKER_HOST alone is believed: testcontainers says clearly when it does not answer.)
_docker_ready() {
  if command -v docker >/dev/null 2>&1; then
    timeout 10 docker info >/dev/null 2>&1
  elif [[ -S /var/run/docker.sock ]] && command -v curl >/dev/null 2>&1; then
    [[ "$(timeout 5 curl -s --unix-socket /var/run/docker.sock http://localhost/_ping 2>/dev/null)" == OK ]]
  else
    [[ -n "${DOCKER_HOST:-}" ]]
  fi
}

# True (and the service named in CADRE_TEST_CONTAINERS) when the test run may start it in Docker.
_leave_to_container() { # service
  [[ "${CADRE_CONTAINERS_OK:-}" == 1 ]] || return 1
  _docker_ready || return 1
  say "$1 is not reachable here and not installed: the tests start it in Docker (testcontainers)"
  export CADRE_TEST_CONTAINERS="${CADRE_TEST_CONTAINERS:+$CADRE_TEST_CONTAINERS }$1"
}

_wait_until() { # description command...
  local what=$1 deadline=$((SECONDS + CADRE_SERVICE_WAIT_SECONDS))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
  say "$what is ready"
}

# shellcheck disable=SC2016  # ${...} below is JavaScript
# True when node_modules holds exactly the versions package-lock.json pins (lock entries that
# are optional, such as other platforms' binaries, may be absent).
_node_modules_match_lock() {
  (cd "$CADRE_ROOT" && node -e '
    const fs = require("node:fs");
    const read = (f) => JSON.parse(fs.readFileSync(f, "utf8")).packages ?? {};
    const want = read("package-lock.json");
    const have = read("node_modules/.package-lock.json");
    const bad = [];
    for (const [k, p] of Object.entries(want)) {
      if (k === "") continue;
      if (!have[k]) { if (!p.optional && !p.devOptional) bad.push(`missing ${k}`); }
      else if (have[k].version !== p.version) bad.push(`${k} ${have[k].version} (lock: ${p.version})`);
    }
    for (const k of Object.keys(have)) if (!(k in want)) bad.push(`not in the lock: ${k}`);
    if (bad.length) { if (process.argv[1]) console.error(bad.slice(0, 10).join("\n")); process.exit(1); }
  ' "${1:-}")
}

_npm_install_from_lock() {
  local log status=0
  log="$(mktemp -t cadre-npm.XXXXXX)"
  (cd "$CADRE_ROOT" && npm ci --no-audit --no-fund) >"$log" 2>&1 || status=1
  if ((status == 0)); then
    cat "$log"
  elif ! grep -q "can only install packages when your package.json and package-lock.json" "$log"; then
    cat "$log" >&2
  else
    # npm 11 leaves optional packages that the registry cannot serve (other platforms' binaries
    # here) out of the lock, then `npm ci` calls the same lock out of sync (npm/cli#9846).
    # `npm install --no-save` installs from the lock without rewriting it; the check below
    # still fails when package.json and the lock really disagree.
    # A known npm quirk, not the reader's problem: one line says what happens; npm's own
    # complaint is shown only if the fallback fails too.
    say "npm ci rejected package-lock.json (a known npm 11 quirk); installing from it with npm install --no-save"
    status=0
    (cd "$CADRE_ROOT" && npm install --no-save --no-audit --no-fund) || status=1
    ((status == 0)) || grep -E '^npm error (.npm ci. can|Missing|Invalid)' "$log" >&2 || true
    if ((status == 0)) && ! _node_modules_match_lock verbose; then
      printf '\nerror: node_modules does not match package-lock.json (above): is the lock up to date?\n' >&2
      status=1
    fi
  fi
  rm -f "$log"
  return "$status"
}

ensure_node_modules() {
  local lock="$CADRE_ROOT/package-lock.json" hidden="$CADRE_ROOT/node_modules/.package-lock.json"
  if [[ ! -f "$hidden" ]]; then
    say "node_modules missing: npm ci"
  elif [[ "$lock" -nt "$hidden" ]]; then
    # A checkout touches package-lock.json without changing it: only reinstall when the pinned
    # versions differ from what is installed.
    if _node_modules_match_lock; then
      touch "$hidden"
    else
      say "package-lock.json changed: npm ci"
    fi
  fi
  if [[ ! -f "$hidden" || "$lock" -nt "$hidden" ]]; then
    _npm_install_from_lock || fail "Installing node_modules failed (see above)."
  elif [[ ! -d "$CADRE_ROOT/src/generated/prisma" ]]; then
    say "Prisma client missing: npm run generate"
    (cd "$CADRE_ROOT" && npm run --silent generate) || fail "prisma generate failed (see above)."
  fi
}

ensure_postgres() {
  local hp parsed
  if [[ -n "${DATABASE_URL:-}" ]]; then
    parsed="$(_url_host_port "$DATABASE_URL" 5432 2>/dev/null)" ||
      fail "DATABASE_URL is not a valid URL: $(_redact "$DATABASE_URL")"
    read -r -a hp <<<"$parsed"
    _pg_ready "${hp[0]}" "${hp[1]}" ||
      fail "PostgreSQL at ${hp[0]}:${hp[1]} (from DATABASE_URL=$(_redact "$DATABASE_URL")) is not reachable." \
        "Start that server, or unset DATABASE_URL to use a local one on 127.0.0.1:5432."
    export DATABASE_URL
    return 0
  fi

  if ! _pg_ready 127.0.0.1 5432; then
    local version=""
    if command -v pg_ctlcluster >/dev/null 2>&1 && [[ -d /etc/postgresql ]]; then
      version="$(find /etc/postgresql -mindepth 1 -maxdepth 1 -type d -printf '%f\n' | sort -V | tail -n 1)"
    fi
    if [[ -z "$version" ]] && _leave_to_container postgres; then return 0; fi
    [[ -n "$version" ]] ||
      fail "PostgreSQL is not reachable on 127.0.0.1:5432 and is not installed here." \
        "Run it in Docker:  docker compose up -d postgres redis" \
        "or point DATABASE_URL at a server (default $CADRE_DEFAULT_DATABASE_URL)."
    say "PostgreSQL $version is stopped: starting it"
    # Errors are not fatal here ("already running" when another script raced us): readiness decides.
    pg_ctlcluster --skip-systemctl-redirect "$version" main start >&2 || true
    _wait_until "PostgreSQL" _pg_ready 127.0.0.1 5432 ||
      fail "PostgreSQL $version did not become ready on 127.0.0.1:5432 within ${CADRE_SERVICE_WAIT_SECONDS}s." \
        "See /var/log/postgresql/postgresql-$version-main.log (pg_lsclusters shows its state)," \
        "or run it in Docker:  docker compose up -d postgres redis"
  fi
  export DATABASE_URL="$CADRE_DEFAULT_DATABASE_URL"
}

ensure_redis() {
  if [[ -n "${REDIS_URL:-}" ]]; then
    _redis_ready "$REDIS_URL" ||
      fail "Redis at $(_redact "$REDIS_URL") (from REDIS_URL) is not reachable or did not answer PING." \
        "Start that server, or unset REDIS_URL to use a local one on 127.0.0.1:6379."
    export REDIS_URL
    return 0
  fi

  if ! _redis_ready "$CADRE_DEFAULT_REDIS_URL"; then
    if ! command -v redis-server >/dev/null 2>&1 && _leave_to_container redis; then return 0; fi
    command -v redis-server >/dev/null 2>&1 ||
      fail "Redis is not reachable on 127.0.0.1:6379 and is not installed here." \
        "Run it in Docker:  docker compose up -d postgres redis" \
        "or point REDIS_URL at a server (default $CADRE_DEFAULT_REDIS_URL)."
    say "Redis is stopped: starting it"
    # Nothing is persisted (--save "", no AOF): Redis is transport, Postgres is the source of truth.
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no >&2 || true
    _wait_until "Redis" _redis_ready "$CADRE_DEFAULT_REDIS_URL" ||
      fail "Redis did not become ready on 127.0.0.1:6379 within ${CADRE_SERVICE_WAIT_SECONDS}s." \
        "Start it by hand (redis-server) or in Docker:  docker compose up -d postgres redis"
  fi
  export REDIS_URL="$CADRE_DEFAULT_REDIS_URL"
}

ensure_chromium() {
  [[ -x /usr/bin/chromium ]] && return 0
  if [[ "$(id -u)" -ne 0 ]]; then
    printf '\nerror: Chromium is needed by the browser tests and /usr/bin/chromium is missing.\n' >&2
    printf '       Install it with:  sudo apt-get update && sudo apt-get install -y chromium\n' >&2
    return 1
  fi
  say "Installing Chromium for the browser tests (apt-get install chromium)"
  local log
  log="$(mktemp -t cadre-apt.XXXXXX)"
  if DEBIAN_FRONTEND=noninteractive apt-get update -q >"$log" 2>&1 &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=300 chromium >>"$log" 2>&1 &&
    [[ -x /usr/bin/chromium ]]; then
    rm -f "$log"
    say "Chromium installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    return 0
  fi
  printf '\nerror: installing Chromium failed; last lines of %s:\n' "$log" >&2
  tail -n 20 "$log" >&2
  return 1
}
