package testutil

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
)

// S3Client returns an aws-sdk-go-v2 client of endpoint with path-style
// addressing, no retries (tests see every failure) and a 60 s timeout per
// request. An empty accessKey gives an anonymous client: its requests are
// not signed.
func S3Client(endpoint, accessKey, secretKey string) *s3.Client {
	return S3ClientTimeout(endpoint, accessKey, secretKey, 60*time.Second)
}

// S3ClientTimeout is S3Client with another timeout per request.
func S3ClientTimeout(endpoint, accessKey, secretKey string, timeout time.Duration) *s3.Client {
	return S3ClientDial(endpoint, accessKey, secretKey, timeout, nil)
}

// S3ClientDial is S3ClientTimeout with its own dial function (nil: the
// default).
func S3ClientDial(endpoint, accessKey, secretKey string, timeout time.Duration, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *s3.Client {
	hc := awshttp.NewBuildableClient().WithTimeout(timeout)
	if dial != nil {
		hc = hc.WithTransportOptions(func(tr *http.Transport) { tr.DialContext = dial })
	}
	var creds aws.CredentialsProvider = credentials.NewStaticCredentialsProvider(accessKey, secretKey, "")
	if accessKey == "" {
		creds = aws.AnonymousCredentials{} // unsigned requests
	}
	cfg, err := config.LoadDefaultConfig(context.Background(),
		config.WithRegion("us-east-1"),
		config.WithCredentialsProvider(creds),
		config.WithRetryMaxAttempts(1),
		config.WithHTTPClient(hc),
		config.WithLogger(logging.Nop{}))
	if err != nil {
		panic(err) // static configuration: cannot fail
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
}

// APICode returns the S3 error code of err ("" if none).
func APICode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}
