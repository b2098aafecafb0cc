// Package console is b3's web console: a browser UI served on its own
// listener (--console-address) by `b3 server` and `b3 node`, with every
// asset embedded in the binary.
//
// # Authorisation: one set of rules
//
// The console holds no rules of its own about who may see or change what.
// A user logs in with an access key and secret; the console checks them by
// running ListBuckets through the S3 API as that user. From then on every
// bucket and object action of the page is an S3 request that the console
// signs (SigV4) with the session's credentials and hands, in process, to
// the same http.Handler that serves the S3 port:
//
//	browser --cookie+CSRF--> /s3/{bucket}/{key}?{query}
//	        console: sign as the session's user --> s3api.Server.ServeHTTP
//
// So the console can do exactly what the S3 API lets that user do, through
// the S3 API's own authentication and authorisation code; a removed access
// key stops working in the console at its next request. Operations pages
// (users, vacuum, limits, lifecycle passes, cluster) are the admin API
// called in process with the admin token, and only for admin users (the
// root user). Charts come from the server's own Prometheus registry,
// sampled in memory (History); no Prometheus server is involved.
//
// # Sessions and CSRF
//
// A session lives in memory: a random 256-bit id in a cookie (HttpOnly,
// SameSite=Strict, Secure behind TLS, expiring after Config.SessionTTL),
// and a separate random CSRF token the page receives in JSON and sends
// back in the X-CSRF-Token header. Every request but GET and HEAD needs
// both, and a cross-origin Origin header is refused outright. A restart
// ends every session.
//
// # Untrusted content
//
// Object keys, metadata and bodies are untrusted. The page renders them
// with textContent only (never innerHTML); object bytes served from the
// console's origin carry "Content-Security-Policy: sandbox" and nosniff,
// so an HTML or SVG object opened in a tab cannot run script with the
// console's cookie. The page itself runs under a strict CSP (scripts from
// the console only, no inline script).
//
// # The page
//
// Plain JavaScript in assets/, no build step and nothing from a CDN: the
// page's fonts (Inter, JetBrains Mono; SIL OFL) are embedded too, so it
// looks the same on a machine without fonts. It is laid out for windows
// from 1280 px wide, every form control has a <label>, errors are shown
// next to their field, and dialogs work from the keyboard; the browser
// tests (headless Chromium) check each of these on every page.
package console
