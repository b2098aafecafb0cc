package console_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/b3-storage/b3/internal/testutil"
)

// hostileKey must show as text wherever the console shows keys.
const hostileKey = `<img src=x onerror=alert(1)>`

const (
	aliceKey    = "ALICEKEY000000000000"
	aliceSecret = "alice/secret/0000000000000000000000000000"
)

// chromium finds Debian's chromium (scripts/install-test-tools.sh).
func chromium(t *testing.T) string { return testutil.Chromium(t) }

// newBrowser starts headless Chromium and returns its first tab; newTab
// opens another tab in a fresh browser context (its own cookies).
func newBrowser(t *testing.T) (first context.Context, newTab func() context.Context) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests run as root
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		chromedp.WindowSize(1280, 860),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	if err := chromedp.Do(browserCtx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return browserCtx, func() context.Context {
		ctx, cancel := chromedp.NewContext(browserCtx, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		return ctx
	}
}

// trapAlert makes every later page of the tab record a call of alert():
// a hostile key that ran as markup would call it.
func trapAlert(ctx context.Context) error {
	_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
		page.AddScriptToEvaluateOnNewDocumentParams{Source: `window.alert = m => { window.__alerted = String(m); };`})
	return err
}

func login(consoleURL, accessKey, secretKey string) chromedp.Action[chromedp.Void] {
	return chromedp.Steps(
		chromedp.Navigate(consoleURL),
		present(chromedp.CSS("#accessKey")),
		chromedp.SendKeys(chromedp.ID("accessKey"), accessKey),
		chromedp.SendKeys(chromedp.ID("secretKey"), secretKey),
		chromedp.Click(chromedp.ID("login")),
		present(chromedp.CSS("#buckets")),
	)
}

// waitTrue polls a JavaScript expression until it is true.
func waitTrue(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(30*time.Second))(ctx, t)
		return err
	})
}

// present and absent wait, polling in the page, for a selector to match
// an element or none (the page re-renders whole subtrees, which the
// polling sees at once).
func present(sel chromedp.CSS) chromedp.Action[chromedp.Void] {
	return waitTrue(fmt.Sprintf("!!document.querySelector(%s)", jsString(string(sel))))
}

func absent(sel chromedp.CSS) chromedp.Action[chromedp.Void] {
	return waitTrue(fmt.Sprintf("!document.querySelector(%s)", jsString(string(sel))))
}

// toastSaid waits for a toast with exactly text.
func toastSaid(text string) chromedp.Action[chromedp.Void] {
	return waitTrue(`[...document.querySelectorAll('.toast')].some(t => t.textContent === ` + jsString(text) + `)`)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func row(key string) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`tr[data-key=%q]`, key)) }

func inRow(key, sel string) chromedp.CSS { return row(key) + chromedp.CSS(" "+sel) }

