package s3auth

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// The aws-chunked body (S3 "sigv4-streaming") reads:
//
//	chunk   := hex-size [";chunk-signature=" sig64] CRLF data CRLF
//	body    := chunk* final [trailer]
//	final   := "0" [";chunk-signature=" sig64] CRLF
//	trailer := (name ":" value LF-or-CRLF)* ["x-amz-trailer-signature:" sig64 CRLF] CRLF
//
// Without a trailer the final chunk is followed by CRLF. Chunk n's signature
// is HMAC(key, "AWS4-HMAC-SHA256-PAYLOAD\n" date "\n" scope "\n" sig(n-1)
// "\n" sha256("") "\n" sha256(data n)), chained from the seed signature of
// the Authorization header; the trailer's is HMAC(key,
// "AWS4-HMAC-SHA256-TRAILER\n" date "\n" scope "\n" sig(final) "\n"
// sha256(trailer lines as "name:value\n")).

const (
	chunkedBufferSize = 32 << 10
	maxChunkLine      = 4 << 10 // a chunk header or trailer line
	maxTrailerLines   = 32
	trailerSigHeader  = "x-amz-trailer-signature"
)

// chunkSigner holds the signature chain of a signed aws-chunked body.
type chunkSigner struct {
	key      []byte
	amzDate  string
	scope    string
	previous string // hex signature of the previous chunk (seed first)
}

// next verifies the signature of a chunk (or the trailer) whose sha256 is
// sum and advances the chain.
func (s *chunkSigner) next(prefix string, sum []byte, signature string) bool {
	var stringToSign strings.Builder
	stringToSign.Grow(256)
	stringToSign.WriteString(prefix)
	stringToSign.WriteByte('\n')
	stringToSign.WriteString(s.amzDate)
	stringToSign.WriteByte('\n')
	stringToSign.WriteString(s.scope)
	stringToSign.WriteByte('\n')
	stringToSign.WriteString(s.previous)
	stringToSign.WriteByte('\n')
	if prefix == "AWS4-HMAC-SHA256-PAYLOAD" {
		stringToSign.WriteString(emptySHA256)
		stringToSign.WriteByte('\n')
	}
	stringToSign.WriteString(hex.EncodeToString(sum))
	computed := hmacSHA256(s.key, stringToSign.String())
	want, err := hex.DecodeString(signature)
	if err != nil || !hmac.Equal(computed, want) {
		return false
	}
	s.previous = hex.EncodeToString(computed)
	return true
}

type chunkState uint8

const (
	stateHeader chunkState = iota
	stateData
)

// chunkedReader decodes (and, with a signer, verifies) an aws-chunked body.
type chunkedReader struct {
	src         *bufio.Reader
	signer      *chunkSigner // nil for unsigned chunks
	withTrailer bool

	state      chunkState
	remaining  int64  // data bytes left in the current chunk
	signature  string // claimed signature of the current chunk
	chunkHash  hash.Hash
	declared   int64 // x-amz-decoded-content-length
	total      int64 // data bytes decoded so far
	trailer    http.Header
	err        error // sticky; io.EOF after a verified end
	sumScratch [sha256.Size]byte
}

// newChunkedBody wraps r.Body in the aws-chunked decoder for payload mode;
// it returns the decoded length (x-amz-decoded-content-length, required).
func newChunkedBody(r *http.Request, payload Payload, signer *chunkSigner) (Body, int64, error) {
	value := r.Header.Get("X-Amz-Decoded-Content-Length")
	if value == "" {
		return nil, 0, errMissingContentLength()
	}
	declared, err := strconv.ParseInt(value, 10, 64)
	if err != nil || declared < 0 {
		return nil, 0, errInvalidArgument("x-amz-decoded-content-length must be a non-negative integer")
	}
	src := r.Body
	if src == nil {
		src = http.NoBody
	}
	return newChunkedReader(src, declared, signer, payload != PayloadStreamingSigned), declared, nil
}

func newChunkedReader(src io.Reader, declared int64, signer *chunkSigner, withTrailer bool) *chunkedReader {
	c := &chunkedReader{
		src:         bufio.NewReaderSize(src, chunkedBufferSize),
		signer:      signer,
		withTrailer: withTrailer,
		declared:    declared,
	}
	if signer != nil {
		c.chunkHash = sha256.New()
	}
	return c
}

// Trailer returns the verified trailing headers after io.EOF.
func (c *chunkedReader) Trailer() http.Header {
	if c.err != io.EOF {
		return nil
	}
	return c.trailer
}

