#!/bin/sh
# Paired, alternated: plain then encrypted (bucket default SSE-S3), 3 rounds.
export AWS_ACCESS_KEY_ID=BENCHACCESSKEY000000 AWS_SECRET_ACCESS_KEY=benchsecretkey0000000000 AWS_REGION=us-east-1
for round in 1 2 3 4 5; do
  for b in plain enc; do
    echo "== round $round bucket $b $(date -u +%FT%TZ)"
    /tmp/b3sse bench peak --endpoint http://127.0.0.1:19500 --bucket $b --create-bucket=false \
      --sizes 4KiB,1MiB,64MiB --concurrency 4 --duration 4s --prepare-bytes 128MiB \
      --charts=false --out /tmp/ssebench/out-$b-$round 2>&1 | tail -12
  done
done
