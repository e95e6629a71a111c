#!/usr/bin/env bash
# The packed package installs and works without a compiler. `npm pack`
# (whose prepack hook puts the prebuilds for linux-x64, linux-arm64 and
# win32-x64 into prebuilds/) makes the tarball; an npm whose PATH holds node,
# npm and a few basic tools but no C compiler, make or Python installs it
# into a fresh directory, so that the install can only succeed through the
# prebuild; then the package is loaded through require and through import,
# a lock passes between threads, and five threads count under one lock
# (smoke-threads.cjs, with a wait's timeout and a waitAsync). The same
# installed package is then checked in the real Node of linux-arm64 (under
# qemu) and of win32-x64 (under wine), through scripts/cross.js: the install
# script, run by that Node, takes that platform's prebuild, and the same
# smoke tests pass.
# Needs what .ci/cross.sh sets up (toolchains, wine, qemu with binfmt_misc).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$root"
tuple=$(node -p 'process.platform + "-" + process.arch')
npm pack --silent --pack-destination "$tmp" >"$tmp/pack.log"
tarball=$(cd "$tmp" && ls threadlock-*.tgz)
tar -tzf "$tmp/$tarball" >"$tmp/files"
for target in "$tuple" linux-arm64 win32-x64; do
  if ! grep -Eq "^package/prebuilds/$target/threadlock(\.[a-z]+)*\.node$" "$tmp/files"; then
    echo "packed: $tarball has no prebuild for $target" >&2
    exit 1
  fi
done

# A PATH of symbolic links to the few tools an install needs, and nothing
# that could compile.
bin="$tmp/bin"
mkdir "$bin"
for tool in node npm npx sh bash env cat ls mkdir rm cp mv ln chmod dirname \
  basename uname tar gzip grep sed timeout; do
  ln -s "$(command -v "$tool")" "$bin/$tool"
done
for tool in cc gcc clang c99 g++ make python python3; do
  if PATH="$bin" command -v "$tool" >/dev/null; then
    echo "packed: $tool is on the restricted PATH" >&2
    exit 1
  fi
done

app="$tmp/app"
mkdir "$app"
cp test/packed/smoke.cjs test/packed/smoke.mjs test/packed/smoke-worker.cjs \
  test/packed/smoke-threads.cjs "$app/"
(
  cd "$app"
  export PATH="$bin"
  echo '{ "name": "app", "private": true, "allowScripts": { "threadlock": true } }' >package.json
  npm install --no-audit --no-fund --foreground-scripts "$tmp/$tarball" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; exit 1; }
  # The install script ran and chose the prebuild.
  if ! grep -Eq "^threadlock: using prebuilds/$tuple/threadlock(\.[a-z]+)*\.node, no compilation needed$" "$tmp/install.log" ||
    [ -e node_modules/threadlock/build ]; then
    cat "$tmp/install.log" >&2
    echo "packed: the install did not take the prebuild" >&2
    exit 1
  fi
  timeout 60 node smoke.cjs
  timeout 60 node smoke.mjs
  timeout 60 node smoke-threads.cjs
)
echo "packed: $tarball installs without a compiler and works through require and import"

# The other two platforms, in the same installed package: the x64 install
# left no build/ behind, so each platform's node finds only prebuilds/.
for target in linux-arm64 win32-x64; do
  (
    cd "$app"
    node "$root/scripts/cross.js" node "$target" node_modules/threadlock/scripts/install.js \
      >"$tmp/install-$target.log" 2>&1 || { cat "$tmp/install-$target.log" >&2; exit 1; }
    if ! grep -Eq "^threadlock: using prebuilds/$target/threadlock(\.[a-z]+)*\.node, no compilation needed$" \
      "$tmp/install-$target.log" || [ -e node_modules/threadlock/build ]; then
      cat "$tmp/install-$target.log" >&2
      echo "packed: the install script on $target did not take the prebuild" >&2
      exit 1
    fi
    for smoke in smoke.cjs smoke.mjs smoke-threads.cjs; do
      node "$root/scripts/cross.js" node "$target" "$smoke" >"$tmp/smoke.log" 2>&1 ||
        { cat "$tmp/smoke.log" >&2; echo "packed: $smoke failed on $target" >&2; exit 1; }
      cat "$tmp/smoke.log"
    done
  )
  echo "packed: the same package works on $target"
done
