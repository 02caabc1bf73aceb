#!/bin/sh
# scripts/up.sh - install the built binaries (and the Python SDK's path: sdk_path.sh) and
# (re)start spaced in the background, then wait until it answers. Run through `make up`
# (which installs dependencies and builds first).
#
#   SPACE_STATE_DIR  (default /var/lib/space)    SPACE_SOCKET (default /run/space/space.sock)
#   SPACE_LOG        (default /var/log/space/spaced.log)
set -eu

prefix=${PREFIX:-/usr/local}
state=${SPACE_STATE_DIR:-/var/lib/space}
sock=${SPACE_SOCKET:-/run/space/space.sock}
log=${SPACE_LOG:-/var/log/space/spaced.log}
pidfile=/run/space/spaced.pid

[ "$(id -u)" = 0 ] || { echo "make up: spaced runs sandboxes and needs root" >&2; exit 1; }

install -D -m 0755 build/spaced "$prefix/bin/spaced"
install -D -m 0755 build/space "$prefix/bin/space"
install -D -m 0755 build/space-agent "$prefix/lib/space/space-agent"
install -D -m 0755 build/space-build "$prefix/lib/space/space-build"
install -D -m 0644 build/libspace-shim.so "$prefix/lib/space/libspace-shim.so"
getent group space >/dev/null || groupadd --system space
# the Python SDK, from this tree, for /usr/bin/python3
"$(dirname "$0")/sdk_path.sh"
mkdir -p "$(dirname "$sock")" "$(dirname "$log")" "$state"

# A spaced started by an earlier `make up` is replaced; its sandboxes keep running and the new
# one adopts them.
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
	old=$(cat "$pidfile")
	kill -TERM "$old"
	while kill -0 "$old" 2>/dev/null; do sleep 0.1; done
fi

nohup "$prefix/bin/spaced" --state-dir "$state" --socket "$sock" \
	--agent "$prefix/lib/space/space-agent" >>"$log" 2>&1 &
echo $! >"$pidfile"

echo "spaced started (pid $(cat "$pidfile"), log $log); waiting until it answers"
echo "(the first start on a machine builds the default template, about a minute)"
deadline=$(( $(date +%s) + 900 ))
until curl -sf --unix-socket "$sock" http://localhost/v1/health >/dev/null 2>&1; do
	if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
		echo "spaced exited; the end of $log:" >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	if [ "$(date +%s)" -ge "$deadline" ]; then
		echo "spaced did not answer within 15 minutes; see $log" >&2
		exit 1
	fi
	sleep 0.5
done
echo "spaced is up on $sock"
"$prefix/bin/space" status
