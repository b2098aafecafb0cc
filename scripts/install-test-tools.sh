#!/bin/sh
# Installs the tools b3's tests need when the machine lacks them. Idempotent.
#
# test/e2e drives real S3 clients against a real `b3 server`: the aws CLI,
# boto3 (with the Debian python3 it is installed for), s3cmd, rclone, curl
# and the MinIO client (mc, built with Go). Debian's packages are preferred: a pyenv shim named "aws" may exist
# and not work, so each tool is checked by running it, at the path the
# tests look first (/usr/bin).
set -eu
need=""
works() { "$@" >/dev/null 2>&1; }
works /usr/bin/aws --version || need="$need awscli"
works /usr/bin/s3cmd --version || need="$need s3cmd"
works /usr/bin/rclone version || need="$need rclone"
works /usr/bin/curl --version || need="$need curl"
works /usr/bin/python3 -c 'import boto3' || need="$need python3-boto3"
if [ -n "$need" ]; then
	echo "installing:$need"
	if [ "$(id -u)" != 0 ]; then echo "need root to apt-get install$need" >&2; exit 1; fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y $need >/dev/null 2>&1 ||
		{ apt-get update >/dev/null && apt-get install -y $need >/dev/null; }
fi
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

# ffmpeg and ffprobe (test/hls): a live encoder pushing HLS into b3 with
# plain HTTP PUT and DELETE, and a player reading it back. Debian package.
if ! works /usr/bin/ffmpeg -version || ! works /usr/bin/ffprobe -version; then
	echo "installing: ffmpeg"
	if [ "$(id -u)" != 0 ]; then echo "need root to apt-get install ffmpeg" >&2; exit 1; fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get install -y ffmpeg >/dev/null 2>&1 ||
		{ apt-get update >/dev/null && apt-get install -y ffmpeg >/dev/null; }
fi
