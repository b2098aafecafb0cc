package mount

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/b3-storage/b3/internal/bench"
	"github.com/b3-storage/b3/internal/testutil"
)

// BenchmarkUploadPart uploads 8 MiB parts to a real server (another
// process) with the client `b3 mount` builds (bench.NewS3Client: unsigned
// payloads) and reports the CPU the mount's side spends per GiB (this
// process's user+system time: the server's is not in it). Modes: sdk,
// through the SDK (a CRC32 of the body, the body copied through net/http's
// 32 KiB buffer); copy, the plain request from an anonymous buffer
// (CRC64NVME, the same copy); sendfile, the plain request from a
// memory-file buffer of the pool.
//
//	go test -run '^$' -bench BenchmarkUploadPart -benchtime 64x ./internal/mount/
func BenchmarkUploadPart(b *testing.B) {
	srv := testutil.StartServer(b, testutil.ServerOptions{})
	ctx := context.Background()
	accessKey, secretKey := srv.Keys()
	client, err := bench.NewS3Client(ctx, bench.S3Options{Endpoint: srv.Endpoint(), PathStyle: true,
		AccessKey: accessKey, SecretKey: secretKey, RequestTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	bucket := "bench"
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket}); err != nil {
		b.Fatal(err)
	}
	const partSize = 8 << 20
	for _, mode := range []string{"sdk", "copy", "sendfile"} {
		b.Run(mode, func(b *testing.B) {
			be := &backend{client: client, bucket: bucket}
			if mode != "sdk" {
				be.direct = newDirect(client, bucket, false)
			}
			pool := newBufferPool(partSize, 1, mode == "sendfile")
			body := append(pool.get(nil)[:0], pattern(3, partSize)...)
			file := pool.fileOf(body)
			id, err := be.createUpload(ctx, "k")
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(partSize)
			before := cpuTime()
			b.ResetTimer()
			for i := range b.N {
				if _, err := be.uploadPart(ctx, "k", id, int32(i%maxParts+1), body, file); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric((cpuTime()-before).Seconds()/(float64(b.N)*partSize/(1<<30)), "cpu-s/GiB")
			if err := be.abortUpload(ctx, "k", id); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// cpuTime is the user+system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
