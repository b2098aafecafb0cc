#!/bin/sh
# Installs the tools b3's tests need when the machine lacks them. Idempotent.
set -eu
need=""
# (tools are added here as tests come to need them)
if [ -n "$need" ]; then
	echo "installing:$need"
	if [ "$(id -u)" != 0 ]; then echo "need root to apt-get install$need" >&2; exit 1; fi
	apt-get install -y $need >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y $need >/dev/null; }
fi
