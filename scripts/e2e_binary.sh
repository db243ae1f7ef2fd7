#!/bin/sh
# End-to-end test of a built ctxsnap executable, as it would run on an
# air-gapped machine:
#
#   scripts/e2e_binary.sh dist/ctxsnap
#
# The binary is copied (one file) into a fresh temp dir and run there with:
#   - a PATH holding only symlinks to a few POSIX tools (no deno, no node);
#   - an emptied environment; HOME and every CTXSNAP_CONFIG_DIR empty temp dirs;
#   - no network (`unshare -n`, or `unshare -rn` without root) where that works.
# It checks: init, create, publish --with-workspace, offline verify with --trust
# (exit 0) and without (exit 3), import into a second store with --trust, restore
# there, byte-for-byte comparison with the original workspace, and that flipping
# one byte inside a blob makes verify exit 1 and import refuse the bundle; that
# --version names the source commit; and a reviewer's three commands on a
# received two-step bundle with the author's PEM key, in an empty directory:
# verify (the key pasted as PEM text), show --patch (the decision and the diff),
# timeline --html (the page), writing nothing else, while `timeline --html
# BUNDLE` refuses to overwrite the bundle (exit 5).
#
# Prints "e2e_binary: PASS" or "e2e_binary: FAIL (...)"; exits 0 only on PASS.
# Set KEEP=1 to keep the temp dir.
#
# CTXSNAP_E2E_RUNNER runs a binary built for another machine through an
# emulator: its words (absolute paths) are put before the binary, e.g.
#   CTXSNAP_E2E_RUNNER="/usr/bin/qemu-aarch64-static -L /path/to/arm64-root"
# `ctxsnap` on the inner PATH is then a two-line sh wrapper that execs it.
set -u

