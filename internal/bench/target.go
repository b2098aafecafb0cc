package bench

//lint:file-ignore SA1019 feature/s3/manager is the transfer manager applications use today and the one the original benchmark measured; its successor (feature/s3/transfermanager) is not yet a dependency of this module.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"
)

// Target is the object store under test. The S3 implementation is what runs;
// tests use an in-memory one, so that every mode's bookkeeping is tested
// without a server.
type Target interface {
	// Put uploads body under key.
	Put(ctx context.Context, key string, body *Payload) error
	// Get downloads key (of the given size, for the transfer manager's
	// choice) into sink and returns the bytes received.
	Get(ctx context.Context, key string, size int64, sink *Sink) (int64, error)
	// Delete removes keys; missing keys are not an error.
	Delete(ctx context.Context, keys []string) error
}

// S3Options configures the S3 target.
type S3Options struct {
	Endpoint     string // e.g. http://127.0.0.1:9000; empty for AWS
	Region       string
	Bucket       string
	AccessKey    string // empty: the usual AWS_* environment / shared config
	SecretKey    string
	SessionToken string
	PathStyle    bool
	// Objects of at least MultipartThreshold bytes go through the transfer
	// manager (multipart upload, ranged parallel download).
	MultipartThreshold int64
	PartSize           int64
	PartConcurrency    int
	// Retries is the SDK's maximum attempts minus one. The default 0 makes
	// every failure visible in the report instead of hiding it in a retry.
	Retries int
	// MaxConns bounds idle and open connections per host; it must be at
	// least the highest concurrency or the client churns connections.
	MaxConns int
	// ChecksumWhenRequired turns the SDK's default request checksums
	// (CRC32 on every PUT) into checksums only where an API requires them.
	ChecksumWhenRequired bool
	// RequestTimeout bounds one request (0: none).
	RequestTimeout time.Duration
	// SignPayload hashes every request body with SHA-256 for the SigV4
	// signature, which is what the SDK does over plain HTTP. Off, requests
	// carry UNSIGNED-PAYLOAD, as SDKs send over HTTPS: the hash costs the
	// client about 2 ms of CPU per MiB (and the server as much to check),
	// which on a machine shared with the server is taken from the server.
	SignPayload bool
}

// S3Target talks to an S3 endpoint through aws-sdk-go-v2.
type S3Target struct {
	Client     *s3.Client
	bucket     string
	threshold  int64
	uploader   *manager.Uploader
	downloader *manager.Downloader
}

// NewS3Target builds a client. It does not contact the endpoint.
func NewS3Target(ctx context.Context, o S3Options) (*S3Target, error) {
	if o.Bucket == "" {
		return nil, errors.New("s3 target: no bucket")
	}
	if o.PartSize <= 0 {
		o.PartSize = 16 << 20
	}
	if o.PartConcurrency <= 0 {
		o.PartConcurrency = 4
	}
	if o.MultipartThreshold <= 0 {
		o.MultipartThreshold = 64 << 20
	}
	client, err := NewS3Client(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("s3 target: %w", err)
	}
	return &S3Target{
		Client:    client,
		bucket:    o.Bucket,
		threshold: o.MultipartThreshold,
		uploader: manager.NewUploader(client, func(u *manager.Uploader) {
			u.PartSize = o.PartSize
			u.Concurrency = o.PartConcurrency
		}),
		downloader: manager.NewDownloader(client, func(d *manager.Downloader) {
			d.PartSize = o.PartSize
			d.Concurrency = o.PartConcurrency
		}),
	}, nil
}

// NewS3Client builds the SDK client every S3 client of b3 uses (bench,
// mount) from the connection fields of o: endpoint, region, credentials
// (explicit, else AWS_* variables and shared config), addressing, retries,
// checksums, payload signing, timeout and connection pool. It does not
// contact the endpoint.
func NewS3Client(ctx context.Context, o S3Options) (*s3.Client, error) {
	if o.Region == "" {
		o.Region = "us-east-1"
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 256
	}
	httpClient := awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) {
		// The default transport keeps 2 idle connections per host: under
		// 128 concurrent requests it would open and close connections
		// constantly and measure the TCP handshake.
		t.MaxIdleConns = o.MaxConns
		t.MaxIdleConnsPerHost = o.MaxConns
		t.MaxConnsPerHost = 0
		t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	})
	if o.RequestTimeout > 0 {
		httpClient = httpClient.WithTimeout(o.RequestTimeout)
	}
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRegion(o.Region),
		config.WithHTTPClient(httpClient),
		config.WithRetryMaxAttempts(o.Retries + 1),
	}
	if o.AccessKey != "" || o.SecretKey != "" {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(o.AccessKey, o.SecretKey, o.SessionToken)))
	}
	if o.ChecksumWhenRequired {
		loadOpts = append(loadOpts,
			config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
			config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	return s3.NewFromConfig(cfg, func(so *s3.Options) {
		// The SDK logs a debug line for every response without a checksum
		// it could validate; it would garble the progress line. Failures
		// reach the report as errors.
		so.Logger = logging.Nop{}
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
		if !o.SignPayload {
			so.APIOptions = append(so.APIOptions, unsignedPayload)
		}
	}), nil
}

// unsignedPayload signs requests with UNSIGNED-PAYLOAD. Swapping the
// signer's hash middleware is not enough: over plain HTTP the checksum
// middleware, which runs first, computes SHA-256 alongside its CRC32 unless
// the payload hash is already in the context, so set it before every step.
func unsignedPayload(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("b3BenchUnsignedPayload",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (
			middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(v4.SetPayloadHash(ctx, "UNSIGNED-PAYLOAD"), in)
		}), middleware.Before)
}

