# Ports for bin/demo's side services (the mail inbox), sourced by it.
# A port is taken when something on 127.0.0.1 accepts a connection on it.
port_taken() { timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }

# pick_port NAME DEFAULT_FIRST DEFAULT_LAST: the port named by $NAME when it is set (and free:
# a port someone chose is never silently replaced), else the first free one in the range.
pick_port() {
  local name="$1" first="$2" last="$3" chosen="${!1:-}" port
  if [[ -n "$chosen" ]]; then
    [[ "$chosen" =~ ^[0-9]+$ ]] && ((chosen > 0 && chosen < 65536)) || {
      echo "$name=$chosen is not a port number (1-65535)." >&2
      return 1
    }
    if port_taken "$chosen"; then
      echo "$name=$chosen is already in use by another program: choose another, or unset it to pick a free one in $first-$last." >&2
      return 1
    fi
    echo "$chosen"
    return 0
  fi
  for ((port = first; port <= last; port++)); do
    port_taken "$port" || {
      echo "$port"
      return 0
    }
  done
  echo "No free port in $first-$last for $name: set $name to one that is free." >&2
  return 1
}