// TestConsoleBrowser drives the console in headless Chromium against a
// real b3 server: log in, create a bucket, upload by the file input,
// list, download and compare bytes, preview an image and an HLS stream,
// delete; a hostile key shows as text; another user does not see the
// bucket.
func TestConsoleBrowser(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{Args: []string{"--users", "alice:" + aliceKey + ":" + aliceSecret}})
	consoleURL := "http://" + srv.ConsoleAddr + "/"
	accessKey, secretKey := srv.Keys()

	// Files to upload: random bytes (multipart: more than one 8 MiB part),
	// a PNG, an HLS playlist with its segments, and a hostile name.
	dir := t.TempDir()
	big := make([]byte, 9<<20+12345)
	_, _ = rand.Read(big)
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	files := []string{write("big.bin", big), write("image.png", pngImage(t)), write(hostileKey, []byte("hostile"))}
	for _, name := range []string{"index.m3u8", "seg0.ts", "seg1.ts"} {
		data, err := os.ReadFile(filepath.Join("testdata", "hls", name))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, write(name, data))
	}
	downloads := t.TempDir()

	ctx, newTab := newBrowser(t)
	failOnScriptErrors(t, ctx)
	if err := trapAlert(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads}); err != nil {
		t.Fatal(err)
	}
	shot, checkShots := screenshotter(t, ctx, browserShots)
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		do(t, ctx, step, actions...)
	}
	run("open", chromedp.Navigate(consoleURL), present(chromedp.CSS("#accessKey")))
	shot("login")
	run("log in", login(consoleURL, accessKey, secretKey))
	run("create a bucket",
		chromedp.SendKeys(chromedp.ID("new-bucket"), "media"),
		chromedp.Click(chromedp.ID("create-bucket")),
		present(chromedp.CSS(`tr[data-bucket="media"]`)))
	shot("buckets")
	run("open it", chromedp.Click(chromedp.CSS(`tr[data-bucket="media"] a.bucket-link`)), present(chromedp.CSS("#objects")))
	run("upload by the file input", chromedp.SetUploadFiles(chromedp.ID("file-input"), files))
	for _, key := range []string{"big.bin", "image.png", "index.m3u8", "seg0.ts", "seg1.ts", hostileKey} {
		run("see "+key+" listed", present(row(key)))
	}
	shot("objects")
	run("clear the upload list", chromedp.Click(chromedp.ID("clear-uploads")), waitTrue(`document.getElementById('uploads').style.display === 'none'`))

	// The hostile key is text: the name cell reads it back verbatim, no
	// element was made of it, and alert() never ran.
	name, err := chromedp.Run(ctx, chromedp.Text(inRow(hostileKey, ".object-name")))
	if err != nil {
		t.Fatal(err)
	}
	images, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#objects img, #uploads img').length`))
	if err != nil {
		t.Fatal(err)
	}
	alerted, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__alerted !== undefined`))
	if err != nil {
		t.Fatal(err)
	}
	if name != hostileKey || images != 0 || alerted {
		t.Errorf("hostile key shown as %q with %d img elements, alert called: %v; want the text, none, false", name, images, alerted)
	}

	run("download", chromedp.Click(inRow("big.bin", "a.download")))
	got := waitForFile(t, filepath.Join(downloads, "big.bin"), int64(len(big)))
	if !bytes.Equal(got, big) {
		t.Fatalf("downloaded %d bytes differ from the %d uploaded", len(got), len(big))
	}

	run("preview the image",
		chromedp.Click(inRow("image.png", ".object-name")),
		waitTrue(`(() => { const i = document.getElementById('preview-image'); return !!i && i.complete && i.naturalWidth === 32; })()`))
	shot("preview-image")
	run("close", chromedp.Click(chromedp.CSS(".modal button.close")), absent(chromedp.CSS(".modal")))
	run("play the HLS playlist",
		chromedp.Click(inRow("index.m3u8", ".object-name")),
		waitTrue(`(() => { const v = document.getElementById('preview-video'); return !!v && v.readyState >= 2; })()`))
	shot("preview-hls")
	run("close", chromedp.Click(chromedp.CSS(".modal button.close")), absent(chromedp.CSS(".modal")))

	run("delete",
		chromedp.Click(inRow("seg1.ts", ".delete-object")),
		chromedp.Click(chromedp.CSS(".confirm-yes")),
		absent(row("seg1.ts")))
	if _, err := srv.Client(5*time.Second).HeadObject(context.Background(), headObject("media", "seg1.ts")); err == nil {
		t.Error("seg1.ts still exists after the console deleted it")
	}

	testResume(t, ctx, srv, consoleURL, dir)
	testPagingAndMultiDelete(t, ctx, srv, consoleURL)
	testDetails(t, ctx, srv, consoleURL)
	testMetadataSave(t, ctx, srv, consoleURL, shot)
	testModalsFollowRoute(t, ctx, consoleURL)

	// The other main pages, for the documentation's pictures.
	// A lifecycle rule and a CORS rule, so the picture shows the forms filled in.
	c := srv.Client(10 * time.Second)
	if _, err := c.PutBucketLifecycleConfiguration(t.Context(), &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("media"),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{ID: aws.String("expire-recordings"), Status: types.ExpirationStatusEnabled,
			Filter: &types.LifecycleRuleFilter{Prefix: aws.String("recordings/")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(30)},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(2)}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketCors(t.Context(), &s3.PutBucketCorsInput{Bucket: aws.String("media"), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{AllowedOrigins: []string{"https://player.example.com"}, AllowedMethods: []string{"GET", "HEAD"},
			AllowedHeaders: []string{"Range"}, ExposeHeaders: []string{"ETag", "Content-Length"}, MaxAgeSeconds: aws.Int32(3600)}}}}); err != nil {
		t.Fatal(err)
	}
	run("settings", chromedp.Navigate(consoleURL+"#/settings/media"), present(chromedp.CSS(`#main[data-ready="settings"]`)),
		present(chromedp.CSS("#lifecycle-rules tr")), present(chromedp.CSS(".cors-rule")))
	shot("settings")

	// Public access from the settings page: lift Block Public Access, save
	// the public-read policy template; an unsigned GET then reads an
	// object (it was AccessDenied before).
	anonymous := func() int {
		resp, err := http.Get(srv.Endpoint() + "/media/image.png")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := anonymous(); code != http.StatusForbidden {
		t.Fatalf("anonymous GET of a new bucket's object: %d, want 403", code)
	}
	run("lift Block Public Access", present(chromedp.CSS("#pab-save")),
		chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('input[id^="pab-"]').forEach(b => { b.checked = false })`),
		chromedp.Click(chromedp.ID("pab-save")), toastSaid("Block Public Access saved"))
	run("save the public-read policy",
		chromedp.Click(chromedp.ID("policy-template")),
		chromedp.Click(chromedp.ID("policy-save")), toastSaid("Policy saved"))
	if code := anonymous(); code != http.StatusOK {
		t.Fatalf("anonymous GET after the console made the bucket public: %d, want 200", code)
	}
	run("operations", chromedp.Navigate(consoleURL+"#/ops"), present(chromedp.CSS("#users table")))
	if screenshotDir() != "" {
		// Charts need a few samples (5 s apart) and some traffic.
		run("charts", chromedp.Evaluate[chromedp.Void](`B3.load = setInterval(() => fetch('/s3/media?list-type=2'), 50)`),
			waitTrue(`B3.metricPoints >= 4`), chromedp.Evaluate[chromedp.Void](`clearInterval(B3.load)`))
	}
	shot("operations")

	// Another user sees neither the bucket in the list nor its objects.
	ctx2 := newTab()
	if err := chromedp.Do(ctx2, login(consoleURL, aliceKey, aliceSecret)); err != nil {
		t.Fatal(err)
	}
	listed, err := chromedp.Run(ctx2, chromedp.Text(chromedp.ID("buckets")))
	if err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(ctx2, chromedp.Evaluate[int](`fetch('/s3/media?list-type=2').then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(listed, "media") || status != 403 {
		t.Errorf("second user: bucket list %q, listing media answered %d; want no media and 403", listed, status)
	}

	ctx3 := newTab()
	if err := chromedp.Do(ctx3, login(consoleURL, accessKey, secretKey)); err != nil {
		t.Fatal(err)
	}
	testNoStrayText(t, ctx3, consoleURL)

	// Deleting a bucket that holds objects asks, then empties it.
	run("delete the bucket", chromedp.Navigate(consoleURL+"#/buckets"), present(`tr[data-bucket="media"]`),
		chromedp.Click(chromedp.CSS(`tr[data-bucket="media"] .delete-bucket`)),
		chromedp.Click(chromedp.CSS(".confirm-yes")), absent(`tr[data-bucket="media"]`))
	if _, err := srv.Client(5*time.Second).HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String("media")}); err == nil {
		t.Error("bucket media still exists after the console deleted it")
	}
	checkShots()
}

