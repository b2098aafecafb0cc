package console_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/chromedp/chromedp"

	"github.com/b3-storage/b3/internal/testutil"
)

// toastStarts waits for a toast whose text starts with prefix.
func toastStarts(prefix string) chromedp.Action[chromedp.Void] {
	return waitTrue(`[...document.querySelectorAll('.toast')].some(t => t.textContent.startsWith(` + jsString(prefix) + `))`)
}

// TestConsoleOperations drives the Operations page's forms in headless
// Chromium against a real b3 server, each result read back through the
// admin API or the S3 API: a user added (the secret shown once works), and
// removed (its key then refused); I/O limits (a negative one refused next
// to its field, a good one in force); the automatic vacuum interval (the
// server's refusal next to the field, a good one kept); a lifecycle pass.
func TestConsoleOperations(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	consoleURL := "http://" + srv.ConsoleAddr + "/"
	accessKey, secretKey := srv.Keys()
	adm := srv.Admin()
	ctx, _ := newBrowser(t)
	failOnScriptErrors(t, ctx)
	do(t, ctx, "log in", login(consoleURL, accessKey, secretKey))
	do(t, ctx, "operations", chromedp.Navigate(consoleURL+"#/ops"), present(chromedp.CSS("#add-user")), present(chromedp.CSS("#limits-save")))

	// Users: a name is needed; the new key's secret is shown once and works.
	do(t, ctx, "add a user without a name", chromedp.Click(chromedp.ID("add-user")),
		waitTrue(`document.getElementById('new-user-error').textContent !== ''`))
	do(t, ctx, "add backup-job", chromedp.SendKeys(chromedp.ID("new-user"), "backup-job\r"),
		waitTrue(`[...document.querySelectorAll('#users pre')].some(p => p.textContent.includes('secret key:'))`))
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#users pre').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`access key: (\S+)\nsecret key: (\S+)`).FindStringSubmatch(shown)
	if m == nil {
		t.Fatalf("the new key is shown as %q", shown)
	}
	newKey := testutil.S3Client(srv.Endpoint(), m[1], m[2])
	if _, err := newKey.ListBuckets(t.Context(), &s3.ListBucketsInput{}); err != nil {
		t.Errorf("the key the console showed does not work: %v", err)
	}
	do(t, ctx, "remove it", chromedp.Click(chromedp.CSS(`#users button[aria-label="Remove `+m[1]+`"]`)), chromedp.Click(chromedp.CSS(".confirm-yes")),
		absent(chromedp.CSS(`#users button[aria-label="Remove `+m[1]+`"]`)))
	if _, err := newKey.ListBuckets(t.Context(), &s3.ListBucketsInput{}); testutil.APICode(err) != "InvalidAccessKeyId" {
		t.Errorf("the removed key's request: %v, want InvalidAccessKeyId", err)
	}

	// Limits: a negative rate is refused next to its field.
	limits := func() int64 {
		l, err := adm.Limits(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return l.ReadBytesPerSec
	}
	do(t, ctx, "a negative limit", clearField("#limit-ReadBytesPerSec"), chromedp.SendKeys(chromedp.ID("limit-ReadBytesPerSec"), "-5"),
		chromedp.Click(chromedp.ID("limits-save")), waitTrue(`document.getElementById('limit-ReadBytesPerSec-error').textContent !== ''`))
	if got := limits(); got != 0 {
		t.Errorf("after a refused limit the read limit is %d, want 0 (unlimited)", got)
	}
	do(t, ctx, "a good limit", clearField("#limit-ReadBytesPerSec"), chromedp.SendKeys(chromedp.ID("limit-ReadBytesPerSec"), "104857600"),
		chromedp.Click(chromedp.ID("limits-save")), toastStarts("Limits saved"))
	if got := limits(); got != 104857600 {
		t.Errorf("after saving the read limit is %d, want 104857600", got)
	}

	// The vacuum interval: the server's refusal shows at the field.
	do(t, ctx, "a bad interval", chromedp.SendKeys(chromedp.ID("vacuum-interval"), "often"),
		chromedp.Click(chromedp.CSS(`#vacuum button.set-interval`)), waitTrue(`document.getElementById('vacuum-interval-error').textContent.includes('duration')`))
	do(t, ctx, "30 minutes", clearField("#vacuum-interval"), chromedp.SendKeys(chromedp.ID("vacuum-interval"), "30m"),
		chromedp.Click(chromedp.CSS(`#vacuum button.set-interval`)), toastStarts("Automatic vacuum set"))
	settings, err := adm.Settings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range settings {
		if s.Name == "vacuum-interval" && s.Value != "30m0s" {
			t.Errorf("vacuum-interval after setting 30m: %q", s.Value)
		}
	}
	// The status refreshes every 5 s; what is typed in the form stays.
	do(t, ctx, "type, then wait for a refresh", clearField("#vacuum-interval"), chromedp.SendKeys(chromedp.ID("vacuum-interval"), "2h"),
		chromedp.Evaluate[chromedp.Void](`document.querySelector('#vacuum table.kv').dataset.old = '1'`),
		waitTrue(`!document.querySelector('#vacuum table.kv').dataset.old`))
	if typed, err := chromedp.Run(ctx, chromedp.Value(chromedp.ID("vacuum-interval"))); err != nil || typed != "2h" {
		t.Errorf("after a refresh the interval field holds %q (%v), want what was typed", typed, err)
	}

	do(t, ctx, "a lifecycle pass", chromedp.Click(chromedp.ID("lifecycle-run")), toastStarts("Lifecycle pass done"))
}
