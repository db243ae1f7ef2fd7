#!/bin/sh
# The Windows executable under Wine: what it is for on a Windows machine,
# offline verification of published files, end to end:
#
#   scripts/e2e_windows.sh dist/release/ctxsnap-V-windows-x64.exe dist/release/ctxsnap-V-linux-x64
#
# The Linux binary (second argument) makes a store, a snapshot, a published
# snapshot, a bundle with workspace content and a tampered copy; then the
# Windows binary, under `wine64` with a fresh WINEPREFIX, an empty config dir
# and no network (`unshare -n` where it works), must:
# print --version; verify the bundle and the snapshot with --trust (exit 0,
# also --json); say untrusted without it (exit 3); refuse the tampered bundle
# (exit 1); report a missing file (exit 4); verify several files in one run
# with the worst status; verify a bundle read from standard input.
#
# Not run under Wine (reduced e2e): init, create, publish, import and restore
# on Windows. The store side is untested there: it relies on POSIX modes,
# O_NOFOLLOW and symlinks, and refuses the identity key's mode (0666) as
# Wine reports it.
#
# Wine 8 (Debian 12) lacks bcryptprimitives.dll, which Bun's Windows runtime
# imports (Windows 10+ ships it); scripts/wine/bcryptprimitives.c is a
# stand-in built with mingw-w64 and put next to the .exe, for this test only.
#
# Prints "e2e_windows: PASS" or "e2e_windows: FAIL (...)"; exits 0 only on PASS.
set -u
if [ $# -ne 2 ] || [ ! -f "$1" ] || [ ! -f "$2" ]; then
  echo "usage: $0 WINDOWS_EXE LINUX_BINARY" >&2
  echo "e2e_windows: FAIL (no binary)"
  exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
WINE=$(command -v wine64 2>/dev/null || ls /usr/lib/wine/wine64 2>/dev/null) ||
  { echo "e2e_windows: FAIL (wine64 not installed)"; exit 1; }
CC=$(command -v x86_64-w64-mingw32-gcc 2>/dev/null) ||
  { echo "e2e_windows: FAIL (x86_64-w64-mingw32-gcc not installed)"; exit 1; }

T=$(mktemp -d "${TMPDIR:-/tmp}/ctxsnap-e2e-win.XXXXXX") || exit 1
cleanup() {
  WINEPREFIX="$T/wine" "$(dirname "$WINE")/wineserver" -k 2>/dev/null
  if [ "${KEEP:-}" = 1 ]; then echo "e2e_windows: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$T/win" "$T/work" "$T/config/linux" "$T/config/win" "$T/home"
cp "$1" "$T/win/ctxsnap.exe" || exit 1
LINUX=$2
case $LINUX in /*) ;; *) LINUX=$(pwd)/$LINUX ;; esac
"$CC" -shared -O2 -o "$T/win/bcryptprimitives.dll" "$HERE/wine/bcryptprimitives.c" -ladvapi32 ||
  { echo "e2e_windows: FAIL (cannot build the bcryptprimitives stand-in)"; exit 1; }

failures=0
checks=0
ok() { checks=$((checks + 1)); printf '  ok    %s\n' "$1"; }
bad() { checks=$((checks + 1)); failures=$((failures + 1)); printf '  FAIL  %s\n' "$1"; }

# The files to verify, made on Linux.
W=$T/work/ws
mkdir -p "$W/src"
printf 'hello from linux\n' >"$W/README.md"
head -c 70000 /dev/urandom >"$W/src/random.bin"
printf 'CTXSNAP-E2E-MARKER-%s\n' 0123456789abcdef0123456789abcdef >"$W/marker.txt"
lx() { (cd "$W" && HOME="$T/home" CTXSNAP_CONFIG_DIR="$T/config/linux" "$LINUX" "$@"); }
lx --json init >/dev/null || { echo "e2e_windows: FAIL (linux init)"; exit 1; }
KEY=$(lx --json key show | sed -n 's/^ *"public_key": "\([0-9a-f]*\)".*/\1/p')
ID=$(lx --json create -m "for windows" | sed -n 's/^ *"id": "\([0-9a-f]*\)".*/\1/p' | head -n 1)
lx publish "$ID" --with-workspace --out "$T/win/b.ctxbundle" -q >/dev/null &&
  lx publish "$ID" --out "$T/win/s.ctxsnapshot.json" -q >/dev/null ||
  { echo "e2e_windows: FAIL (linux publish)"; exit 1; }
cp "$T/win/b.ctxbundle" "$T/win/bad.ctxbundle"
offset=$(grep -obUa 'CTXSNAP-E2E-MARKER-' "$T/win/bad.ctxbundle" | head -n 1 | cut -d: -f1)
printf 'X' | dd of="$T/win/bad.ctxbundle" bs=1 seek="$offset" count=1 conv=notrunc 2>/dev/null

NET="network isolated: unshare -n"
ISOLATE="unshare -n"
if unshare -n true 2>/dev/null; then :
elif unshare -rn true 2>/dev/null; then ISOLATE="unshare -rn"; NET="network isolated: unshare -rn"
else ISOLATE=""; NET="network NOT isolated: unshare unavailable"
fi
echo "e2e_windows: running in $T ($NET)"
export WINEPREFIX="$T/wine" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml=" HOME="$T/home"
# A fresh prefix, reporting Windows 10 (Node and Bun need 10 or later).
$ISOLATE "$WINE" winecfg -v win10 >/dev/null 2>&1
CTXSNAP_CONFIG_DIR="Z:$(printf '%s' "$T/config/win" | tr / '\\')"
export CTXSNAP_CONFIG_DIR

# expect STATUS DESCRIPTION -- ARGS...: runs the .exe under Wine in $T/win
expect() {
  want=$1
  what=$2
  shift 3
  (cd "$T/win" && $ISOLATE "$WINE" ./ctxsnap.exe "$@" >"$T/last.out" 2>"$T/last.err" <"${STDIN:-/dev/null}")
  got=$?
  if [ "$got" -eq "$want" ]; then ok "$what (exit $got)"; else
    bad "$what: exit $got, expected $want"
    sed 's/^/        | /' "$T/last.out" "$T/last.err" | head -n 20
  fi
}

expect 0 "ctxsnap.exe --version" -- --version
sed 's/^/        /' "$T/last.out"
expect 0 "verify BUNDLE --trust KEY" -- verify b.ctxbundle --trust "$KEY"
grep -q '^OK: intact, signed by a trusted key' "$T/last.out" && ok "says OK" || bad "no OK verdict"
expect 0 "verify SNAPSHOT --trust KEY --json" -- --json verify s.ctxsnapshot.json --trust "$KEY"
grep -q "\"primary\": \"$ID\"" "$T/last.out" && ok "--json names the snapshot" || bad "--json lacks the id"
expect 3 "verify BUNDLE without a trusted key" -- verify b.ctxbundle
expect 1 "verify TAMPERED --trust KEY" -- verify bad.ctxbundle --trust "$KEY"
expect 4 "verify MISSING" -- verify missing.ctxbundle --trust "$KEY"
expect 1 "verify BUNDLE SNAPSHOT TAMPERED MISSING (one run, worst status)" -- \
  verify b.ctxbundle s.ctxsnapshot.json bad.ctxbundle missing.ctxbundle --trust "$KEY"
[ "$(grep -c '^OK ' "$T/last.out")" -eq 2 ] && ok "two files OK in the batch" || bad "batch lines wrong"
STDIN="$T/win/b.ctxbundle" expect 0 "verify - (bundle on standard input) --trust KEY" -- verify - --trust "$KEY"

if [ "$failures" -eq 0 ]; then
  echo "e2e_windows: PASS ($checks checks; $NET)"
  exit 0
fi
echo "e2e_windows: FAIL ($failures of $checks checks failed)"
exit 1
