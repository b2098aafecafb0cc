#!/bin/sh
# Installs the tools b3's tests need when the machine lacks them. Idempotent.
#
# test/e2e drives real S3 clients against a real `b3 server`: the aws CLI,
# boto3 (with the Debian python3 it is installed for), s3cmd, rclone, curl
# and the MinIO client (mc, built with Go). Debian's packages are preferred: a pyenv shim named "aws" may exist
# and not work, so each tool is checked by running it, at the path the
# tests look first (/usr/bin).
set -eu
works() { "$@" >/dev/null 2>&1; }
# apt_install PACKAGE...: Debian packages, as root, updating the lists
# only when the first try fails.
apt_install() {
	echo "installing: $*"
	if [ "$(id -u)" != 0 ]; then echo "need root to apt-get install $*" >&2; exit 1; fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 ||
		{ apt-get update >/dev/null && apt-get install -y --no-install-recommends "$@" >/dev/null; }
}
need=""
works /usr/bin/aws --version || need="$need awscli"
works /usr/bin/s3cmd --version || need="$need s3cmd"
works /usr/bin/rclone version || need="$need rclone"
works /usr/bin/curl --version || need="$need curl"
works /usr/bin/rsync --version || need="$need rsync" # test/mount copies a mounted tree with it
works /usr/bin/python3 -c 'import boto3' || need="$need python3-boto3"
# shellcheck disable=SC2086 # one word per package
[ -z "$need" ] || apt_install $need
# Without the apt package (other distributions), pip is the fallback.
if ! works /usr/bin/python3 -c 'import boto3'; then
	echo "installing boto3 with pip"
	/usr/bin/python3 -m pip install --quiet --break-system-packages boto3 ||
		/usr/bin/python3 -m pip install --quiet boto3
fi
# The MinIO client: Debian has no package (its "mc" is Midnight Commander),
# so it is built from source at a pinned version into .tools/bin of the
# repository, where test/e2e looks for it. A stamp names the version.
mc_version=v0.0.0-20250313080218-cf909e1063a9
tools_bin="$(cd "$(dirname "$0")/.." && pwd)/.tools/bin"
if [ "$(cat "$tools_bin/mc.version" 2>/dev/null)" != "$mc_version" ] || ! works "$tools_bin/mc" --version; then
	echo "installing mc (MinIO client) $mc_version into $tools_bin"
	mkdir -p "$tools_bin"
	GOBIN="$tools_bin" go install "github.com/minio/mc@$mc_version"
	echo "$mc_version" >"$tools_bin/mc.version"
fi

# --- fuse3: test/mount mounts buckets with `b3 mount` (FUSE) -------------
# fusermount3 and the FUSE device; the tests run as root, which mounts
# with mount(2) directly, but fusermount3 unmounts for other users and is
# what the tests check for.
if ! works /usr/bin/fusermount3 --version; then
	apt_install fuse3
fi
if [ ! -e /dev/fuse ] && [ "$(id -u)" = 0 ]; then
	modprobe fuse 2>/dev/null || true
fi

# systemd-analyze: internal/server's TestDeployAgrees rates deploy/b3.service
# with `systemd-analyze security --offline=true` (Debian: package systemd).
if ! works systemd-analyze --version; then
	apt_install systemd
fi

# --- web console (internal/console) ------------------------------------
# Its browser test drives headless Chromium with chromedp: Debian's
# chromium package. (Its HLS fixture is committed, so no ffmpeg is needed.)
if ! works /usr/bin/chromium --version; then
	apt_install chromium
fi

# ffmpeg and ffprobe (test/hls): a live encoder pushing HLS into b3 with
# plain HTTP PUT and DELETE, and a player reading it back. Debian package.
if ! works /usr/bin/ffmpeg -version || ! works /usr/bin/ffprobe -version; then
	apt_install ffmpeg
fi

# Real LL-HLS players (test/hls TestLLHLSPlayers): hls.js and shaka-player,
# npm packages at pinned versions, into .tools/npm of the repository,
# from which the test serves them to headless Chromium (never a CDN at
# test time). A stamp names the versions.
players="hls.js@1.7.4 shaka-player@5.2.12"
npm_dir="$(cd "$(dirname "$0")/.." && pwd)/.tools/npm"
if [ "$(cat "$npm_dir/players.version" 2>/dev/null)" != "$players" ] ||
	[ ! -f "$npm_dir/node_modules/hls.js/dist/hls.min.js" ] ||
	[ ! -f "$npm_dir/node_modules/shaka-player/dist/shaka-player.compiled.js" ]; then
	works npm --version || apt_install npm
	echo "installing $players into $npm_dir"
	mkdir -p "$npm_dir"
	# shellcheck disable=SC2086 # one word per package
	npm install --prefix "$npm_dir" --no-audit --no-fund --no-package-lock --silent $players
	echo "$players" >"$npm_dir/players.version"
fi
