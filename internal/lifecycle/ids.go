package lifecycle

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
)

// WithRuleIDs returns the configuration document data with an ID
// element, made by newID, at the start of each rule that has none: AWS
// names a rule stored without an ID, and GetBucketLifecycleConfiguration
// then returns that name. Everything else in data is kept byte for byte.
// data is a document Parse accepts; newID must make IDs that are unique
// and need no XML escaping.
func WithRuleIDs(data []byte, newID func() string) ([]byte, error) {
	d := xml.NewDecoder(bytes.NewReader(data))
	var (
		depth   int
		ruleAt  int64 // offset just past the open <Rule> tag
		hasID   bool
		missing []int64 // offsets of rules without an ID
	)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, malformed("%v", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch {
			case depth == 2 && t.Name.Local == "Rule":
				ruleAt, hasID = d.InputOffset(), false
			case depth == 3 && t.Name.Local == "ID":
				hasID = true
			}
		case xml.EndElement:
			if depth == 2 && t.Name.Local == "Rule" && !hasID {
				missing = append(missing, ruleAt)
			}
			depth--
		}
	}
	if len(missing) == 0 {
		return data, nil
	}
	var out bytes.Buffer
	last := int64(0)
	for _, at := range missing {
		out.Write(data[last:at])
		out.WriteString("<ID>" + newID() + "</ID>")
		last = at
	}
	out.Write(data[last:])
	return out.Bytes(), nil
}