func headObject(bucket, key string) *s3.HeadObjectInput {
	return &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
}

func pngImage(t *testing.T) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 32, 24))
	for y := range 24 {
		for x := range 32 {
			img.Set(x, y, color.RGBA{uint8(x * 8), uint8(y * 10), 128, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// waitForFile waits until the browser has written the whole download.
func waitForFile(t *testing.T, path string, size int64) []byte {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := os.Stat(path); err == nil && st.Size() == size {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return data
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Dir(path))
			t.Fatalf("download %s did not complete; directory holds %v", path, entries)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// screenshotsEnv names the directory the browser test writes the
// documentation's pictures into (B3_SCREENSHOTS=docs/console, relative
// to the repository's root, or absolute); unset, it writes none.
const screenshotsEnv = "B3_SCREENSHOTS"

// browserShots are the pictures TestConsoleBrowser takes, versionShots
// those of TestConsoleVersions and clusterShots those of
// TestConsoleCluster; screenshots, all of them, are each shown by the
// docs (TestScreenshotsDocumented): docs/console/NAME.png.
var (
	browserShots = []string{"login", "buckets", "objects", "preview-image", "preview-hls", "details", "settings", "operations"}
	versionShots = []string{"versions", "object-versions"}
	clusterShots = []string{"cluster"}
	screenshots  = slices.Concat(browserShots, versionShots, clusterShots)
)

// screenshotTests are the tests that take the screenshots.
const screenshotTests = "TestConsoleBrowser|TestConsoleVersions|TestConsoleCluster"

// screenshotDir is where screenshots go, "" for nowhere.
func screenshotDir() string {
	dir := os.Getenv(screenshotsEnv)
	if dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join("..", "..", dir) // the tests run in internal/console
	}
	return dir
}

// screenshotter saves the screenshots into screenshotDir, toasts of
// earlier steps removed; check, at the end, fails the test if one of
// names, the pictures the test takes, was not taken.
func screenshotter(t *testing.T, ctx context.Context, names []string) (shot func(name string), check func()) {
	dir := screenshotDir()
	taken := map[string]bool{}
	shot = func(name string) {
		t.Helper()
		if !slices.Contains(names, name) {
			t.Fatalf("screenshot %s is not in this test's list", name)
		}
		taken[name] = true
		if dir == "" {
			return
		}
		if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelectorAll('.toast').forEach(t => t.remove())`)); err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check = func() {
		for _, name := range names {
			if !taken[name] {
				t.Errorf("the browser test took no screenshot %s", name)
			}
		}
	}
	return shot, check
}

// do runs one step of the test, bounded in time so that a page that
// never reaches the awaited state fails the test instead of hanging it.
// Each step's duration is logged: a failure shows how long the steps
// before it took.
func do(t *testing.T, ctx context.Context, step string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	start := time.Now()
	err := chromedp.Do(ctx, actions...)
	t.Logf("%s: %v", step, time.Since(start).Round(time.Millisecond))
	if err != nil {
		// What the page showed when the step gave up.
		shown, _ := chromedp.Run(context.WithoutCancel(ctx), chromedp.Evaluate[string](`document.body.innerText.slice(0, 3000)`))
		t.Fatalf("%s: %v\nthe page showed:\n%s", step, err, shown)
	}
}

// blockURLs makes the tab fail the requests whose URL matches one of the
// patterns (URLPattern syntax), as a network error; none: block nothing.
func blockURLs(patterns ...string) chromedp.Action[chromedp.Void] {
	params := network.SetBlockedURLsParams{URLPatterns: []*network.BlockPattern{}}
	for _, p := range patterns {
		params.URLPatterns = append(params.URLPatterns, &network.BlockPattern{URLPattern: p, Block: true})
	}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, network.SetBlockedURLs, params)
		return err
	})
}

// testResume: the browser's first try of part 2 of a multipart upload
// fails (the browser blocks the request: the page sees a network error);
// Resume, once the part may pass, sends the missing parts and the object
// is whole.
//
// Blocking (Network.setBlockedURLs) rather than pausing the request
// (Fetch.requestPaused): the pause event carries the 8 MiB body, about
// 3 s of CPU to encode and decode on an idle machine, which a loaded one
// stretched past the wait for the failure.
func testResume(t *testing.T, ctx context.Context, srv *testutil.Server, consoleURL, dir string) {
	data := make([]byte, 17<<20+777) // three parts of 8 MiB
	_, _ = rand.Read(data)
	path := filepath.Join(dir, "resume.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	resume := chromedp.CSS(`.upload[data-key="resume.bin"] button.resume`)
	do(t, ctx, "upload with a failing part", blockURLs(consoleURL+"s3/media/resume.bin?partNumber=2&*"),
		chromedp.SetUploadFiles(chromedp.ID("file-input"), []string{path}),
		waitTrue(fmt.Sprintf("(b => !!b && b.style.display !== 'none')(document.querySelector(%s))", jsString(string(resume)))))
	do(t, ctx, "resume", blockURLs(), chromedp.Click(resume), present(row("resume.bin")))
	c := srv.Client(30 * time.Second)
	out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("media"), Key: aws.String("resume.bin")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("resumed upload: %d bytes (%v), want the %d uploaded", len(got), err, len(data))
	}
	uploads, err := c.ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: aws.String("media")})
	if err != nil || len(uploads.Uploads) != 0 {
		t.Errorf("after the resumed upload: %d multipart uploads open (%v), want none", len(uploads.Uploads), err)
	}
}

// testPagingAndMultiDelete: 60 keys under a prefix are pages of 50 and
// 10; two of them deleted at once.
func testPagingAndMultiDelete(t *testing.T, ctx context.Context, srv *testutil.Server, consoleURL string) {
	c := srv.Client(10 * time.Second)
	for i := range 60 {
		if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("media"), Key: aws.String(fmt.Sprintf("many/%03d", i)), Body: strings.NewReader("x")}); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#objects tbody tr[data-key]').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	do(t, ctx, "page 1", chromedp.Navigate(consoleURL+"#/b/media?prefix=many%2F&size=50"), present(row("many/049")))
	if n := rows(); n != 50 {
		t.Errorf("page 1: %d rows, want 50", n)
	}
	do(t, ctx, "page 2", chromedp.Click(chromedp.ID("next-page")), present(row("many/059")))
	if n := rows(); n != 10 {
		t.Errorf("page 2: %d rows, want 10", n)
	}
	do(t, ctx, "delete two",
		chromedp.Click(inRow("many/050", "input.pick")), chromedp.Click(inRow("many/051", "input.pick")),
		chromedp.Click(chromedp.ID("delete-selected")), chromedp.Click(chromedp.CSS(".confirm-yes")),
		absent(row("many/050")), absent(row("many/051")))
	out, err := c.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String("media"), Prefix: aws.String("many/05")})
	if err != nil || len(out.Contents) != 8 {
		t.Errorf("after deleting two of many/05x: %d keys (%v), want 8", len(out.Contents), err)
	}
	do(t, ctx, "back to page 1", chromedp.Click(chromedp.CSS("#pager button")), present(row("many/000")))
}

// testDetails: hostile metadata shows as text; a tag saved in the page
// is the object's; a share link opens the object without a session.
func testDetails(t *testing.T, ctx context.Context, srv *testutil.Server, consoleURL string) {
	c := srv.Client(10 * time.Second)
	body := "shared bytes"
	if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String("media"), Key: aws.String("meta.txt"),
		Body: strings.NewReader(body), Metadata: map[string]string{"note": hostileKey}}); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, "details", chromedp.Navigate(consoleURL+"#/b/media"), chromedp.Click(inRow("meta.txt", "button.details")),
		present(chromedp.CSS("#share")))
	value, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#details .mv').value`))
	if err != nil {
		t.Fatal(err)
	}
	images, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#details img').length`))
	if err != nil || value != hostileKey || images != 0 {
		t.Errorf("metadata shown as %q with %d img elements (%v); want the text and none", value, images, err)
	}
	do(t, ctx, "tag", chromedp.Click(chromedp.ID("add-tag")),
		chromedp.SendKeys(chromedp.CSS("#tags tr:last-child .tk"), "camera"),
		chromedp.SendKeys(chromedp.CSS("#tags tr:last-child .tv"), "front door"),
		chromedp.Click(chromedp.ID("save-tags")),
		toastSaid("Tags saved"))
	tags, err := c.GetObjectTagging(t.Context(), &s3.GetObjectTaggingInput{Bucket: aws.String("media"), Key: aws.String("meta.txt")})
	if err != nil || len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Key) != "camera" || aws.ToString(tags.TagSet[0].Value) != "front door" {
		t.Errorf("tags after saving: %+v (%v), want camera=front door", tags, err)
	}
	do(t, ctx, "share", chromedp.Click(chromedp.ID("share")), waitTrue(`document.getElementById('share-url').value.startsWith('http')`))
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('share-url').value`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != body {
		t.Errorf("share link %s: %s %q, want %q", link, resp.Status, got, body)
	}
	do(t, ctx, "close", chromedp.Click(chromedp.CSS(".modal button.close")), absent(chromedp.CSS(".modal")))
}
