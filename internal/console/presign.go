package console

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// presignRequest is POST /api/presign.
type presignRequest struct {
	Bucket    string `json:"bucket"`
	Key       string `json:"key"`
	VersionID string `json:"versionId,omitempty"`
	Seconds   int64  `json:"seconds"`
}

// presign makes a share link: a SigV4 presigned GET of the object on the
// S3 endpoint, signed as the session's user, so it opens exactly what
// that user may read, until it expires (at most 7 days, as S3 allows).
func (c *Console) presign(w http.ResponseWriter, r *http.Request, s *session) {
	var req presignRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8192)).Decode(&req); err != nil || req.Bucket == "" || req.Key == "" {
		writeError(w, http.StatusBadRequest, "give a bucket and a key")
		return
	}
	if req.Seconds < 1 || req.Seconds > 7*24*3600 {
		writeError(w, http.StatusBadRequest, "expiry: 1 second to 7 days")
		return
	}
	endpoint := c.s3Endpoint(r)
	q := url.Values{"X-Amz-Expires": {fmt.Sprint(req.Seconds)}}
	if req.VersionID != "" {
		q.Set("versionId", req.VersionID)
	}
	hr, err := http.NewRequestWithContext(r.Context(), http.MethodGet, endpoint+escapePath("/"+req.Bucket+"/"+req.Key)+"?"+q.Encode(), nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	creds := aws.Credentials{AccessKeyID: s.accessKey, SecretAccessKey: s.secretKey}
	signed, _, err := newSigner().PresignHTTP(r.Context(), creds, hr, "UNSIGNED-PAYLOAD", "s3", c.cfg.Region, c.cfg.Now())
	if err != nil {
		writeError(w, http.StatusInternalServerError, "presign: "+err.Error())
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"url": signed, "expires": c.cfg.Now().Add(time.Duration(req.Seconds) * time.Second).UTC().Format(time.RFC3339)})
}

// s3Endpoint is Config.S3Endpoint with an unspecified host replaced by the
// host the browser used for the console.
func (c *Console) s3Endpoint(r *http.Request) string {
	u, err := url.Parse(c.cfg.S3Endpoint)
	if err != nil || u.Host == "" {
		return c.cfg.S3Endpoint
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return c.cfg.S3Endpoint
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		browserHost := r.Host
		if h, _, err := net.SplitHostPort(r.Host); err == nil {
			browserHost = h
		}
		u.Host = net.JoinHostPort(browserHost, port)
	}
	return u.String()
}
