package console_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/css"
	"github.com/chromedp/chromedp"

	"github.com/b3-storage/b3/internal/testutil"
)

// pageProblems lists, in the page as it is now, what makes it hard to
// use: anything wider than the window (the page scrolls sideways, or a
// box cuts off or scrolls its content sideways), a form control without
// a <label> that says something, and a button or link with no name.
// Inputs scroll their own text and .sr-only boxes are 1 px on purpose;
// an ellipsis is a deliberate cut.
const pageProblems = `(() => {
  const out = [], de = document.documentElement;
  const name = n => n.tagName.toLowerCase() + (n.id ? '#' + n.id : '') + (n.className && typeof n.className === 'string' ? '.' + n.className.trim().split(/\s+/).join('.') : '');
  if (de.scrollWidth > de.clientWidth) out.push('the page is ' + de.scrollWidth + ' px wide in a ' + de.clientWidth + ' px window');
  for (const n of document.body.querySelectorAll('*')) {
    if (n.closest('.sr-only') || ['INPUT', 'SELECT', 'TEXTAREA', 'OPTION', 'svg', 'path', 'SCRIPT'].includes(n.tagName)) continue;
    const r = n.getBoundingClientRect();
    if (!r.width) continue;
    const st = getComputedStyle(n);
    if (r.right > de.clientWidth + 0.5 && st.position !== 'fixed') out.push(name(n) + ' ends at ' + Math.round(r.right) + ' px, past the window');
    if (st.overflowX !== 'visible' && st.textOverflow !== 'ellipsis' && n.scrollWidth > n.clientWidth + 1) out.push(name(n) + ' holds ' + n.scrollWidth + ' px in ' + n.clientWidth + ' px');
  }
  for (const c of document.querySelectorAll('input, select, textarea')) {
    if (c.type === 'hidden') continue;
    if (![...(c.labels || [])].some(l => l.textContent.trim())) out.push(name(c) + ' has no label');
  }
  for (const b of document.querySelectorAll('button, a[href]')) {
    if (!(b.textContent.trim() || b.getAttribute('aria-label'))) out.push(name(b) + ' has no name');
  }
  return out.slice(0, 20);
})()`

