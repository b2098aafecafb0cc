package mount

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// object is what the mount knows of one object.
type object struct {
	size  int64
	mtime time.Time
	etag  string
}

// backend is the bucket: the S3 calls the file system makes, with keys
// already joined to the mount's prefix by the caller.
type backend struct {
	client *s3.Client
	bucket string
	// direct, when set, sends GetObject and PutObject (see direct.go).
	direct *direct
}

func (b *backend) head(ctx context.Context, key string) (object, error) {
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return object{}, err
	}
	return object{size: aws.ToInt64(out.ContentLength), mtime: aws.ToTime(out.LastModified), etag: aws.ToString(out.ETag)}, nil
}

// listing is one directory level: objects directly in it (by name) and the
// names of its subdirectories.
type listing struct {
	files  map[string]object
	dirs   map[string]bool
	marker bool // the "dir/" marker object exists
}

// list reads a whole directory level with ListObjectsV2 and a delimiter.
func (b *backend) list(ctx context.Context, prefix string) (*listing, error) {
	l := &listing{files: map[string]object{}, dirs: map[string]bool{}}
	in := &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, Delimiter: aws.String("/")}
	p := s3.NewListObjectsV2Paginator(b.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		for _, cp := range page.CommonPrefixes {
			name := strings.TrimSuffix(strings.TrimPrefix(aws.ToString(cp.Prefix), prefix), "/")
			if validName(name) {
				l.dirs[name] = true
			}
		}
		for _, o := range page.Contents {
			name := strings.TrimPrefix(aws.ToString(o.Key), prefix)
			if name == "" {
				l.marker = true
				continue
			}
			if validName(name) {
				l.files[name] = object{size: aws.ToInt64(o.Size), mtime: aws.ToTime(o.LastModified), etag: aws.ToString(o.ETag)}
			}
		}
	}
	// A directory shadows an object of the same name.
	for name := range l.dirs {
		delete(l.files, name)
	}
	return l, nil
}

// validName reports whether an S3 key component can be a file name.
func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// hasPrefix reports whether any key starts with prefix (an explicit or
// implicit directory); with except set, that one key does not count.
func (b *backend) hasPrefix(ctx context.Context, prefix, except string) (bool, error) {
	out, err := b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, MaxKeys: aws.Int32(2)})
	if err != nil {
		return false, err
	}
	for _, o := range out.Contents {
		if aws.ToString(o.Key) != except {
			return true, nil
		}
	}
	return false, nil
}

// getRange reads len(buf) bytes at off into buf, only from the object
// version etag (412 if it changed), and returns how many arrived.
func (b *backend) getRange(ctx context.Context, key, etag string, off int64, buf []byte) (int, error) {
	n, _, err := b.get(ctx, key, etag, off, len(buf), func(n int) []byte { return buf[:n] })
	return n, err
}

// getResponse is a GET answered: the version it reads, the length of its
// body (-1 if unknown) and the body.
type getResponse struct {
	obj    object
	length int64
	body   io.ReadCloser
}

// get reads length bytes at off (fewer at the end of the object), only
// from the version etag (with etag "", whatever version is current), into
// the buffer that into returns for the number of bytes the server sends.
// It returns how many arrived and the version read (its ETag and total
// size). A body that ends before its Content-Length is an error, never a
// short read.
func (b *backend) get(ctx context.Context, key, etag string, off int64, length int, into func(n int) []byte) (int, object, error) {
	send := b.sdkGet
	if b.direct != nil {
		send = b.direct.get
	}
	r, err := send(ctx, key, etag, off, length)
	if err != nil {
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable && off == 0 {
			return 0, object{}, nil // an empty object
		}
		return 0, object{}, err
	}
	defer func() {
		// Nothing is left unless the server ignored the range: drain a
		// little, so that the connection can be used again.
		_, _ = io.CopyN(io.Discard, r.body, 4<<10)
		r.body.Close()
	}()
	want := length
	if r.length >= 0 {
		want = int(min(r.length, int64(length)))
	}
	n, err := io.ReadFull(r.body, into(want))
	if r.length < 0 && err == io.ErrUnexpectedEOF {
		err = nil // no length given: the body ends where the object does
	}
	if err != nil {
		// A failed request, not an errno of the mount (see errnoOf).
		return n, r.obj, &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject",
			Err: fmt.Errorf("body: %d of %d bytes: %w", n, want, err)}
	}
	return n, r.obj, nil
}

