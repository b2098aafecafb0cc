package lifecycle

import (
	"encoding/xml"
	"fmt"
	"strings"
	"time"
)

// MaxRules is the most rules a configuration may hold (as AWS).
const MaxRules = 1000

// Error is a validation failure, carrying the S3 error code to return.
type Error struct {
	Code    string // MalformedXML, InvalidArgument, InvalidRequest or NotImplemented
	Message string
}

func (e *Error) Error() string { return "lifecycle: " + e.Code + ": " + e.Message }

func malformed(format string, args ...any) error {
	return &Error{Code: "MalformedXML", Message: fmt.Sprintf(format, args...)}
}

func invalidArgument(format string, args ...any) error {
	return &Error{Code: "InvalidArgument", Message: fmt.Sprintf(format, args...)}
}

func invalidRequest(format string, args ...any) error {
	return &Error{Code: "InvalidRequest", Message: fmt.Sprintf(format, args...)}
}

// Configuration is a parsed, valid lifecycle configuration.
type Configuration struct {
	Rules []Rule
}

// Rule is one validated rule. Disabled rules are kept (GetBucketLifecycle
// returns them) but never match.
type Rule struct {
	ID      string
	Enabled bool
	Filter  Filter
	// ExpireDays > 0 or ExpireDate non-zero (never both) expire objects.
	ExpireDays int
	ExpireDate time.Time
	// AbortDays > 0 aborts multipart uploads that many days after
	// initiation.
	AbortDays int
	// NoncurrentDays > 0 removes a noncurrent version that many days
	// after it became noncurrent, keeping the NewerNoncurrent newest
	// noncurrent versions whatever their age.
	NoncurrentDays  int
	NewerNoncurrent int
	// ExpiredObjectDeleteMarker removes a delete marker that is the only
	// version left of its key.
	ExpiredObjectDeleteMarker bool
}

// Filter selects objects. Zero fields do not constrain.
type Filter struct {
	Prefix      string
	Tags        map[string]string // every tag must be present with the value
	SizeGreater int64             // object size > SizeGreater (0: any)
	SizeLess    int64             // object size < SizeLess (0: any)
}

// The XML document, as AWS defines it.
type xmlConfig struct {
	XMLName xml.Name  `xml:"LifecycleConfiguration"`
	Rules   []xmlRule `xml:"Rule"`
}

type xmlRule struct {
	ID         *string
	Status     string
	Prefix     *string // legacy, outside Filter
	Filter     *xmlFilter
	Expiration *struct {
		Days                      *string
		Date                      *string
		ExpiredObjectDeleteMarker *string
	}
	AbortIncompleteMultipartUpload *struct {
		DaysAfterInitiation *string
	}
	Transition                  []struct{ Days, Date *string }
	NoncurrentVersionExpiration *struct {
		NoncurrentDays          *string
		NewerNoncurrentVersions *string
	}
	NoncurrentVersionTransition []struct{ NoncurrentDays, StorageClass string }
}

type xmlTag struct{ Key, Value string }

type xmlFilter struct {
	Prefix                *string
	Tag                   *xmlTag
	ObjectSizeGreaterThan *string
	ObjectSizeLessThan    *string
	And                   *struct {
		Prefix                *string
		Tags                  []xmlTag `xml:"Tag"`
		ObjectSizeGreaterThan *string
		ObjectSizeLessThan    *string
	}
}

// Parse validates a lifecycle configuration document. Its errors are
// *Error values carrying the S3 error code AWS returns for the same fault.
func Parse(data []byte) (*Configuration, error) {
	var doc xmlConfig
	if err := xml.Unmarshal(data, &doc); err != nil {
		return nil, malformed("%v", err)
	}
	if len(doc.Rules) == 0 {
		return nil, malformed("a lifecycle configuration needs at least one rule")
	}
	if len(doc.Rules) > MaxRules {
		return nil, invalidRequest("a lifecycle configuration holds at most %d rules", MaxRules)
	}
	conf := &Configuration{Rules: make([]Rule, 0, len(doc.Rules))}
	ids := map[string]bool{}
	for i, xr := range doc.Rules {
		r, err := parseRule(xr)
		if err != nil {
			return nil, err
		}
		if r.ID == "" {
			r.ID = fmt.Sprintf("rule-%d", i+1)
		}
		if ids[r.ID] {
			return nil, invalidArgument("rule ID %q is not unique", r.ID)
		}
		ids[r.ID] = true
		conf.Rules = append(conf.Rules, r)
	}
	return conf, nil
}