// checkPage fails the test for every problem pageProblems finds, and for
// text drawn in a font the console did not bring (a system font): the
// fonts Chromium really used for the page's text, as it reports them.
func checkPage(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	problems, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](pageProblems))
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", where, p)
	}
	if err := chromedp.Do(ctx, waitTrue(`document.fonts.status === 'loaded'`)); err != nil {
		t.Fatalf("%s: fonts: %v", where, err)
	}
	ids, err := chromedp.Run(ctx, chromedp.QueryNodeIDs(chromedp.CSS("h1, h2, h3, th, td, button, label, a, p, span, strong, legend, pre"), chromedp.AtLeast(0)))
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if _, err := chromedp.Call(ctx, css.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	system := map[string]bool{}
	used := map[string]bool{}
	for _, id := range ids {
		fonts, err := chromedp.Call(ctx, css.GetPlatformFontsForNode, css.GetPlatformFontsForNodeParams{NodeID: id})
		if err != nil {
			continue // the node went away meanwhile
		}
		for _, f := range fonts.Fonts {
			used[f.FamilyName] = true
			if !f.IsCustomFont {
				system[f.FamilyName] = true
			}
		}
	}
	if len(system) > 0 {
		t.Errorf("%s: text drawn in system fonts %v (fonts used: %v)", where, keys(system), keys(used))
	}
	if !used["Inter Variable"] && !used["Inter"] {
		t.Errorf("%s: fonts used %v, want the console's Inter", where, keys(used))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestConsoleLayout opens the console's pages (login, buckets, objects,
// all versions, settings, operations) and its Create folder, Details and
// Versions dialogs at 1280 px and at 1920 px wide, with long unbroken
// keys, metadata and rules in them, and checks each (checkPage): nothing
// wider than the window, every control labelled, every text in the
// console's own fonts. (TestConsoleCluster checks the Cluster page.)
func TestConsoleLayout(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	consoleURL := "http://" + srv.ConsoleAddr + "/"
	accessKey, secretKey := srv.Keys()
	c := srv.Client(10 * time.Second)
	bucket := "a-bucket-with-a-rather-long-name-to-fill-the-crumbs-and-title"
	longKey := "folder/" + strings.Repeat("UnbrokenNameWithNoPlaceToWrapAt", 8) + "end.txt"
	versionedBucket(t, c, bucket)
	for i, key := range []string{longKey, longKey, "folder/" + hostileKey, "folder/sub/deeper.txt"} {
		if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(fmt.Sprint(i)),
			Metadata: map[string]string{"long-note": strings.Repeat("MetadataValueWithNoSpaces", 12)}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.PutBucketLifecycleConfiguration(t.Context(), &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket),
		LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{{ID: aws.String("expire-old-logs"), Status: types.ExpirationStatusEnabled,
			Filter: &types.LifecycleRuleFilter{Prefix: aws.String("logs/")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(30)},
			AbortIncompleteMultipartUpload: &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(7)}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketCors(t.Context(), &s3.PutBucketCorsInput{Bucket: aws.String(bucket), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{AllowedOrigins: []string{"https://app.example.com", "https://admin.example.com"}, AllowedMethods: []string{"GET", "PUT"},
			AllowedHeaders: []string{"*"}, ExposeHeaders: []string{"ETag"}, MaxAgeSeconds: aws.Int32(3000)}}}}); err != nil {
		t.Fatal(err)
	}

	ctx, _ := newBrowser(t)
	failOnScriptErrors(t, ctx)
	objects := consoleURL + "#/b/" + bucket + "?prefix=folder%2F"
	for _, width := range []int64{1280, 1920} {
		at := func(page string) string { return fmt.Sprintf("%s at %d px", page, width) }
		do(t, ctx, at("login"), chromedp.EmulateViewport(width, 900), chromedp.Navigate(consoleURL), present(chromedp.CSS("#accessKey")))
		checkPage(t, ctx, at("login"))
		do(t, ctx, at("buckets"), login(consoleURL, accessKey, secretKey))
		checkPage(t, ctx, at("buckets"))
		do(t, ctx, at("objects"), chromedp.Navigate(objects), present(inRow(longKey, "button.versions")))
		checkPage(t, ctx, at("objects"))
		do(t, ctx, at("create folder"), chromedp.Click(chromedp.ID("create-folder")), present(chromedp.CSS("#folder-name")))
		checkPage(t, ctx, at("create folder"))
		do(t, ctx, at("details"), chromedp.Click(chromedp.CSS(".modal button.close")), absent(chromedp.CSS(".modal")),
			chromedp.Click(inRow(longKey, "button.details")), present(chromedp.CSS("#share")))
		checkPage(t, ctx, at("details"))
		do(t, ctx, at("versions"), chromedp.Evaluate[chromedp.Void](fmt.Sprintf("versionsDialog(%s, %s)", jsString(bucket), jsString(longKey))),
			present(chromedp.CSS("#versions-table button.restore")))
		checkPage(t, ctx, at("versions dialog"))
		do(t, ctx, at("all versions"), chromedp.Navigate(objects+"&versions=1"), present(inRow(longKey, "button.restore")))
		checkPage(t, ctx, at("all versions"))
		do(t, ctx, at("settings"), chromedp.Navigate(consoleURL+"#/settings/"+bucket), present(chromedp.CSS("#usage")),
			present(chromedp.CSS("#lifecycle-rules tr")), present(chromedp.CSS(".cors-rule")))
		checkPage(t, ctx, at("settings"))
		do(t, ctx, at("operations"), chromedp.Navigate(consoleURL+"#/ops"), present(chromedp.CSS("#users table")), present(chromedp.CSS("#limits-save")))
		checkPage(t, ctx, at("operations"))
		do(t, ctx, at("log out"), chromedp.Click(chromedp.ID("logout")), present(chromedp.CSS("#accessKey")))
	}
}

// fieldError is the error shown next to the control sel ("" for none),
// and whether the control is marked invalid.
func fieldError(t *testing.T, ctx context.Context, sel string) (string, bool) {
	t.Helper()
	type state struct {
		Text    string
		Invalid bool
	}
	st, err := chromedp.Run(ctx, chromedp.Evaluate[state](fmt.Sprintf(`(c => ({ text: document.getElementById(c.id + '-error').textContent,
		invalid: c.getAttribute('aria-invalid') === 'true' }))(document.querySelector(%s))`, jsString(sel))))
	if err != nil {
		t.Fatalf("error of %s: %v", sel, err)
	}
	return st.Text, st.Invalid
}

// clearField empties a text field as a user selecting and deleting its
// text does (chromedp.Clear changes the value attribute, not what the
// field holds).
func clearField(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(c => { c.value = ''; c.dispatchEvent(new Event('input')); })(document.querySelector(%s))`, jsString(sel)))
}

// TestConsoleForms: the forms say what is wrong next to the field that
// is wrong, and change nothing on the server until it is right; they
// are filled and sent from the keyboard. Create a bucket (a bad name, a
// name in use), a folder (no name), a lifecycle rule (0 days), a CORS
// rule (no origin), a policy (not JSON), the ACL (public while Block
// Public Access refuses it), Object Lock and its default retention (0
// days), versioning on and suspended; each result read back with the
// AWS SDK.
func TestConsoleForms(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	consoleURL := "http://" + srv.ConsoleAddr + "/"
	accessKey, secretKey := srv.Keys()
	c := srv.Client(10 * time.Second)
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("taken")}); err != nil {
		t.Fatal(err)
	}
	buckets := func() []string {
		out, err := c.ListBuckets(t.Context(), &s3.ListBucketsInput{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, b := range out.Buckets {
			names = append(names, aws.ToString(b.Name))
		}
		return names
	}
	ctx, _ := newBrowser(t)
	failOnScriptErrors(t, ctx)
	do(t, ctx, "log in", login(consoleURL, accessKey, secretKey))

	// A bad name: the error is under the field, which has the focus.
	do(t, ctx, "a bad bucket name", chromedp.SendKeys(chromedp.ID("new-bucket"), "Bad_Name\r"),
		waitTrue(`document.getElementById('new-bucket-error').textContent !== ''`))
	if msg, invalid := fieldError(t, ctx, "#new-bucket"); !strings.Contains(msg, "lowercase") || !invalid {
		t.Errorf("a bad name shows %q next to the field (invalid: %v), want the rule it breaks", msg, invalid)
	}
	if focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`)); err != nil || focused != "new-bucket" {
		t.Errorf("after the error the focus is on %q (%v), want the field", focused, err)
	}
	// A name in use, next to the field too.
	do(t, ctx, "a name in use", clearField("#new-bucket"), chromedp.SendKeys(chromedp.ID("new-bucket"), "taken\r"),
		waitTrue(`document.getElementById('new-bucket-error').textContent.includes('already')`))
	if got := strings.Join(buckets(), " "); got != "taken" {
		t.Errorf("after two refused names the buckets are %q, want only taken", got)
	}
	do(t, ctx, "a good name, sent with Enter", clearField("#new-bucket"), chromedp.SendKeys(chromedp.ID("new-bucket"), "fresh-bucket\r"),
		present(chromedp.CSS(`tr[data-bucket="fresh-bucket"]`)))
	if got := strings.Join(buckets(), " "); got != "fresh-bucket taken" {
		t.Errorf("buckets %q, want fresh-bucket and taken", got)
	}

	// A folder: a name is needed; made, the page opens it.
	do(t, ctx, "create a folder without a name", chromedp.Click(chromedp.CSS(`tr[data-bucket="fresh-bucket"] a.bucket-link`)),
		present(chromedp.CSS("#create-folder")), chromedp.Click(chromedp.ID("create-folder")), present(chromedp.CSS("#folder-name")),
		chromedp.KeyEvent("\r"), waitTrue(`document.getElementById('folder-name-error').textContent !== ''`))
	do(t, ctx, "name it", chromedp.KeyEvent("photos 2026\r"), waitTrue(`location.hash.includes('prefix=photos+2026%2F')`), absent(chromedp.CSS(".modal")))
	if _, err := c.HeadObject(t.Context(), headObject("fresh-bucket", "photos 2026/")); err != nil {
		t.Errorf("the folder made in the console: %v", err)
	}

	// Lifecycle: 0 days is refused in the page, next to the field.
	do(t, ctx, "settings", chromedp.Navigate(consoleURL+"#/settings/fresh-bucket"), present(chromedp.CSS("#lifecycle-add")))
	do(t, ctx, "a rule of 0 days", chromedp.Click(chromedp.ID("lifecycle-add")),
		chromedp.SendKeys(chromedp.CSS("#lifecycle-rules tr:last-child .lc-prefix"), "logs/"),
		chromedp.SendKeys(chromedp.CSS("#lifecycle-rules tr:last-child .lc-days"), "0"),
		chromedp.Click(chromedp.ID("lifecycle-save")),
		waitTrue(`document.querySelector('#lifecycle-rules .lc-days').getAttribute('aria-invalid') === 'true'`))
	if msg, _ := fieldError(t, ctx, "#lifecycle-rules .lc-days"); !strings.Contains(msg, "days") {
		t.Errorf("0 days shows %q next to the field, want what it must be", msg)
	}
	if _, err := c.GetBucketLifecycleConfiguration(t.Context(), &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("fresh-bucket")}); err == nil {
		t.Error("a refused rule was saved")
	}
	do(t, ctx, "30 days", clearField("#lifecycle-rules .lc-days"), chromedp.SendKeys(chromedp.CSS("#lifecycle-rules .lc-days"), "30"),
		chromedp.Click(chromedp.ID("lifecycle-save")), toastSaid("Lifecycle rules saved"))
	lc, err := c.GetBucketLifecycleConfiguration(t.Context(), &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String("fresh-bucket")})
	if err != nil || len(lc.Rules) != 1 || lc.Rules[0].Filter == nil || aws.ToString(lc.Rules[0].Filter.Prefix) != "logs/" ||
		lc.Rules[0].Expiration == nil || aws.ToInt32(lc.Rules[0].Expiration.Days) != 30 {
		t.Errorf("lifecycle after saving: %+v (%v), want one rule: logs/ after 30 days", lc, err)
	}

	// CORS: a rule needs an origin.
	do(t, ctx, "a CORS rule without an origin", chromedp.Click(chromedp.ID("cors-add")), chromedp.Click(chromedp.ID("cors-save")),
		waitTrue(`document.querySelector('.cors-rule .cors-origins').getAttribute('aria-invalid') === 'true'`))
	if msg, _ := fieldError(t, ctx, ".cors-rule .cors-origins"); !strings.Contains(msg, "origin") {
		t.Errorf("a rule without an origin shows %q next to the field", msg)
	}
	if _, err := c.GetBucketCors(t.Context(), &s3.GetBucketCorsInput{Bucket: aws.String("fresh-bucket")}); err == nil {
		t.Error("a refused CORS rule was saved")
	}
	// The field has the focus: type the origin there.
	do(t, ctx, "type the origin", chromedp.KeyEvent("https://app.example.com"), chromedp.Click(chromedp.ID("cors-save")), toastSaid("CORS rules saved"))
	cors, err := c.GetBucketCors(t.Context(), &s3.GetBucketCorsInput{Bucket: aws.String("fresh-bucket")})
	if err != nil || len(cors.CORSRules) != 1 || strings.Join(cors.CORSRules[0].AllowedOrigins, " ") != "https://app.example.com" ||
		strings.Join(cors.CORSRules[0].AllowedMethods, " ") != "GET" {
		t.Errorf("CORS after saving: %+v (%v), want https://app.example.com, GET", cors, err)
	}

	// The policy and the ACL: the server's refusal shows at the field.
	do(t, ctx, "a policy that is not JSON", chromedp.SendKeys(chromedp.ID("policy"), "{ not json"), chromedp.Click(chromedp.ID("policy-save")),
		waitTrue(`document.getElementById('policy-error').textContent !== ''`))
	if _, err := c.GetBucketPolicy(t.Context(), &s3.GetBucketPolicyInput{Bucket: aws.String("fresh-bucket")}); testutil.APICode(err) != "NoSuchBucketPolicy" {
		t.Errorf("after a refused policy the bucket's policy: %v, want none", err)
	}
	if _, err := c.PutBucketOwnershipControls(t.Context(), &s3.PutBucketOwnershipControlsInput{Bucket: aws.String("fresh-bucket"),
		OwnershipControls: &types.OwnershipControls{Rules: []types.OwnershipControlsRule{{ObjectOwnership: types.ObjectOwnershipBucketOwnerPreferred}}}}); err != nil {
		t.Fatal(err)
	}
	publicRead := func() bool {
		acl, err := c.GetBucketAcl(t.Context(), &s3.GetBucketAclInput{Bucket: aws.String("fresh-bucket")})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range acl.Grants {
			if strings.HasSuffix(aws.ToString(g.Grantee.URI), "/global/AllUsers") {
				return true
			}
		}
		return false
	}
	do(t, ctx, "public-read while Block Public Access is on", chromedp.Navigate(consoleURL+"#/settings/fresh-bucket"), chromedp.Reload(),
		present(chromedp.CSS("#acl")), chromedp.SetValue(chromedp.ID("acl"), "public-read"), chromedp.Click(chromedp.ID("acl-save")),
		waitTrue(`document.getElementById('acl-error').textContent !== ''`))
	if publicRead() {
		t.Error("the ACL refused in the page was made public all the same")
	}
	do(t, ctx, "lift Block new public ACLs, then public-read", chromedp.Click(chromedp.ID("pab-BlockPublicAcls")), chromedp.Click(chromedp.ID("pab-save")),
		toastSaid("Block Public Access saved"), chromedp.Click(chromedp.ID("acl-save")), toastSaid("ACL: public-read"))
	if !publicRead() {
		t.Error("after saving public-read the bucket's ACL has no grant to everyone")
	}

	// Object Lock: turned on for a versioned bucket, then its default
	// retention (0 days refused next to the field).
	versionedBucket(t, c, "lock-later")
	do(t, ctx, "turn on Object Lock", chromedp.Navigate(consoleURL+"#/settings/lock-later"), present(chromedp.CSS("#object-lock-enable:enabled")),
		chromedp.Click(chromedp.ID("object-lock-enable")), chromedp.Click(chromedp.CSS(".confirm-yes")), present(chromedp.CSS("#lock-mode")))
	lockRule := func() (types.ObjectLockRetentionMode, int32) {
		out, err := c.GetObjectLockConfiguration(t.Context(), &s3.GetObjectLockConfigurationInput{Bucket: aws.String("lock-later")})
		if err != nil {
			t.Fatalf("Object Lock of lock-later: %v", err)
		}
		if out.ObjectLockConfiguration.Rule == nil || out.ObjectLockConfiguration.Rule.DefaultRetention == nil {
			return "", 0
		}
		r := out.ObjectLockConfiguration.Rule.DefaultRetention
		return r.Mode, aws.ToInt32(r.Days)
	}
	if mode, days := lockRule(); mode != "" || days != 0 {
		t.Errorf("Object Lock just turned on has default retention %s %d days, want none", mode, days)
	}
	do(t, ctx, "governance for 0 days", chromedp.SetValue(chromedp.ID("lock-mode"), "GOVERNANCE"), clearField("#lock-days"),
		chromedp.SendKeys(chromedp.ID("lock-days"), "0"), chromedp.Click(chromedp.ID("lock-save")),
		waitTrue(`document.getElementById('lock-days-error').textContent !== ''`))
	if mode, _ := lockRule(); mode != "" {
		t.Errorf("a refused default retention was saved: %s", mode)
	}
	do(t, ctx, "governance for 30 days", clearField("#lock-days"), chromedp.SendKeys(chromedp.ID("lock-days"), "30"),
		chromedp.Click(chromedp.ID("lock-save")), toastSaid("Default retention saved"))
	if mode, days := lockRule(); mode != types.ObjectLockRetentionModeGovernance || days != 30 {
		t.Errorf("default retention after saving: %s %d days, want GOVERNANCE 30", mode, days)
	}

	do(t, ctx, "back to fresh-bucket", chromedp.Navigate(consoleURL+"#/settings/fresh-bucket"), present(chromedp.CSS("#versioning-enable")))
	do(t, ctx, "enable versioning", chromedp.Click(chromedp.ID("versioning-enable")), toastSaid("Versioning enabled"))
	v, err := c.GetBucketVersioning(t.Context(), &s3.GetBucketVersioningInput{Bucket: aws.String("fresh-bucket")})
	if err != nil || v.Status != types.BucketVersioningStatusEnabled {
		t.Errorf("versioning after Enable: %q (%v), want Enabled", v.Status, err)
	}
	do(t, ctx, "suspend versioning", present(chromedp.CSS("#versioning-suspend:enabled")), chromedp.Click(chromedp.ID("versioning-suspend")),
		toastSaid("Versioning suspended"))
	v, err = c.GetBucketVersioning(t.Context(), &s3.GetBucketVersioningInput{Bucket: aws.String("fresh-bucket")})
	if err != nil || v.Status != types.BucketVersioningStatusSuspended {
		t.Errorf("versioning after Suspend: %q (%v), want Suspended", v.Status, err)
	}
}
