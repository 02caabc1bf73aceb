#!/bin/sh
# scripts/down.sh - stop the spaced that `make up` started. Sandboxes keep running; the next
# `make up` adopts them. Remove them first with `space rm ID...` if that is the intent.
set -eu
pidfile=/run/space/spaced.pid
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
	pid=$(cat "$pidfile")
	kill -TERM "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
	rm -f "$pidfile"
	echo "spaced stopped"
else
	echo "spaced is not running"
fi
