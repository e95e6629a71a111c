#!/usr/bin/env bash
# The packed package installs and works without a compiler. `npm pack`
# (whose prepack hook puts this machine's prebuild into prebuilds/) makes the
# tarball; an npm whose PATH holds node, npm and a few basic tools but no C
# compiler, make or Python installs it into a fresh directory, so that the
# install can only succeed through the prebuild; then the package is loaded
# through require and through import, and a lock passes between threads.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cd "$root"
tuple=$(node -p 'process.platform + "-" + process.arch')
npm pack --silent --pack-destination "$tmp" >"$tmp/pack.log"
tarball=$(cd "$tmp" && ls threadlock-*.tgz)
tar -tzf "$tmp/$tarball" >"$tmp/files"
if ! grep -q "^package/prebuilds/$tuple/threadlock\.[a-z]*\.node$" "$tmp/files"; then
  echo "packed: $tarball has no prebuild for $tuple" >&2
  exit 1
fi

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
cp test/packed/smoke.cjs test/packed/smoke.mjs test/packed/smoke-worker.cjs "$app/"
(
  cd "$app"
  export PATH="$bin"
  echo '{ "name": "app", "private": true, "allowScripts": { "threadlock": true } }' >package.json
  npm install --no-audit --no-fund --foreground-scripts "$tmp/$tarball" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; exit 1; }
  # The install script ran and chose the prebuild.
  if ! grep -q "^threadlock: using prebuilds/$tuple/threadlock\.[a-z]*\.node, no compilation needed$" "$tmp/install.log" ||
    [ -e node_modules/threadlock/build ]; then
    cat "$tmp/install.log" >&2
    echo "packed: the install did not take the prebuild" >&2
    exit 1
  fi
  timeout 60 node smoke.cjs
  timeout 60 node smoke.mjs
)
echo "packed: $tarball installs without a compiler and works through require and import"