if [ "${1:-}" = "--inner" ]; then
  # ------------------------------------------------------------------------
  # Inner phase: restricted PATH, empty environment, maybe no network.
  T=$2
  NET=$3
  cd "$T" || exit 1
  failures=0
  checks=0

  ok() { checks=$((checks + 1)); printf '  ok    %s\n' "$1"; }
  bad() { checks=$((checks + 1)); failures=$((failures + 1)); printf '  FAIL  %s\n' "$1"; }
  # expect STATUS DESCRIPTION -- COMMAND...: runs COMMAND, output to $T/last.out
  expect() {
    want=$1
    what=$2
    shift 3
    "$@" >"$T/last.out" 2>"$T/last.err"
    got=$?
    if [ "$got" -eq "$want" ]; then
      ok "$what (exit $got)"
    else
      bad "$what: exit $got, expected $want"
      sed 's/^/        | /' "$T/last.out" "$T/last.err" | head -n 40
    fi
    return 0
  }
  # json_field NAME FILE: first "NAME": "value" in a pretty-printed JSON file
  json_field() {
    sed -n "s/^ *\"$1\": \"\\([^\"]*\\)\".*/\\1/p" "$2" | head -n 1
  }

  echo "e2e_binary: running in $T ($NET)"
  if command -v deno >/dev/null 2>&1 || command -v node >/dev/null 2>&1; then
    bad "deno or node is reachable on PATH=$PATH"
  else
    ok "no deno or node on PATH"
  fi

  expect 0 "ctxsnap --version" -- ctxsnap --version
  sed 's/^/        /' "$T/last.out"
  # Provenance: a build names the commit it was made from.
  if grep -q '^source \([0-9a-f]\{40\}\(-dirty\)\{0,1\}\|unknown (not a git checkout)\)$' "$T/last.out"; then
    ok "--version names the source commit"
  else
    bad "--version does not name the source commit"
  fi

  # The workspace: text, binary, empty, nested, a name with spaces, an
  # executable, a relative symlink, and a marker file whose blob the tamper
  # step finds in the bundle.
  W1=$T/work/one
  mkdir -p "$W1/src/deep/er" "$W1/notes"
  printf 'hello, world\n' >"$W1/README.md"
  printf 'line 1\nline 2\r\nno newline at end' >"$W1/src/deep/er/text.txt"
  : >"$W1/empty"
  printf 'name with spaces\n' >"$W1/notes/a file with spaces.txt"
  printf '#!/bin/sh\necho hi\n' >"$W1/run.sh"
  chmod 755 "$W1/run.sh"
  ln -s ../README.md "$W1/notes/readme-link"
  head -c 70000 /dev/urandom >"$W1/src/random.bin"
  printf 'CTXSNAP-E2E-MARKER-%s\n' 0123456789abcdef0123456789abcdef >"$W1/notes/marker.txt"

  cd "$W1" || exit 1
  export CTXSNAP_CONFIG_DIR="$T/config/one"
  expect 0 "init" -- ctxsnap --json init
  expect 0 "key show" -- ctxsnap --json key show
  KEY=$(json_field public_key "$T/last.out")
  expect 0 "create" -- ctxsnap --json create -m "e2e binary test"
  ID=$(json_field id "$T/last.out")
  if [ -n "$KEY" ] && [ -n "$ID" ]; then ok "snapshot $ID by key $KEY"; else bad "no key or snapshot id"; fi

  # The watch takes its filesystem events from the kernel (inotify through the
  # runtime's FFI: Deno's, or Bun's in the release executables), never falling
  # back to a walk per checkpoint on Linux; and `create` starts one in the
  # background on its own (CTXSNAP_DAEMON=on), which `watch stop` ends.
  # Native runs only: under an emulator the binary is a wrapper.
  if [ -d /proc/sys/fs/inotify ] && [ ! -e "$T/ctxsnap.bin" ]; then
    CTXSNAP_DAEMON=on ctxsnap --json create -m "starts a watch" >"$T/daemon.out" 2>&1
    tries=0
    until ctxsnap --json watch status >"$T/watch.status" 2>/dev/null || [ $tries -ge 600 ]; do
      tries=$((tries + 1))
    done
    if grep -q '"mode": "events"' "$T/watch.status"; then
      ok "the watch create started in the background uses filesystem events"
    else
      bad "the background watch does not use filesystem events"
      sed 's/^/        | /' "$T/daemon.out" "$T/watch.status" | head -n 40
    fi
    expect 0 "watch stop" -- ctxsnap --json watch stop
    if grep -q '"stopped": true' "$T/last.out"; then ok "the watch stopped"; else bad "the watch did not stop"; fi
  fi

  BUNDLE=$T/out/workspace.ctxbundle
  mkdir -p "$T/out"
  expect 0 "publish --with-workspace" -- ctxsnap --json publish "$ID" --with-workspace --out "$BUNDLE"

  # Offline verification: no store, an empty config dir, a pinned key.
  mkdir -p "$T/elsewhere"
  cd "$T/elsewhere" || exit 1
  export CTXSNAP_CONFIG_DIR="$T/config/verifier"
  expect 0 "verify BUNDLE --trust KEY (no store, empty config)" -- ctxsnap verify "$BUNDLE" --trust "$KEY"
  expect 0 "verify BUNDLE --trust KEY --json" -- ctxsnap --json verify "$BUNDLE" --trust "$KEY"
  expect 3 "verify BUNDLE without a trusted key" -- ctxsnap verify "$BUNDLE"
  # Configuration files in the working directory are not the runtime's to read:
  # a .env naming the signer's config dir (whose key it trusts), or a bunfig.toml
  # preloading a script, would turn this untrusted verdict into a trusted one.
  printf 'CTXSNAP_CONFIG_DIR=%s\n' "$T/config/one" >.env
  printf 'preload = ["./preload.js"]\n' >bunfig.toml
  printf 'require("fs").writeFileSync("%s/preloaded", "x");\n' "$T" >preload.js
  expect 3 "verify BUNDLE with a hostile .env and bunfig.toml in the working directory" -- \
    env -u CTXSNAP_CONFIG_DIR ctxsnap verify "$BUNDLE"
  if [ -e "$T/preloaded" ]; then bad "bunfig.toml's preload ran"; else ok "no preload ran"; fi
  rm -f .env bunfig.toml preload.js

  # A second store, with its own config: import, then restore the workspace.
  W2=$T/work/two
  mkdir -p "$W2"
  cd "$W2" || exit 1
  export CTXSNAP_CONFIG_DIR="$T/config/two"
  expect 0 "init a second store" -- ctxsnap --json init
  expect 0 "import BUNDLE --trust KEY" -- ctxsnap --json import "$BUNDLE" --trust "$KEY"
  expect 0 "restore the imported snapshot" -- ctxsnap --json restore "$ID" --files
  if diff -r -x .ctxsnap "$W1" "$W2" >"$T/last.out" 2>&1; then
    ok "restored workspace equals the original, byte for byte"
  else
    bad "restored workspace differs"
    sed 's/^/        | /' "$T/last.out" | head -n 20
  fi
  if [ -x "$W2/run.sh" ]; then ok "executable bit restored"; else bad "run.sh lost its executable bit"; fi
  if [ "$(readlink "$W2/notes/readme-link")" = ../README.md ]; then
    ok "symlink restored as a symlink"
  else
    bad "notes/readme-link is not the symlink ../README.md"
  fi

  # Tamper: flip one byte inside the marker blob's data.
  BAD=$T/out/tampered.ctxbundle
  cp "$BUNDLE" "$BAD"
  offset=$(grep -obUa 'CTXSNAP-E2E-MARKER-' "$BAD" | head -n 1 | cut -d: -f1)
  if [ -n "$offset" ]; then
    printf 'X' | dd of="$BAD" bs=1 seek="$offset" count=1 conv=notrunc 2>/dev/null
    if cmp -s "$BUNDLE" "$BAD"; then bad "dd did not change the bundle"; else ok "flipped byte $offset (in a blob)"; fi
  else
    bad "marker blob not found in the bundle"
  fi
  cd "$T/elsewhere" || exit 1
  export CTXSNAP_CONFIG_DIR="$T/config/verifier"
  expect 1 "verify TAMPERED --trust KEY" -- ctxsnap verify "$BAD" --trust "$KEY"
  expect 1 "verify BUNDLE TAMPERED --trust KEY (one run, worst status)" -- ctxsnap verify "$BUNDLE" "$BAD" --trust "$KEY"
  cd "$W2" || exit 1
  export CTXSNAP_CONFIG_DIR="$T/config/two"
  expect 1 "import TAMPERED --trust KEY (refused)" -- ctxsnap --json import "$BAD" --trust "$KEY"
  expect 0 "the second store still verifies" -- ctxsnap verify --all --trust "$KEY"

  # A reviewer's three commands: a received bundle with two steps and the
  # author's PEM key, in an empty directory with an empty config, offline.
  cd "$W1" || exit 1
  export CTXSNAP_CONFIG_DIR="$T/config/one"
  expect 0 "session decide" -- ctxsnap session decide "E2E-DECISION keep the old API"
  printf 'hello, reviewer\n' >"$W1/README.md"
  expect 0 "create a second step" -- ctxsnap --json create -m "second step"
  REVIEW=$T/out/review.ctxbundle
  expect 0 "publish --history all --with-workspace" -- ctxsnap --json publish HEAD --history all --with-workspace --out "$REVIEW"
  ctxsnap key export >"$T/out/alice.pub.pem"
  mkdir -p "$T/reviewer"
  cd "$T/reviewer" || exit 1
  export CTXSNAP_CONFIG_DIR="$T/config/reviewer"
  cp "$REVIEW" "$T/out/review.copy"
  expect 0 "1. verify REVIEW --trust \"\$(cat alice.pub.pem)\" (PEM text pasted)" -- \
    ctxsnap verify "$REVIEW" --trust "$(cat "$T/out/alice.pub.pem")"
  expect 0 "2. show REVIEW --patch --trust alice.pub.pem" -- ctxsnap show "$REVIEW" --patch --trust "$T/out/alice.pub.pem"
  if grep -q '+ decision: E2E-DECISION keep the old API' "$T/last.out" &&
    grep -q '^ *+hello, reviewer$' "$T/last.out"; then
    ok "show prints the decision and the diff"
  else
    bad "show lacks the decision or the diff"
    sed 's/^/        | /' "$T/last.out" | head -n 40
  fi
  expect 0 "3. timeline --html review.html REVIEW" -- \
    ctxsnap timeline --html review.html "$REVIEW" --trust "$T/out/alice.pub.pem"
  if grep -q 'E2E-DECISION' review.html; then ok "the page holds the decision"; else bad "the page lacks the decision"; fi
  if [ "$(ls -A)" = review.html ]; then ok "nothing but the page was written"; else bad "the reviewer's directory holds: $(ls -A)"; fi
  expect 5 "timeline --html REVIEW (would overwrite the evidence)" -- ctxsnap timeline --html "$REVIEW"
  if cmp -s "$REVIEW" "$T/out/review.copy"; then ok "the bundle is unchanged"; else bad "the bundle was overwritten"; fi

  if [ "$failures" -eq 0 ]; then
    echo "e2e_binary: PASS ($checks checks; $NET)"
    exit 0
  fi
  echo "e2e_binary: FAIL ($failures of $checks checks failed)"
  exit 1
