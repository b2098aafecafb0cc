package console_test

import (
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/b3-storage/b3/internal/testutil"
)

// TestConsoleVersions drives the versions of a versioned bucket in
// headless Chromium against a real b3 server: the Versions dialog lists
// a key's versions newest first; a version downloads with its own bytes;
// Restore makes an old version current again, with its headers,
// metadata and tags (a new version, nothing lost); Delete removes exactly
// one version; Show versions lists a deleted key's delete marker, and
// Undelete brings the key back; the dialog lists a bounded number. The
// dialog works from the keyboard. Every result is checked on the server
// with the AWS SDK.
func TestConsoleVersions(t *testing.T) {
	srv := testutil.StartServer(t, testutil.ServerOptions{})
	consoleURL := "http://" + srv.ConsoleAddr + "/"
	accessKey, secretKey := srv.Keys()
	c := srv.Client(10 * time.Second)
	bucket := "history"
	versionedBucket(t, c, bucket)
	// Each version has its own content type, metadata and tag, which a
	// restore must bring back with the bytes.
	put := func(key, body string) string {
		out, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body),
			ContentType: aws.String("text/plain; draft=" + body), Metadata: map[string]string{"draft": body}, Tagging: aws.String("draft=" + url.QueryEscape(body))})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.VersionId)
	}
	key := "reports/summary.txt"
	v1, v2, v3 := put(key, "first draft"), put(key, "second draft"), put(key, "final text")
	put("reports/gone.txt", "deleted later")
	if _, err := c.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String("reports/gone.txt")}); err != nil {
		t.Fatal(err)
	}
	versionsOf := func(key string) (ids []string, markers int) {
		out, err := c.ListObjectVersions(t.Context(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), Prefix: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range out.Versions {
			if aws.ToString(v.Key) == key {
				ids = append(ids, aws.ToString(v.VersionId))
			}
		}
		for _, m := range out.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				markers++
			}
		}
		return ids, markers
	}
	current := func(key string) string {
		out, err := c.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return "error: " + err.Error()
		}
		defer out.Body.Close()
		data, _ := io.ReadAll(out.Body)
		return string(data)
	}

	downloads := t.TempDir()
	ctx, _ := newBrowser(t)
	failOnScriptErrors(t, ctx)
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: downloads}); err != nil {
		t.Fatal(err)
	}
	shot, checkShots := screenshotter(t, ctx, versionShots)
	do(t, ctx, "log in", login(consoleURL, accessKey, secretKey))
	do(t, ctx, "open the folder", chromedp.Navigate(consoleURL+"#/b/"+bucket+"?prefix=reports%2F"),
		present(inRow(key, "button.versions")), present(chromedp.CSS("#versioning-notice")))

	// The dialog, opened from the keyboard: focus moves into it.
	do(t, ctx, "open Versions with the keyboard", chromedp.Focus(inRow(key, "button.versions")), chromedp.KeyEvent(kb.Enter),
		present(chromedp.CSS(`#versions-table tr[data-version="`+v1+`"]`)))
	listed, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#versions-table tbody tr')].map(tr => tr.dataset.version)`))
	if err != nil || strings.Join(listed, " ") != strings.Join([]string{v3, v2, v1}, " ") {
		t.Errorf("the dialog lists versions %v (%v), want newest first %v", listed, err, []string{v3, v2, v1})
	}
	currentBadge, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#versions-table tbody tr').textContent`))
	if err != nil || !strings.Contains(currentBadge, "current") {
		t.Errorf("the newest version's row reads %q (%v), want it marked current", currentBadge, err)
	}
	inDialog := `document.querySelector('.modal').contains(document.activeElement)`
	if in, err := chromedp.Run(ctx, chromedp.Evaluate[bool](inDialog)); err != nil || !in {
		t.Errorf("after the dialog opened the focus is outside it (%v)", err)
	}
	// Tab goes round the dialog's controls and never leaves it.
	for i := range 30 {
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		if in, err := chromedp.Run(ctx, chromedp.Evaluate[bool](inDialog)); err != nil || !in {
			t.Fatalf("after %d presses of Tab the focus left the dialog (%v)", i+1, err)
		}
	}
	shot("versions")

	do(t, ctx, "download the first version", chromedp.Click(chromedp.CSS(`#versions-table tr[data-version="`+v1+`"] a.download`)))
	if got := waitForFile(t, filepath.Join(downloads, "summary.txt"), int64(len("first draft"))); string(got) != "first draft" {
		t.Errorf("the first version downloaded as %q, want %q", got, "first draft")
	}

	do(t, ctx, "restore the first version", chromedp.Click(chromedp.CSS(`#versions-table tr[data-version="`+v1+`"] button.restore`)),
		toastSaid("Restored "+key+" from version "+v1), waitTrue(`document.querySelectorAll('#versions-table tbody tr').length === 4`))
	if got := current(key); got != "first draft" {
		t.Errorf("after Restore the object reads %q, want the first version's %q", got, "first draft")
	}
	head, err := c.HeadObject(t.Context(), headObject(bucket, key))
	if err != nil || aws.ToString(head.ContentType) != "text/plain; draft=first draft" || head.Metadata["draft"] != "first draft" {
		t.Errorf("after Restore: content type %q, metadata %v (%v); want the first version's", aws.ToString(head.ContentType), head.Metadata, err)
	}
	tags, err := c.GetObjectTagging(t.Context(), &s3.GetObjectTaggingInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil || len(tags.TagSet) != 1 || aws.ToString(tags.TagSet[0].Value) != "first draft" {
		t.Errorf("after Restore the tags are %+v (%v), want the first version's draft=first draft", tags, err)
	}
	if ids, _ := versionsOf(key); len(ids) != 4 {
		t.Errorf("after Restore the key has versions %v, want 4 (the restored copy and the three before)", ids)
	}

	do(t, ctx, "delete the second version", chromedp.Click(chromedp.CSS(`#versions-table tr[data-version="`+v2+`"] button.delete-version`)),
		chromedp.Click(chromedp.CSS(".confirm-yes")), absent(chromedp.CSS(`#versions-table tr[data-version="`+v2+`"]`)))
	ids, _ := versionsOf(key)
	if len(ids) != 3 || strings.Contains(strings.Join(ids, " "), v2) {
		t.Errorf("after deleting version %s the key has versions %v, want 3 without it", v2, ids)
	}
	if got := current(key); got != "first draft" {
		t.Errorf("deleting an old version changed the current object to %q", got)
	}

	// Escape closes the dialog; the focus is back on the button that opened it.
	do(t, ctx, "close with Escape", chromedp.Focus(chromedp.CSS(".modal button.close")), chromedp.KeyEvent(kb.Escape), absent(chromedp.CSS(".modal")))
	back, err := chromedp.Run(ctx, chromedp.Evaluate[bool](fmt.Sprintf(`document.activeElement === document.querySelector(%s)`, jsString(string(inRow(key, "button.versions"))))))
	if err != nil || !back {
		t.Errorf("after Escape the focus is not on the Versions button that opened the dialog (%v)", err)
	}

	// A deleted key is found under Show versions, its delete marker shown.
	do(t, ctx, "show versions", chromedp.Click(chromedp.ID("versions-toggle")),
		present(inRow("reports/gone.txt", "button.remove-marker")))
	marker, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('tr.marker[data-key="reports/gone.txt"]').textContent`))
	if err != nil || !strings.Contains(marker, "delete marker") {
		t.Errorf("the deleted key's row reads %q (%v), want a delete marker", marker, err)
	}
	shot("object-versions")
	do(t, ctx, "undelete", chromedp.Click(inRow("reports/gone.txt", "button.remove-marker")), toastSaid("Undeleted reports/gone.txt"))
	if got := current("reports/gone.txt"); got != "deleted later" {
		t.Errorf("after Undelete the key reads %q, want %q", got, "deleted later")
	}
	if _, markers := versionsOf("reports/gone.txt"); markers != 0 {
		t.Errorf("after Undelete the key has %d delete markers, want none", markers)
	}

	// The dialog lists a bounded number of versions and says so.
	do(t, ctx, "a key with more versions than the dialog lists", chromedp.Navigate(consoleURL+"#/b/"+bucket+"?prefix=reports%2F"),
		present(inRow(key, "button.versions")), chromedp.Evaluate[chromedp.Void](`B3.versionsShown = 2`),
		chromedp.Click(inRow(key, "button.versions")), present(chromedp.CSS("#versions-table")))
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#versions-table tbody tr').length`))
	if err != nil || rows != 2 {
		t.Errorf("with at most 2 shown the dialog lists %d versions (%v), want 2", rows, err)
	}
	if said, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#versions > p"))); err != nil || !strings.HasPrefix(said, "The newest 2 versions") {
		t.Errorf("the dialog says %q (%v), want that it shows the newest 2", said, err)
	}
	checkShots()
}

// versionedBucket creates bucket with versioning on.
func versionedBucket(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
}
