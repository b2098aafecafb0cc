package s3api

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/b3-storage/b3/internal/checksum"
)

const s3Namespace = "http://s3.amazonaws.com/doc/2006-03-01/"

// keyText is a key, or a prefix, marker or delimiter of keys, in a
// listing document. encoding/xml writes a character that XML 1.0 does not
// allow in a document (most control characters: a key may hold any of
// them) as U+FFFD, which loses it; S3 writes it as a character reference
// (&#x1;), which a client asking without encoding-type=url reads back
// (Go's encoding/xml does; parsers strict to XML 1.0 refuse it, which is
// why S3 documents encoding-type=url for such keys). Everything else is
// escaped as encoding/xml does.
type keyText string

func (k keyText) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	return e.EncodeElement(struct {
		Text string `xml:",innerxml"`
	}{escapeKeyText(string(k))}, start)
}

// escapeKeyText escapes s as XML character data, writing the characters
// XML 1.0 does not allow as numeric character references.
func escapeKeyText(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r != utf8.RuneError || n != 1) && !xmlAllowed(r) {
			_ = xml.EscapeText(&b, []byte(s[last:i]))
			fmt.Fprintf(&b, "&#x%X;", r)
			last = i + n
		}
		i += n
	}
	_ = xml.EscapeText(&b, []byte(s[last:]))
	return b.String()
}

// xmlAllowed reports whether XML 1.0 allows r as a character (its Char
// production).
func xmlAllowed(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}

// isoTime formats a time as S3 does in XML documents.
func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

type xmlOwner struct {
	ID          string
	DisplayName string
}

// readXML reads a request document (size bounded, Content-MD5 and
// x-amz-checksum-* verified) and decodes it into v. A body that is not
// well-formed, or does not fit v, is MalformedXML; an empty body is
// MalformedXML unless allowEmpty (then v is left as is and false is
// returned).
func readXML(rq *request, v any, allowEmpty bool) (bool, error) {
	data, err := readSmallBody(rq)
	if err != nil {
		return false, err
	}
	if len(data) == 0 {
		if allowEmpty {
			return false, nil
		}
		return false, errMalformedXML
	}
	if err := xml.Unmarshal(data, v); err != nil {
		return false, errMalformedXML
	}
	return true, nil
}

// readSmallBody reads a configuration-sized body whole, verifying its
// declared digests.
func readSmallBody(rq *request) ([]byte, error) {
	exp, err := checksum.ParseHeaders(rq.Header)
	if err != nil {
		return nil, err
	}
	return readSmallBodyExpecting(rq, exp)
}

// readSmallBodyExpecting reads a configuration-sized body whole, verifying
// the digests in exp.
func readSmallBodyExpecting(rq *request, exp checksum.Expected) ([]byte, error) {
	if rq.contentLength > maxXMLBody {
		return nil, errEntityTooLarge.withMessage("The request document exceeds %d bytes", maxXMLBody)
	}
	var src io.Reader = rq.Request.Body
	if rq.body != nil {
		src = rq.body
	}
	cr := checksum.NewReader(src, exp)
	data, err := io.ReadAll(io.LimitReader(cr, maxXMLBody+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxXMLBody {
		return nil, errEntityTooLarge.withMessage("The request document exceeds %d bytes", maxXMLBody)
	}
	if !cr.Done() {
		// The limit cut the reader short of EOF; it cannot have verified.
		return nil, errors.New("request body not verified")
	}
	return data, nil
}

// xmlChecksum renders a checksum as the element S3 names after its
// algorithm (<ChecksumCRC32C>, <ChecksumXXHASH3>, ...); nothing when the
// value is empty.
type xmlChecksum struct {
	alg   checksum.Algorithm
	value string
}

func (c xmlChecksum) MarshalXML(e *xml.Encoder, _ xml.StartElement) error {
	if c.alg == checksum.None || c.value == "" {
		return nil
	}
	return e.EncodeElement(c.value, xml.StartElement{Name: xmlName("Checksum" + c.alg.String())})
}

func xmlName(local string) xml.Name { return xml.Name{Local: local} }
