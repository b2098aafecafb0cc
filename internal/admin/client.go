package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
	"github.com/b3-storage/b3/internal/sse"
)

// Client calls the admin API (the `b3 admin` command).
type Client struct {
	Endpoint string // e.g. http://127.0.0.1:9001
	Token    string
	HTTP     *http.Client // default: 30s timeout
	Actor    string       // sent as ActorHeader for the audit log
}

// StatusError is an answer of the admin API that is not a success: its
// HTTP status and the API's error message, if it gave one.
type StatusError struct {
	Method, Path string
	Code         int
	Message      string
}

func (e *StatusError) Error() string {
	if e.Message != "" {
		return fmt.Sprintf("%s %s: %s (%d)", e.Method, e.Path, e.Message, e.Code)
	}
	return fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Path, e.Code)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Endpoint, "/")+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if c.Actor != "" {
		req.Header.Set(ActorHeader, c.Actor)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e struct{ Error string }
		_ = json.Unmarshal(data, &e)
		return &StatusError{Method: method, Path: path, Code: resp.StatusCode, Message: e.Error}
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// Stats fetches the node's statistics; withObjects adds a full count.
func (c *Client) Stats(ctx context.Context, withObjects bool) (Stats, error) {
	var st Stats
	path := "/admin/v1/stats"
	if withObjects {
		path += "?objects=1"
	}
	return st, c.do(ctx, "GET", path, nil, &st)
}

// Users lists the access keys.
func (c *Client) Users(ctx context.Context) ([]User, error) {
	var us []User
	return us, c.do(ctx, "GET", "/admin/v1/users", nil, &us)
}

// AddUser creates an access key; the answer holds the secret.
func (c *Client) AddUser(ctx context.Context, name string) (User, error) {
	var u User
	return u, c.do(ctx, "POST", "/admin/v1/users", map[string]string{"name": name}, &u)
}

// RemoveUser deletes an access key added through the API that owns no
// bucket.
func (c *Client) RemoveUser(ctx context.Context, accessKey string) error {
	_, err := c.RemoveUserWith(ctx, accessKey, "", false)
	return err
}

// RemoveUserWith deletes an access key; its buckets go to newOwner, or
// with force stay where they are (reachable by the root user).
func (c *Client) RemoveUserWith(ctx context.Context, accessKey, newOwner string, force bool) (UserRemoved, error) {
	q := url.Values{}
	if newOwner != "" {
		q.Set("new_owner", newOwner)
	}
	if force {
		q.Set("force", "1")
	}
	var res UserRemoved
	return res, c.do(ctx, "DELETE", "/admin/v1/users/"+url.PathEscape(accessKey)+query(q), nil, &res)
}

// Buckets lists every bucket with its owner and usage.
func (c *Client) Buckets(ctx context.Context) ([]Bucket, error) {
	var bs []Bucket
	return bs, c.do(ctx, "GET", "/admin/v1/buckets", nil, &bs)
}

// SetBucketOwner gives a bucket to another access key.
func (c *Client) SetBucketOwner(ctx context.Context, bucket, owner string) (BucketOwnerChanged, error) {
	var b BucketOwnerChanged
	return b, c.do(ctx, "PUT", "/admin/v1/buckets/"+url.PathEscape(bucket)+"/owner", map[string]string{"owner": owner}, &b)
}

// SetBucketHLS turns a bucket's LL-HLS origin setting on or off.
func (c *Client) SetBucketHLS(ctx context.Context, bucket string, on bool) (BucketHLS, error) {
	var b BucketHLS
	return b, c.do(ctx, "PUT", "/admin/v1/buckets/"+url.PathEscape(bucket)+"/hls", map[string]bool{"ll_hls": on}, &b)
}

// DeleteBucket deletes a bucket; with force, its objects and uploads too.
func (c *Client) DeleteBucket(ctx context.Context, bucket string, force bool) (BucketDeleted, error) {
	q := url.Values{}
	if force {
		q.Set("force", "1")
	}
	var res BucketDeleted
	return res, c.do(ctx, "DELETE", "/admin/v1/buckets/"+url.PathEscape(bucket)+query(q), nil, &res)
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// VacuumStatus reports vacuum.
func (c *Client) VacuumStatus(ctx context.Context) (objstore.VacuumStatus, error) {
	var st objstore.VacuumStatus
	return st, c.do(ctx, "GET", "/admin/v1/vacuum", nil, &st)
}

// VacuumStart starts a pass (threshold 0: the configured one).
func (c *Client) VacuumStart(ctx context.Context, threshold float64) error {
	return c.do(ctx, "POST", "/admin/v1/vacuum/start", VacuumRequest{Threshold: threshold}, nil)
}

// VacuumStop cancels a pass and stops the automatic loop.
func (c *Client) VacuumStop(ctx context.Context) (objstore.VacuumStatus, error) {
	var st objstore.VacuumStatus
	return st, c.do(ctx, "POST", "/admin/v1/vacuum/stop", nil, &st)
}

// VacuumAuto (re)starts the automatic loop.
func (c *Client) VacuumAuto(ctx context.Context, interval time.Duration) (objstore.VacuumStatus, error) {
	var st objstore.VacuumStatus
	return st, c.do(ctx, "POST", "/admin/v1/vacuum/auto", VacuumRequest{Interval: interval.String()}, &st)
}

// Limits returns the I/O limits in force.
func (c *Client) Limits(ctx context.Context) (iolimit.Limits, error) {
	var l iolimit.Limits
	return l, c.do(ctx, "GET", "/admin/v1/limits", nil, &l)
}

// SetLimits replaces the I/O limits.
func (c *Client) SetLimits(ctx context.Context, l iolimit.Limits) (iolimit.Limits, error) {
	var out iolimit.Limits
	return out, c.do(ctx, "PUT", "/admin/v1/limits", l, &out)
}

// Cache reports the object cache.
func (c *Client) Cache(ctx context.Context) (cache.Stats, error) {
	var st cache.Stats
	return st, c.do(ctx, "GET", "/admin/v1/cache", nil, &st)
}

// SetCache changes the object cache's size (0: off).
func (c *Client) SetCache(ctx context.Context, maxBytes int64) (cache.Stats, error) {
	var st cache.Stats
	return st, c.do(ctx, "PUT", "/admin/v1/cache", CacheRequest{MaxBytes: maxBytes}, &st)
}

// LifecycleRun runs one lifecycle pass and waits for it.
func (c *Client) LifecycleRun(ctx context.Context) (objstore.LifecycleResult, error) {
	var res objstore.LifecycleResult
	return res, c.do(ctx, "POST", "/admin/v1/lifecycle/run", nil, &res)
}

// Settings lists the runtime-changeable settings: value in force, the
// configured one, and whether a runtime change overrides it.
func (c *Client) Settings(ctx context.Context) ([]Setting, error) {
	var rows []Setting
	return rows, c.do(ctx, "GET", "/admin/v1/settings", nil, &rows)
}

// ResetSettings drops every runtime override.
func (c *Client) ResetSettings(ctx context.Context) ([]Setting, error) {
	var rows []Setting
	return rows, c.do(ctx, "DELETE", "/admin/v1/settings/overrides", nil, &rows)
}

// KMSStatus reports the master keys (names) and the key rotation job.
func (c *Client) KMSStatus(ctx context.Context) (sse.KMSStatus, error) {
	var st sse.KMSStatus
	return st, c.do(ctx, "GET", "/admin/v1/kms", nil, &st)
}

// KMSRotate starts re-sealing data keys under another master key.
func (c *Client) KMSRotate(ctx context.Context, from, to string) (sse.KMSStatus, error) {
	var st sse.KMSStatus
	return st, c.do(ctx, "POST", "/admin/v1/kms/rotate", RotateRequest{From: from, To: to}, &st)
}
