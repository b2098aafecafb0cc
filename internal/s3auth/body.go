package s3auth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
)

// plainBody passes the body through, turning a short body (net/http's
// io.ErrUnexpectedEOF) into IncompleteBody.
type plainBody struct {
	src io.Reader
}

func newPlainBody(src io.Reader) *plainBody {
	if src == nil {
		src = http.NoBody
	}
	return &plainBody{src: src}
}

func (b *plainBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	return n, mapBodyError(err)
}

func (b *plainBody) Trailer() http.Header { return nil }

func mapBodyError(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errIncompleteBody()
	}
	return err
}

// sha256Body checks the body against the hex x-amz-content-sha256 at EOF.
type sha256Body struct {
	src  io.Reader
	hash hash.Hash
	want [sha256.Size]byte
	err  error
}

func newSHA256Body(src io.Reader, hexSum string) *sha256Body {
	b := &sha256Body{src: newPlainBody(src), hash: sha256.New()}
	// The caller validated hexSum with isHex64.
	hex.Decode(b.want[:], []byte(hexSum))
	return b
}

func (b *sha256Body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.src.Read(p)
	b.hash.Write(p[:n])
	if err == io.EOF {
		var got [sha256.Size]byte
		if b.hash.Sum(got[:0]); got != b.want {
			err = errContentSHA256Mismatch()
		}
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *sha256Body) Trailer() http.Header { return nil }

// unverifiedBody is the body of requests without a payload signature
// (anonymous, SigV2, presigned): passed through, or decoded when the client
// sent an aws-chunked body with an unsigned trailer.
func unverifiedBody(r *http.Request) (Body, Payload, int64, error) {
	if r.Header.Get("X-Amz-Content-Sha256") == StreamingUnsignedPayloadTrailer {
		body, length, err := newChunkedBody(r, PayloadStreamingTrailer, nil)
		if err != nil {
			return nil, 0, 0, err
		}
		return body, PayloadStreamingTrailer, length, nil
	}
	return newPlainBody(r.Body), PayloadUnverified, r.ContentLength, nil
}
