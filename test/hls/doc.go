// Package hls tests b3 as an HLS origin end to end: a real encoder (ffmpeg,
// the Debian package) pushes a live stream into a real `b3 server` with
// unsigned HTTP PUTs and DELETEs allowed by a bucket policy, and a real
// player (ffprobe) reads it back. docs/HLS.md is the recipe these tests run.
// TestLLHLSPlayers does the same for Low-Latency HLS: ffmpeg's CMAF
// fragments published as parts by a small packager (packager_test.go),
// played by hls.js and shaka-player in headless Chromium.
//
// The package has no non-test code. ffmpeg, ffprobe, chromium and the
// players (npm packages, into .tools/npm) come from
// scripts/install-test-tools.sh; a missing tool fails the test with a
// message naming the script, it is never skipped.
package hls
