package s3auth

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Unsigned aws-chunked bodies as different clients frame them.
func TestUnsignedChunkedFraming(t *testing.T) {
	tests := []struct {
		name     string
		body     string
		declared int64
		want     string
		trailer  string // expected x-amz-checksum-crc32 trailer value
		code     string
	}{
		{"aws sdk framing", "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n", 5, "hello", "NhCmhg==", ""},
		{"minio framing", "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\n\r\n\r\n", 5, "hello", "NhCmhg==", ""},
		{"several chunks", "2\r\nhe\r\n3\r\nllo\r\n0\r\nX-Amz-Checksum-Crc32: NhCmhg==\r\n\r\n", 5, "hello", "NhCmhg==", ""},
		{"trailer at EOF", "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n", 5, "hello", "NhCmhg==", ""},
		{"no trailer", "5\r\nhello\r\n0\r\n\r\n", 5, "hello", "", ""},
		{"empty body", "0\r\n\r\n", 0, "", "", ""},
		{"chunk extension ignored", "5;ext=1\r\nhello\r\n0\r\n\r\n", 5, "hello", "", ""},
		{"short of declared", "5\r\nhello\r\n0\r\n\r\n", 6, "", "", "IncompleteBody"},
		{"beyond declared", "5\r\nhello\r\n0\r\n\r\n", 4, "", "", "IncompleteBody"},
		{"truncated data", "5\r\nhel", 5, "", "", "IncompleteBody"},
		{"no final chunk", "5\r\nhello\r\n", 5, "", "", "IncompleteBody"},
		{"malformed trailer", "5\r\nhello\r\n0\r\nnocolon\r\n\r\n", 5, "", "", "MalformedTrailerError"},
		{"huge size", "ffffffffffffffffff\r\n", 5, "", "", "IncompleteBody"},
		{"overlong line", strings.Repeat("1", 5000) + "\r\n", 5, "", "", "IncompleteBody"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reader := newChunkedReader(strings.NewReader(tt.body), tt.declared, nil, true)
			got, err := io.ReadAll(reader)
			if code := codeOf(err); code != tt.code {
				t.Fatalf("code %q (%v), want %q", code, err, tt.code)
			}
			if tt.code != "" {
				if reader.Trailer() != nil {
					t.Fatal("trailer exposed after a failure")
				}
				return
			}
			if string(got) != tt.want || reader.Trailer().Get("x-amz-checksum-crc32") != tt.trailer {
				t.Fatalf("body %q trailer %v", got, reader.Trailer())
			}
		})
	}
}

// chunkedPayload frames data as signed aws-chunked (minio-go's signer).
func chunkedPayload(b testing.TB, data []byte) ([]byte, *Verifier, func() *Result) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	req := streamingRequest(b, data, nil, at)
	wire := serverView(b, req)
	raw, err := io.ReadAll(wire.Body)
	if err != nil {
		b.Fatal(err)
	}
	v := newVerifier(at)
	return raw, v, func() *Result {
		wire.Body = io.NopCloser(bytes.NewReader(raw))
		result, err := v.Authenticate(wire)
		if err != nil {
			b.Fatal(err)
		}
		return result
	}
}

// BenchmarkChunkedDecoder reports decoded MB/s of aws-chunked bodies.
func BenchmarkChunkedDecoder(b *testing.B) {
	data := bytes.Repeat([]byte("b3 benchmark data"), (4<<20)/17)
	buf := make([]byte, 32<<10)
	b.Run("signed", func(b *testing.B) {
		_, _, authenticate := chunkedPayload(b, data)
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			drain(b, authenticate().Body, buf)
		}
	})
	b.Run("unsigned", func(b *testing.B) {
		var wire bytes.Buffer
		for offset := 0; offset < len(data); offset += 64 << 10 {
			chunk := data[offset:min(offset+64<<10, len(data))]
			wire.WriteString(strconv.FormatInt(int64(len(chunk)), 16) + "\r\n")
			wire.Write(chunk)
			wire.WriteString("\r\n")
		}
		wire.WriteString("0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n")
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			drain(b, newChunkedReader(bytes.NewReader(wire.Bytes()), int64(len(data)), nil, true), buf)
		}
	})
}

func drain(b *testing.B, r io.Reader, buf []byte) {
	for {
		_, err := r.Read(buf)
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