// EnsureBucket creates the bucket unless it exists and is ours; created
// says whether this call made it. It asks first (HeadBucket): a
// CreateBucket of a bucket its owner has succeeds in us-east-1, and must
// not count as made here.
func (t *S3Target) EnsureBucket(ctx context.Context) (created bool, err error) {
	if _, err := t.Client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(t.bucket)}); err == nil {
		return false, nil
	}
	_, err = t.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(t.bucket)})
	var owned *types.BucketAlreadyOwnedByYou
	var apiErr smithy.APIError
	switch {
	case err == nil:
		return true, nil
	case errors.As(err, &owned):
		return false, nil
	case errors.As(err, &apiErr) && apiErr.ErrorCode() == "BucketAlreadyOwnedByYou":
		return false, nil
	}
	return false, fmt.Errorf("create bucket %s: %w", t.bucket, err)
}

// DeleteBucket deletes the (empty) bucket.
func (t *S3Target) DeleteBucket(ctx context.Context) error {
	if _, err := t.Client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(t.bucket)}); err != nil {
		return fmt.Errorf("delete bucket %s: %w", t.bucket, err)
	}
	return nil
}

// Put uploads body; large bodies go through the transfer manager, which
// reads parts with ReadAt straight from the payload ring (no part buffers).
func (t *S3Target) Put(ctx context.Context, key string, body *Payload) error {
	in := &s3.PutObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(key), Body: body}
	if body.Len() >= t.threshold {
		if _, err := t.uploader.Upload(ctx, in); err != nil {
			return fmt.Errorf("multipart upload %s: %w", key, err)
		}
		return nil
	}
	in.ContentLength = aws.Int64(body.Len())
	if _, err := t.Client.PutObject(ctx, in); err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// Get downloads key into sink. Small objects stream through a pooled copy
// buffer; large ones use the transfer manager's parallel ranged GETs, which
// write into the sink at their offsets.
func (t *S3Target) Get(ctx context.Context, key string, size int64, sink *Sink) (int64, error) {
	in := &s3.GetObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(key)}
	if size >= t.threshold {
		if _, err := t.downloader.Download(ctx, sink, in); err != nil {
			return 0, fmt.Errorf("ranged download %s: %w", key, err)
		}
		return sink.Result(size)
	}
	out, err := t.Client.GetObject(ctx, in)
	if err != nil {
		return 0, fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	if _, err := copyPooled(sink, out.Body); err != nil {
		return 0, fmt.Errorf("get %s: read body: %w", key, err)
	}
	return sink.Result(size)
}

// Delete removes keys in batches of 1000 (the DeleteObjects limit).
func (t *S3Target) Delete(ctx context.Context, keys []string) error {
	for len(keys) > 0 {
		batch := keys[:min(len(keys), 1000)]
		keys = keys[len(batch):]
		objs := make([]types.ObjectIdentifier, len(batch))
		for i, k := range batch {
			objs[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := t.Client.DeleteObjects(ctx, &s3.DeleteObjectsInput{
			Bucket: aws.String(t.bucket),
			Delete: &types.Delete{Objects: objs, Quiet: aws.Bool(true)},
		})
		if err != nil {
			return fmt.Errorf("delete %d objects: %w", len(batch), err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s: %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
	}
	return nil
}

// PutSmall uploads a small body (a playlist) with its Content-Type.
func (t *S3Target) PutSmall(ctx context.Context, key string, body []byte, contentType string) error {
	_, err := t.Client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(key),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String(contentType)})
	if err != nil {
		return fmt.Errorf("put %s: %w", key, err)
	}
	return nil
}

// GetSmall downloads a small object (a playlist) whole.
func (t *S3Target) GetSmall(ctx context.Context, key string) ([]byte, error) {
	out, err := t.Client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(key)})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	body, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("get %s: read body: %w", key, err)
	}
	return body, nil
}

// DeleteOne deletes one object with DeleteObject, as an encoder does.
func (t *S3Target) DeleteOne(ctx context.Context, key string) error {
	if _, err := t.Client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(t.bucket), Key: aws.String(key)}); err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}
