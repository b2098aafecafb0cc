package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/b3-storage/b3/internal/cache"
	"github.com/b3-storage/b3/internal/iolimit"
	"github.com/b3-storage/b3/internal/objstore"
)

// Client calls the admin API (the `b3 admin` command).
type Client struct {
	Endpoint string // e.g. http://127.0.0.1:9001
	Token    string
	HTTP     *http.Client // default: 30s timeout
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
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("%s %s: %s (%d)", method, path, e.Error, resp.StatusCode)
		}
		return fmt.Errorf("%s %s: HTTP %d", method, path, resp.StatusCode)
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

// RemoveUser deletes an access key added through the API.
func (c *Client) RemoveUser(ctx context.Context, accessKey string) error {
	return c.do(ctx, "DELETE", "/admin/v1/users/"+accessKey, nil, nil)
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

// LifecycleRun runs one lifecycle pass and waits for it.
func (c *Client) LifecycleRun(ctx context.Context) (objstore.LifecycleResult, error) {
	var res objstore.LifecycleResult
	return res, c.do(ctx, "POST", "/admin/v1/lifecycle/run", nil, &res)
}
