package console

import (
	"io"
	"net/http"
	"strings"

	"github.com/b3-storage/b3/internal/admin"
)

// adminProxy runs /api/admin/{path} as the admin API's /admin/v1/{path},
// in process, with the admin token; adminOnly has checked the user is an
// admin. The admin API stays the one place its rules live.
func (c *Console) adminProxy(w http.ResponseWriter, r *http.Request, s *session) {
	rest := strings.TrimPrefix(r.URL.Path, "/api/admin/")
	var body io.Reader = http.NoBody
	if r.Body != nil {
		body = http.MaxBytesReader(w, r.Body, 1<<20)
	}
	target := "/admin/v1/" + rest
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, target, body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	req.ContentLength = r.ContentLength
	req.RequestURI = target
	req.RemoteAddr = r.RemoteAddr
	req.Header.Set("Authorization", "Bearer "+c.cfg.AdminToken)
	// The admin API's audit log names who acted: the logged-in user.
	req.Header.Set(admin.ActorHeader, "console:"+s.accessKey)
	req.Header.Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	c.cfg.Admin.ServeHTTP(w, req)
}

// usage answers a bucket's object count and bytes, to whoever the S3 API
// lets read the bucket's ACL (its owner).
func (c *Console) usage(w http.ResponseWriter, r *http.Request, s *session) {
	bucket := r.URL.Query().Get("bucket")
	if bucket == "" || strings.Contains(bucket, "/") {
		writeError(w, http.StatusBadRequest, "give a bucket")
		return
	}
	if c.cfg.Usage == nil {
		writeError(w, http.StatusNotImplemented, "usage is not available")
		return
	}
	if status, code := c.s3Status(r, s, http.MethodGet, "/"+bucket, "acl"); status != http.StatusOK {
		writeError(w, status, code)
		return
	}
	objects, bytes, err := c.cfg.Usage(bucket)
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]int64{"objects": objects, "bytes": bytes})
}

func (c *Console) metrics(w http.ResponseWriter, _ *http.Request, _ *session) {
	writeJSON(w, http.StatusOK, c.history.Series())
}