func (c *chunkedReader) Read(p []byte) (int, error) {
	for c.err == nil && c.state == stateHeader {
		c.err = c.readChunkHeader()
	}
	if c.err != nil {
		return 0, c.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if int64(len(p)) > c.remaining {
		p = p[:c.remaining]
	}
	n, err := c.src.Read(p)
	c.remaining -= int64(n)
	c.total += int64(n)
	if c.chunkHash != nil {
		c.chunkHash.Write(p[:n])
	}
	if err != nil && c.remaining > 0 {
		if err == io.EOF {
			err = errIncompleteBody()
		}
		c.err = mapBodyError(err)
		return n, c.err
	}
	if c.remaining == 0 {
		if err := c.endChunk(); err != nil {
			c.err = err
			return n, err
		}
	}
	return n, nil
}

// readLine reads one line ending in LF, without the LF and a CR before it.
func (c *chunkedReader) readLine() (string, error) {
	line, err := c.src.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull || len(line) > maxChunkLine:
		return "", errMalformedChunk("line too long")
	case err == io.EOF && len(line) == 0:
		return "", io.EOF
	case err != nil:
		return "", errIncompleteBody()
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return string(line), nil
}

// readChunkHeader parses "size[;chunk-signature=sig]" and starts the chunk,
// or finishes the body on the final zero-size chunk.
func (c *chunkedReader) readChunkHeader() error {
	line, err := c.readLine()
	if err == io.EOF {
		return errIncompleteBody()
	}
	if err != nil {
		return err
	}
	sizeText, extension, _ := strings.Cut(line, ";")
	size, perr := strconv.ParseUint(strings.TrimSpace(sizeText), 16, 63)
	if perr != nil || sizeText == "" {
		return errMalformedChunk("bad chunk size")
	}
	if int64(size) > c.declared-c.total {
		return errMalformedChunk("chunks exceed x-amz-decoded-content-length")
	}
	if c.signer != nil {
		name, value, _ := strings.Cut(extension, "=")
		if name != "chunk-signature" || !isHex64(value) {
			return errMalformedChunk("missing chunk-signature")
		}
		c.signature = value
		c.chunkHash.Reset()
	}
	if size > 0 {
		c.state, c.remaining = stateData, int64(size)
		return nil
	}
	return c.finish()
}

// endChunk consumes the CRLF after chunk data and verifies the signature.
func (c *chunkedReader) endChunk() error {
	var crlf [2]byte
	if _, err := io.ReadFull(c.src, crlf[:]); err != nil {
		return errIncompleteBody()
	}
	if crlf != [2]byte{'\r', '\n'} {
		return errMalformedChunk("chunk data not followed by CRLF")
	}
	c.state = stateHeader
	if c.signer != nil && !c.signer.next("AWS4-HMAC-SHA256-PAYLOAD", c.chunkHash.Sum(c.sumScratch[:0]), c.signature) {
		return errChunkSignatureMismatch()
	}
	return nil
}

// finish handles the final chunk: its signature, the trailer, the length.
func (c *chunkedReader) finish() error {
	if c.signer != nil {
		if !c.signer.next("AWS4-HMAC-SHA256-PAYLOAD", c.chunkHash.Sum(c.sumScratch[:0]), c.signature) {
			return errChunkSignatureMismatch()
		}
	}
	if c.total != c.declared {
		return errIncompleteBody()
	}
	if c.withTrailer {
		if err := c.readTrailer(); err != nil {
			return err
		}
		return io.EOF
	}
	// The closing CRLF; tolerate its absence at the end of the stream.
	if line, err := c.readLine(); err == nil && line != "" {
		return errMalformedChunk("data after the final chunk")
	} else if err != nil && err != io.EOF {
		return err
	}
	return io.EOF
}

// readTrailer reads the trailing headers up to the empty line and, for a
// signed body, verifies x-amz-trailer-signature.
func (c *chunkedReader) readTrailer() error {
	c.trailer = http.Header{}
	var canonical bytes.Buffer
	signature := ""
	for lines := 0; ; lines++ {
		if lines > maxTrailerLines {
			return errMalformedTrailer()
		}
		line, err := c.readLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Code == "IncompleteBody" {
				return errMalformedTrailer()
			}
			return err
		}
		if line == "" {
			// Signed trailers may separate the headers from the signature
			// with an empty line; the signature line ends the headers.
			if c.signer != nil && signature == "" {
				continue
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.ToLower(strings.TrimSpace(name)), strings.TrimSpace(value)
		if !ok || name == "" {
			return errMalformedTrailer()
		}
		if name == trailerSigHeader {
			signature = value
			continue
		}
		c.trailer.Add(name, value)
		canonical.WriteString(name)
		canonical.WriteByte(':')
		canonical.WriteString(value)
		canonical.WriteByte('\n')
	}
	if c.signer == nil {
		return nil
	}
	if signature == "" || !isHex64(signature) {
		return errMalformedTrailer()
	}
	sum := sha256.Sum256(canonical.Bytes())
	if !c.signer.next("AWS4-HMAC-SHA256-TRAILER", sum[:], signature) {
		return errChunkSignatureMismatch()
	}
	return nil
}