fi

# --------------------------------------------------------------------------
# Outer phase: prepare the sandbox, then re-run this script inside it.
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
  echo "usage: $0 DIST_BINARY" >&2
  echo "e2e_binary: FAIL (no binary)"
  exit 2
fi
case $1 in
  /*) BIN=$1 ;;
  *) BIN=$(pwd)/$1 ;;
esac
SCRIPT=$0
case $SCRIPT in
  /*) ;;
  *) SCRIPT=$(pwd)/$SCRIPT ;;
esac

T=$(mktemp -d "${TMPDIR:-/tmp}/ctxsnap-e2e.XXXXXX") || exit 1
cleanup() {
  if [ "${KEEP:-}" = 1 ]; then echo "e2e_binary: kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$T/bin" "$T/home" "$T/tmp" "$T/config/empty"
# Only these tools, as symlinks; the ctxsnap binary as a plain copy.
for tool in sh cat chmod cmp cp cut dd diff env grep head ln ls mkdir printf readlink rm sed; do
  path=$(command -v "$tool" 2>/dev/null) || true
  case $path in
    /*) ln -s "$path" "$T/bin/$tool" ;;
    *) [ "$tool" = printf ] || { echo "e2e_binary: FAIL (needs $tool)"; exit 1; } ;;
  esac
done
if [ -n "${CTXSNAP_E2E_RUNNER:-}" ]; then
  cp "$BIN" "$T/ctxsnap.bin" || { echo "e2e_binary: FAIL (cannot copy $BIN)"; exit 1; }
  printf '#!%s\nexec %s "%s" "$@"\n' "$(command -v sh)" "$CTXSNAP_E2E_RUNNER" "$T/ctxsnap.bin" >"$T/bin/ctxsnap"
  chmod 755 "$T/bin/ctxsnap"
  echo "e2e_binary: running $BIN through: $CTXSNAP_E2E_RUNNER"
else
  cp "$BIN" "$T/bin/ctxsnap" || { echo "e2e_binary: FAIL (cannot copy $BIN)"; exit 1; }
fi
cp "$SCRIPT" "$T/e2e.sh"

NET="network isolated: unshare -n"
UNSHARE=$(command -v unshare 2>/dev/null) || UNSHARE=unshare
if "$UNSHARE" -n true 2>/dev/null; then
  set -- "$UNSHARE" -n
elif "$UNSHARE" -rn true 2>/dev/null; then
  set -- "$UNSHARE" -rn
  NET="network isolated: unshare -rn"
else
  set --
  NET="network NOT isolated: unshare unavailable"
fi
SH=$(command -v sh)
env -i PATH="$T/bin" HOME="$T/home" TMPDIR="$T/tmp" LC_ALL=C NO_COLOR=1 CTXSNAP_DAEMON=off \
  CTXSNAP_CONFIG_DIR="$T/config/empty" \
  "$@" "$SH" "$T/e2e.sh" --inner "$T" "$NET"
