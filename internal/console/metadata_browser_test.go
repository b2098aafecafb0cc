package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/chromedp/chromedp"

	"github.com/b3-storage/b3/internal/testutil"
)

// objectState is what an edit of metadata in the console must keep: the
// stored headers, user metadata, tags, ACL grants and the legal hold.
type objectState struct {
	headers   map[string]string
	meta      map[string]string
	tags      map[string]string
	grants    []string
	legalHold types.ObjectLockLegalHoldStatus
	retention string // mode and retain-until date
	versionID string
}

func readObjectState(t *testing.T, c *s3.Client, bucket, key string) objectState {
	t.Helper()
	ctx := t.Context()
	head, err := c.HeadObject(ctx, headObject(bucket, key))
	if err != nil {
		t.Fatal(err)
	}
	st := objectState{
		headers: map[string]string{
			"Content-Type":        aws.ToString(head.ContentType),
			"Cache-Control":       aws.ToString(head.CacheControl),
			"Content-Disposition": aws.ToString(head.ContentDisposition),
			"Content-Encoding":    aws.ToString(head.ContentEncoding),
			"Content-Language":    aws.ToString(head.ContentLanguage),
			"Expires":             aws.ToString(head.ExpiresString),
		},
		meta: head.Metadata, tags: map[string]string{}, legalHold: head.ObjectLockLegalHoldStatus, versionID: aws.ToString(head.VersionId),
		retention: string(head.ObjectLockMode) + " " + aws.ToTime(head.ObjectLockRetainUntilDate).UTC().Format(time.RFC3339),
	}
	tags, err := c.GetObjectTagging(ctx, &s3.GetObjectTaggingInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range tags.TagSet {
		st.tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	acl, err := c.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range acl.Grants {
		st.grants = append(st.grants, aws.ToString(g.Grantee.ID)+aws.ToString(g.Grantee.URI)+":"+string(g.Permission))
	}
	return st
}

// testMetadataSave: Details shows the object's own Cache-Control (not the
// console's no-store); Save with no edit changes nothing (no new
// version); an edit of one metadata value keeps every system header,
// the other metadata, the tags, the ACL, the legal hold and the retention.
func testMetadataSave(t *testing.T, ctx context.Context, srv *testutil.Server, consoleURL string, shot func(string)) {
	c := srv.Client(10 * time.Second)
	bucket, key := "locked", "clip.bin"
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket), ObjectLockEnabledForBucket: aws.Bool(true),
		ObjectOwnership: types.ObjectOwnershipBucketOwnerPreferred}); err != nil {
		t.Fatal(err)
	}
	alice, err := testutil.S3Client(srv.Endpoint(), aliceKey, aliceSecret).ListBuckets(t.Context(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	aliceID := aws.ToString(alice.Owner.ID)
	owner, err := c.ListBuckets(t.Context(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("bytes"),
		ContentType: aws.String("video/mp2t"), CacheControl: aws.String("max-age=60"), ContentDisposition: aws.String(`attachment; filename="clip.ts"`),
		ContentEncoding: aws.String("identity"), ContentLanguage: aws.String("de"), Expires: aws.Time(time.Date(2037, 10, 21, 7, 28, 0, 0, time.UTC)),
		Metadata: map[string]string{"note": "first", "camera": "front"}, Tagging: aws.String("keep=yes"),
		GrantRead:                 aws.String(`id="` + aliceID + `"`),
		GrantFullControl:          aws.String(`id="` + aws.ToString(owner.Owner.ID) + `"`),
		ObjectLockLegalHoldStatus: types.ObjectLockLegalHoldStatusOn,
		ObjectLockMode:            types.ObjectLockModeGovernance,
		ObjectLockRetainUntilDate: aws.Time(time.Now().Add(24 * time.Hour).Truncate(time.Second)),
	}); err != nil {
		t.Fatal(err)
	}
	before := readObjectState(t, c, bucket, key)
	if len(before.grants) != 2 || before.legalHold != types.ObjectLockLegalHoldStatusOn || before.tags["keep"] != "yes" || !strings.HasPrefix(before.retention, "GOVERNANCE ") {
		t.Fatalf("object as put: %+v; want two grants, a legal hold, a retention and a tag", before)
	}

	do(t, ctx, "details of a locked object", chromedp.Navigate(consoleURL+"#/b/"+bucket), chromedp.Click(inRow(key, "button.details")),
		present(chromedp.CSS("#save-metadata")))
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#metadata tr[data-header="Cache-Control"] td.key').textContent`))
	if err != nil || shown != "max-age=60" {
		t.Errorf("Details shows Cache-Control %q (%v), want the object's max-age=60", shown, err)
	}
	shot("details")

	do(t, ctx, "save without an edit", chromedp.Click(chromedp.ID("save-metadata")), toastSaid("No change to save"))
	if same := readObjectState(t, c, bucket, key); same.versionID != before.versionID {
		t.Errorf("saving with no edit made version %s, want %s unchanged", same.versionID, before.versionID)
	}

	do(t, ctx, "edit one value",
		chromedp.Evaluate[chromedp.Void](`(() => { const i = [...document.querySelectorAll('#user-metadata tr')].find(tr => tr.querySelector('.mk').value === 'note').querySelector('.mv'); i.value = 'second'; })()`),
		chromedp.Click(chromedp.ID("save-metadata")), toastSaid("Metadata saved"))
	after := readObjectState(t, c, bucket, key)
	if after.versionID == before.versionID {
		t.Fatalf("after the edit the object is still version %s", before.versionID)
	}
	for name, want := range before.headers {
		if after.headers[name] != want {
			t.Errorf("after the edit %s is %q, want %q", name, after.headers[name], want)
		}
	}
	if after.meta["note"] != "second" || after.meta["camera"] != "front" || len(after.meta) != 2 {
		t.Errorf("after the edit the metadata is %v, want note=second camera=front", after.meta)
	}
	if after.tags["keep"] != "yes" || len(after.tags) != 1 {
		t.Errorf("after the edit the tags are %v, want keep=yes", after.tags)
	}
	if strings.Join(after.grants, " ") != strings.Join(before.grants, " ") {
		t.Errorf("after the edit the grants are %v, want %v", after.grants, before.grants)
	}
	if after.legalHold != types.ObjectLockLegalHoldStatusOn || after.retention != before.retention {
		t.Errorf("after the edit the legal hold is %q and the retention %q, want ON and %q", after.legalHold, after.retention, before.retention)
	}
	do(t, ctx, "close", chromedp.Click(chromedp.CSS(".modal button.close")), absent(chromedp.CSS(".modal")))
}

// testModalsFollowRoute: a preview closes when the route changes, and a
// second preview replaces the first instead of stacking on it.
func testModalsFollowRoute(t *testing.T, ctx context.Context, consoleURL string) {
	count := func() int {
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.modal').length`))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	do(t, ctx, "preview twice", chromedp.Navigate(consoleURL+"#/b/media"), present(row("image.png")),
		chromedp.Evaluate[chromedp.Void](`preview('media', 'image.png', 0); preview('media', 'index.m3u8', 0)`),
		present(chromedp.CSS("#preview-video")))
	if n := count(); n != 1 {
		t.Errorf("after two previews %d dialogs are open, want 1", n)
	}
	do(t, ctx, "change the route", chromedp.Evaluate[chromedp.Void](`location.hash = '#/buckets'`), present(chromedp.CSS("#buckets")))
	if n := count(); n != 0 {
		t.Errorf("after the route changed %d dialogs are still open, want none", n)
	}
}

// testNoStrayText: an object page of a tab that never uploaded (so has
// no uploads panel) shows no text of its own between its parts.
func testNoStrayText(t *testing.T, ctx context.Context, consoleURL string) {
	do(t, ctx, "objects without uploads", chromedp.Navigate(consoleURL+"#/b/media"), present(chromedp.CSS("#objects")))
	stray, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](
		`[...document.getElementById('main').childNodes].filter(n => n.nodeType === Node.TEXT_NODE && n.textContent.trim()).map(n => n.textContent)`))
	if err != nil || len(stray) != 0 {
		t.Errorf("text directly in the object page: %q (%v), want none", stray, err)
	}
}
