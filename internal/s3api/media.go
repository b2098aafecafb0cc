package s3api

import (
	"net/http"
	"path"
	"strings"

	"github.com/b3-storage/b3/internal/meta"
)

// Media headers (Config.MediaHeaders) make b3 an origin players can read
// from directly. Live encoders push segments and playlists with plain PUTs
// that often carry no Content-Type, or a generic one; players and browsers
// need the real type (hls.js and Safari check it), and a playlist that a
// cache keeps is a stream that stops. So, when serving an object (GET and
// HEAD; the stored record is not changed):
//
//   - a Content-Type the uploader did not give, or gave as a generic one
//     (genericContentTypes) or a known wrong guess from the extension
//     (wrongGuesses), is replaced by the type of the key's extension
//     (mediaTypes), if it has one;
//   - a playlist or manifest (.m3u8, .mpd) the uploader gave no
//     Cache-Control gets "no-cache": a cache may keep it but must revalidate
//     each time. Segments keep no header: they never change once written,
//     and their ETag and Last-Modified make them cacheable.
//
// A type or Cache-Control the uploader set, and the response-* overrides of
// a request, always win.

// mediaTypes maps a lower-case key extension to the Content-Type served
// for it: HLS and DASH playlists, segments, captions and audio, and the
// thumbnails stored beside them.
var mediaTypes = map[string]string{
	".m3u8":   "application/vnd.apple.mpegurl",
	".m3u":    "audio/mpegurl",
	".mpd":    "application/dash+xml",
	".ts":     "video/mp2t",
	".m4s":    "video/iso.segment",
	".mp4":    "video/mp4",
	".m4v":    "video/mp4",
	".cmfv":   "video/mp4",
	".m4a":    "audio/mp4",
	".cmfa":   "audio/mp4",
	".aac":    "audio/aac",
	".mp3":    "audio/mpeg",
	".ac3":    "audio/ac3",
	".ec3":    "audio/eac3",
	".vtt":    "text/vtt",
	".webvtt": "text/vtt",
	".jpg":    "image/jpeg",
	".jpeg":   "image/jpeg",
	".png":    "image/png",
	".webp":   "image/webp",
}

// playlistExtensions are the extensions served "Cache-Control: no-cache"
// when the uploader set none.
var playlistExtensions = map[string]bool{".m3u8": true, ".m3u": true, ".mpd": true}

// genericContentTypes say nothing about the bytes: what b3 stores when an
// upload has no Content-Type, what SDKs and HTTP libraries send by default,
// and curl's default for --data uploads.
var genericContentTypes = map[string]bool{
	"":                                  true,
	defaultContentType:                  true,
	"application/octet-stream":          true,
	"application/x-www-form-urlencoded": true,
}

// wrongGuesses are types that clients guess from an extension and that
// are known to be wrong for media: they count as generic for that
// extension only. The aws CLI guesses with Python's mimetypes, which
// takes .ts for a Qt Linguist translation file, and HLS players refuse a
// segment of that type.
var wrongGuesses = map[string]map[string]bool{
	".ts": {"text/vnd.trolltech.linguist": true},
}

// MediaType is the Content-Type served for key when its upload gave
// contentType, under media headers: the extension's type if contentType
// is generic (or a known wrong guess for the extension) and the extension
// is known, else contentType.
func MediaType(key, contentType string) string {
	ext, given := strings.ToLower(path.Ext(key)), strings.ToLower(strings.TrimSpace(contentType))
	if !genericContentTypes[given] && !wrongGuesses[ext][given] {
		return contentType
	}
	if t, ok := mediaTypes[ext]; ok {
		return t
	}
	return contentType
}

// writeMediaHeaders applies the media defaults to the headers of obj
// (written by writeObjectHeaders).
func writeMediaHeaders(h http.Header, obj *meta.Object) {
	if t := MediaType(obj.Key, obj.ContentType); t != obj.ContentType {
		h.Set("Content-Type", t)
	}
	if obj.CacheControl == "" && playlistExtensions[strings.ToLower(path.Ext(obj.Key))] {
		h.Set("Cache-Control", "no-cache")
	}
}