func parseRule(xr xmlRule) (Rule, error) {
	var r Rule
	if xr.ID != nil {
		r.ID = *xr.ID
		if len(r.ID) > 255 {
			return r, invalidArgument("ID length should not exceed allowed limit of 255")
		}
	}
	switch xr.Status {
	case "Enabled":
		r.Enabled = true
	case "Disabled":
	default:
		return r, malformed("rule %q: Status must be Enabled or Disabled", r.ID)
	}
	if xr.Prefix != nil && xr.Filter != nil {
		return r, malformed("rule %q: Prefix and Filter are exclusive", r.ID)
	}
	if xr.Prefix != nil {
		r.Filter.Prefix = *xr.Prefix
	}
	if xr.Filter != nil {
		f, err := parseFilter(*xr.Filter)
		if err != nil {
			return r, err
		}
		r.Filter = f
	}
	if r.Filter.SizeGreater > 0 && r.Filter.SizeLess > 0 && r.Filter.SizeLess <= r.Filter.SizeGreater {
		return r, invalidArgument("ObjectSizeLessThan must be greater than ObjectSizeGreaterThan")
	}
	actions := 0
	if e := xr.Expiration; e != nil {
		actions++
		switch {
		case e.Days != nil && e.Date != nil:
			return r, malformed("rule %q: Expiration takes Days or Date, not both", r.ID)
		case e.Days != nil:
			n, err := positive(*e.Days)
			if err != nil {
				return r, invalidArgument("'Days' for Expiration action must be a positive integer")
			}
			r.ExpireDays = n
		case e.Date != nil:
			t, err := parseDate(*e.Date)
			if err != nil {
				return r, err
			}
			r.ExpireDate = t
		case e.ExpiredObjectDeleteMarker != nil:
			switch strings.TrimSpace(*e.ExpiredObjectDeleteMarker) {
			case "true":
				r.ExpiredObjectDeleteMarker = true
			case "false":
			default:
				return r, malformed("rule %q: ExpiredObjectDeleteMarker must be true or false", r.ID)
			}
			if len(r.Filter.Tags) > 0 {
				return r, invalidRequest("ExpiredObjectDeleteMarker cannot be specified with Tags")
			}
		default:
			return r, malformed("rule %q: Expiration needs Days, Date or ExpiredObjectDeleteMarker", r.ID)
		}
	}
	if a := xr.AbortIncompleteMultipartUpload; a != nil {
		actions++
		if a.DaysAfterInitiation == nil {
			return r, malformed("rule %q: AbortIncompleteMultipartUpload needs DaysAfterInitiation", r.ID)
		}
		n, err := positive(*a.DaysAfterInitiation)
		if err != nil {
			return r, invalidArgument("'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer")
		}
		if len(r.Filter.Tags) > 0 {
			return r, invalidRequest("AbortIncompleteMultipartUpload cannot be specified with Tags")
		}
		r.AbortDays = n
	}
	// A transition is checked as AWS checks it, so that a faulty one is
	// the client's 400, before the 501 of one b3 cannot carry out.
	for _, tr := range xr.Transition {
		switch {
		case tr.Days != nil && tr.Date != nil:
			return r, malformed("rule %q: Transition takes Days or Date, not both", r.ID)
		case tr.Date != nil:
			if _, err := parseDate(*tr.Date); err != nil {
				return r, err
			}
		case tr.Days != nil:
			if _, err := nonNegative(*tr.Days); err != nil {
				return r, invalidArgument("'Days' for Transition action must be a non-negative integer")
			}
		default:
			return r, malformed("rule %q: Transition needs Days or Date", r.ID)
		}
	}
	if len(xr.Transition) > 0 || len(xr.NoncurrentVersionTransition) > 0 {
		return r, &Error{Code: "NotImplemented", Message: "b3 has one storage class: Transition is not supported"}
	}
	if nv := xr.NoncurrentVersionExpiration; nv != nil {
		actions++
		if nv.NoncurrentDays == nil {
			return r, malformed("rule %q: NoncurrentVersionExpiration needs NoncurrentDays", r.ID)
		}
		n, err := positive(*nv.NoncurrentDays)
		if err != nil {
			return r, invalidArgument("'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer")
		}
		r.NoncurrentDays = n
		if nv.NewerNoncurrentVersions != nil {
			k, err := positive(*nv.NewerNoncurrentVersions)
			if err != nil || k > 100 {
				return r, invalidArgument("'NewerNoncurrentVersions' for NoncurrentVersionExpiration action must be a positive integer up to 100")
			}
			r.NewerNoncurrent = k
		}
	}
	if actions == 0 {
		return r, invalidRequest("At least one action needs to be specified in a rule")
	}
	return r, nil
}

