#!/bin/sh
# scripts/sdk_path.sh - makes `import space` work for Debian's /usr/bin/python3 from this tree:
# writes space-sdk.pth, naming sdk/python, into a folder whose .pth files that python reads at
# start (its /usr/local site folder). Run by scripts/up.sh (`make up`).
#
#   scripts/sdk_path.sh [DIR]   writes DIR/space-sdk.pth (default: the folder below) and says so
#   scripts/sdk_path.sh --dir   prints that default folder and writes nothing
set -eu

sdk=$(cd "$(dirname "$0")/../sdk/python" && pwd)
default=$(/usr/bin/python3 -c 'import site; print(next(p for p in site.getsitepackages() if p.startswith("/usr/local/")))')

if [ "${1:-}" = --dir ]; then
	echo "$default"
	exit 0
fi
dir=${1:-$default}
mkdir -p "$dir"
echo "$sdk" >"$dir/space-sdk.pth.tmp"
mv "$dir/space-sdk.pth.tmp" "$dir/space-sdk.pth"
echo "import space: $dir/space-sdk.pth names $sdk"