func (b *backend) sdkGet(ctx context.Context, key, etag string, off int64, length int) (getResponse, error) {
	in := &s3.GetObjectInput{Bucket: &b.bucket, Key: &key,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(length)-1))}
	if etag != "" {
		in.IfMatch = &etag
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		return getResponse{}, err
	}
	r := getResponse{length: aws.ToInt64(out.ContentLength), body: out.Body,
		obj: object{size: aws.ToInt64(out.ContentLength), mtime: aws.ToTime(out.LastModified), etag: aws.ToString(out.ETag)}}
	if out.ContentLength == nil {
		r.length = -1
	}
	if cr := aws.ToString(out.ContentRange); cr != "" {
		r.obj.size = rangeTotal(cr, r.obj.size)
	}
	return r, nil
}

// rangeTotal is the object size of a Content-Range "bytes first-last/total",
// or def.
func rangeTotal(cr string, def int64) int64 {
	if i := strings.LastIndexByte(cr, '/'); i >= 0 {
		if total, err := strconv.ParseInt(cr[i+1:], 10, 64); err == nil {
			return total
		}
	}
	return def
}

func (b *backend) put(ctx context.Context, key string, body []byte) (string, error) {
	if b.direct != nil {
		return b.direct.put(ctx, key, body)
	}
	out, err := b.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &b.bucket, Key: &key,
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

func (b *backend) createUpload(ctx context.Context, key string) (string, error) {
	out, err := b.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &b.bucket, Key: &key})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.UploadId), nil
}

// uploadPart uploads body as part number of the upload; file, if not nil,
// holds exactly body's bytes (a part buffer of the pool: see bufferPool),
// and the direct request sends them from it.
func (b *backend) uploadPart(ctx context.Context, key, uploadID string, number int32, body []byte, file *os.File) (string, error) {
	if b.direct != nil {
		return b.direct.uploadPart(ctx, key, uploadID, number, body, file)
	}
	out, err := b.client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &b.bucket, Key: &key, UploadId: &uploadID,
		PartNumber: &number, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

func (b *backend) completeUpload(ctx context.Context, key, uploadID string, etags []string) (string, error) {
	parts := make([]types.CompletedPart, len(etags))
	for i, etag := range etags {
		parts[i] = types.CompletedPart{ETag: aws.String(etag), PartNumber: aws.Int32(int32(i + 1))}
	}
	out, err := b.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &b.bucket, Key: &key,
		UploadId: &uploadID, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		return "", err
	}
	return aws.ToString(out.ETag), nil
}

func (b *backend) abortUpload(ctx context.Context, key, uploadID string) error {
	_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: &key, UploadId: &uploadID})
	return err
}

// copyObject copies src to dst, only from the version etag of src.
func (b *backend) copyObject(ctx context.Context, src, dst, etag string) error {
	in := &s3.CopyObjectInput{Bucket: &b.bucket, Key: &dst,
		CopySource: aws.String(url.PathEscape(b.bucket) + "/" + escapeKey(src))}
	if etag != "" {
		in.CopySourceIfMatch = &etag
	}
	_, err := b.client.CopyObject(ctx, in)
	return err
}

// escapeKey URL-encodes a key for x-amz-copy-source, keeping the slashes.
func escapeKey(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return strings.Join(parts, "/")
}

func (b *backend) remove(ctx context.Context, key string) error {
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key})
	return err
}

// check contacts the endpoint once: the bucket must exist and be readable.
func (b *backend) check(ctx context.Context, prefix string) error {
	_, err := b.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix, MaxKeys: aws.Int32(1)})
	return err
}