func parseFilter(xf xmlFilter) (Filter, error) {
	var f Filter
	set := 0
	if xf.Prefix != nil {
		set++
		f.Prefix = *xf.Prefix
	}
	if xf.Tag != nil {
		set++
		if err := addTag(&f, *xf.Tag); err != nil {
			return f, err
		}
	}
	var err error
	if xf.ObjectSizeGreaterThan != nil {
		set++
		if f.SizeGreater, err = nonNegative(*xf.ObjectSizeGreaterThan); err != nil {
			return f, invalidArgument("ObjectSizeGreaterThan must be a non-negative integer")
		}
	}
	if xf.ObjectSizeLessThan != nil {
		set++
		if f.SizeLess, err = nonNegative(*xf.ObjectSizeLessThan); err != nil || f.SizeLess == 0 {
			return f, invalidArgument("ObjectSizeLessThan must be a positive integer")
		}
	}
	if a := xf.And; a != nil {
		set++
		if a.Prefix != nil {
			f.Prefix = *a.Prefix
		}
		for _, t := range a.Tags {
			if err := addTag(&f, t); err != nil {
				return f, err
			}
		}
		if a.ObjectSizeGreaterThan != nil {
			if f.SizeGreater, err = nonNegative(*a.ObjectSizeGreaterThan); err != nil {
				return f, invalidArgument("ObjectSizeGreaterThan must be a non-negative integer")
			}
		}
		if a.ObjectSizeLessThan != nil {
			if f.SizeLess, err = nonNegative(*a.ObjectSizeLessThan); err != nil || f.SizeLess == 0 {
				return f, invalidArgument("ObjectSizeLessThan must be a positive integer")
			}
		}
	}
	if set > 1 {
		return f, malformed("Filter holds exactly one of Prefix, Tag, ObjectSize* or And")
	}
	return f, nil
}

func addTag(f *Filter, t xmlTag) error {
	if t.Key == "" || len(t.Key) > 128 || len(t.Value) > 256 {
		return &Error{Code: "InvalidTag", Message: "The tag provided was not a valid tag."}
	}
	if f.Tags == nil {
		f.Tags = map[string]string{}
	}
	if _, dup := f.Tags[t.Key]; dup {
		return invalidArgument("Duplicate Tag Keys are not allowed")
	}
	f.Tags[t.Key] = t.Value
	return nil
}

// parseDate reads a rule's Date: ISO 8601, a day or an instant, which
// must be midnight UTC.
func parseDate(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(s))
	if err != nil {
		if t, err = time.Parse("2006-01-02", strings.TrimSpace(s)); err != nil {
			return t, invalidArgument("'Date' must be in ISO 8601 format")
		}
	}
	t = t.UTC()
	if !t.Equal(t.Truncate(24 * time.Hour)) {
		return t, invalidArgument("'Date' must be at midnight GMT")
	}
	return t, nil
}

func positive(s string) (int, error) {
	var n int
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d", &n); err != nil || n <= 0 || n > 1<<20 {
		return 0, fmt.Errorf("not a positive integer: %q", s)
	}
	return n, nil
}

func nonNegative(s string) (int64, error) {
	var n int64
	if _, err := fmt.Sscanf(strings.TrimSpace(s), "%d", &n); err != nil || n < 0 {
		return 0, fmt.Errorf("not a non-negative integer: %q", s)
	}
	return n, nil
}
