package lifecycle

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func doc(rules string) []byte {
	return []byte(`<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` + rules + `</LifecycleConfiguration>`)
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, rules, code string
	}{
		{"valid days", `<Rule><ID>a</ID><Status>Enabled</Status><Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>3</Days></Expiration></Rule>`, ""},
		{"valid legacy prefix", `<Rule><Status>Enabled</Status><Prefix>x</Prefix><Expiration><Days>1</Days></Expiration></Rule>`, ""},
		{"valid and", `<Rule><Status>Enabled</Status><Filter><And><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><Tag><Key>k2</Key><Value>v</Value></Tag></And></Filter><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>`, ""},
		{"valid abort", `<Rule><Status>Disabled</Status><Filter></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`, ""},
		{"not xml", `<Rule>`, "MalformedXML"},
		{"no rules", ``, "MalformedXML"},
		{"bad status", `<Rule><Status>On</Status><Expiration><Days>1</Days></Expiration></Rule>`, "MalformedXML"},
		{"zero days", `<Rule><Status>Enabled</Status><Expiration><Days>0</Days></Expiration></Rule>`, "InvalidArgument"},
		{"negative days", `<Rule><Status>Enabled</Status><Expiration><Days>-1</Days></Expiration></Rule>`, "InvalidArgument"},
		{"days and date", `<Rule><Status>Enabled</Status><Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>`, "MalformedXML"},
		{"date not midnight", `<Rule><Status>Enabled</Status><Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration></Rule>`, "InvalidArgument"},
		{"empty expiration", `<Rule><Status>Enabled</Status><Expiration></Expiration></Rule>`, "MalformedXML"},
		{"no action", `<Rule><Status>Enabled</Status><Filter><Prefix>a</Prefix></Filter></Rule>`, "InvalidRequest"},
		{"prefix and filter", `<Rule><Status>Enabled</Status><Prefix>a</Prefix><Filter><Prefix>a</Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>`, "MalformedXML"},
		{"two filter fields", `<Rule><Status>Enabled</Status><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><Days>1</Days></Expiration></Rule>`, "MalformedXML"},
		{"duplicate id", `<Rule><ID>x</ID><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule><Rule><ID>x</ID><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>`, "InvalidArgument"},
		{"abort with tag", `<Rule><Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`, "InvalidRequest"},
		{"abort zero", `<Rule><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>0</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`, "InvalidArgument"},
		{"transition", `<Rule><Status>Enabled</Status><Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>`, "NotImplemented"},
		{"transition date", `<Rule><Status>Enabled</Status><Transition><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>`, "NotImplemented"},
		{"transition date not midnight", `<Rule><Status>Enabled</Status><Transition><Date>1970-08-23T00:55:27Z</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>`, "InvalidArgument"},
		{"transition date not a date", `<Rule><Status>Enabled</Status><Transition><Date>20220927</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>`, "InvalidArgument"},
		{"transition negative days", `<Rule><Status>Enabled</Status><Transition><Days>-1</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>`, "InvalidArgument"},
		{"transition days and date", `<Rule><Status>Enabled</Status><Transition><Days>1</Days><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>`, "MalformedXML"},
		{"noncurrent", `<Rule><Status>Enabled</Status><Filter></Filter><NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays><NewerNoncurrentVersions>5</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`, ""},
		{"noncurrent without days", `<Rule><Status>Enabled</Status><NoncurrentVersionExpiration><NewerNoncurrentVersions>5</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`, "MalformedXML"},
		{"noncurrent zero days", `<Rule><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>0</NoncurrentDays></NoncurrentVersionExpiration></Rule>`, "InvalidArgument"},
		{"noncurrent too many newer", `<Rule><Status>Enabled</Status><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays><NewerNoncurrentVersions>101</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>`, "InvalidArgument"},
		{"expired delete marker", `<Rule><Status>Enabled</Status><Filter><Prefix>a</Prefix></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`, ""},
		{"expired delete marker not bool", `<Rule><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>yes</ExpiredObjectDeleteMarker></Expiration></Rule>`, "MalformedXML"},
		{"expired delete marker with tag", `<Rule><Status>Enabled</Status><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`, "InvalidRequest"},
		{"long id", `<Rule><ID>` + string(make256()) + `</ID><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>`, "InvalidArgument"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(doc(c.rules))
			var le *Error
			switch {
			case c.code == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case c.code != "" && (!errors.As(err, &le) || le.Code != c.code):
				t.Fatalf("got %v, want code %s", err, c.code)
			}
		})
	}
}

func make256() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = 'a'
	}
	return b
}

func TestExpiry(t *testing.T) {
	conf, err := Parse(doc(`
<Rule><ID>logs</ID><Status>Enabled</Status><Filter><Prefix>logs/</Prefix></Filter><Expiration><Days>3</Days></Expiration></Rule>
<Rule><ID>tmp</ID><Status>Enabled</Status><Filter><And><Prefix>logs/</Prefix><Tag><Key>class</Key><Value>tmp</Value></Tag></And></Filter><Expiration><Days>1</Days></Expiration></Rule>
<Rule><ID>off</ID><Status>Disabled</Status><Filter><Prefix></Prefix></Filter><Expiration><Days>1</Days></Expiration></Rule>
<Rule><ID>big</ID><Status>Enabled</Status><Filter><ObjectSizeGreaterThan>1000</ObjectSizeGreaterThan></Filter><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>
<Rule><ID>mpu</ID><Status>Enabled</Status><Filter><Prefix>up/</Prefix></Filter><AbortIncompleteMultipartUpload><DaysAfterInitiation>2</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	created := time.Date(2014, 1, 15, 10, 30, 0, 0, time.UTC)
	date := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		obj  Object
		day  time.Duration
		want time.Time
	}{
		{"aws example: rounded to midnight", Object{Key: "logs/a", Created: created}, Day, time.Date(2014, 1, 19, 0, 0, 0, 0, time.UTC)},
		{"debug day is exact", Object{Key: "logs/a", Created: created}, time.Second, created.Add(3 * time.Second)},
		{"tag rule is earlier", Object{Key: "logs/a", Tags: map[string]string{"class": "tmp"}, Created: created}, time.Second, created.Add(time.Second)},
		{"tag value must match", Object{Key: "logs/a", Tags: map[string]string{"class": "keep"}, Created: created}, time.Second, created.Add(3 * time.Second)},
		{"no match", Object{Key: "data/a", Created: created}, Day, time.Time{}},
		{"size filter", Object{Key: "data/a", Size: 1001, Created: created}, Day, date},
		{"size filter boundary", Object{Key: "data/a", Size: 1000, Created: created}, Day, time.Time{}},
	}
	for _, c := range cases {
		if got := conf.Expiry(c.obj, c.day); !got.Equal(c.want) {
			t.Errorf("%s: expiry %v, want %v", c.name, got, c.want)
		}
	}
	if got := conf.AbortAt(Upload{Key: "up/x", Initiated: created}, time.Second); !got.Equal(created.Add(2 * time.Second)) {
		t.Errorf("abort at %v", got)
	}
	if got := conf.AbortAt(Upload{Key: "logs/x", Initiated: created}, time.Second); !got.IsZero() {
		t.Errorf("abort of non-matching upload at %v", got)
	}
	var none *Configuration
	if !none.Expiry(Object{Key: "a"}, Day).IsZero() || none.HasActions() {
		t.Error("nil configuration acts")
	}
}

// Noncurrent versions expire NoncurrentDays after they became noncurrent,
// past the NewerNoncurrentVersions newest; ExpiredObjectDeleteMarker
// follows the rule's prefix.
func TestNoncurrentExpiry(t *testing.T) {
	conf, err := Parse(doc(`
<Rule><ID>keep2</ID><Status>Enabled</Status><Filter><Prefix>cam/</Prefix></Filter><NoncurrentVersionExpiration><NoncurrentDays>3</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>
<Rule><ID>all</ID><Status>Enabled</Status><Filter><Prefix>tmp/</Prefix></Filter><NoncurrentVersionExpiration><NoncurrentDays>1</NoncurrentDays></NoncurrentVersionExpiration><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>`))
	if err != nil {
		t.Fatal(err)
	}
	since := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		key   string
		newer int
		want  time.Time
	}{
		{"kept among the 2 newest", "cam/a", 1, time.Time{}},
		{"third newest", "cam/a", 2, time.Date(2024, 5, 5, 0, 0, 0, 0, time.UTC)},
		{"no newer limit", "tmp/a", 0, time.Date(2024, 5, 3, 0, 0, 0, 0, time.UTC)},
		{"no rule", "other", 9, time.Time{}},
	}
	for _, c := range cases {
		if got := conf.NoncurrentExpiry(Object{Key: c.key}, since, c.newer, Day); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if !conf.ExpiresDeleteMarker("tmp/x") || conf.ExpiresDeleteMarker("cam/x") {
		t.Error("ExpiredObjectDeleteMarker does not follow the rule's prefix")
	}
	if !conf.HasVersionActions() || !conf.HasActions() {
		t.Error("version actions not reported")
	}
}

// TestWithRuleIDs: rules without an ID get one at their start, in order;
// everything else, rules with an ID included, is kept byte for byte.
func TestWithRuleIDs(t *testing.T) {
	expire := `<Status>Enabled</Status><Expiration><Days>1</Days></Expiration>`
	for _, tc := range []struct{ name, rules, want string }{
		{"all named", `<Rule><ID>a</ID>` + expire + `</Rule>`, `<Rule><ID>a</ID>` + expire + `</Rule>`},
		{"one unnamed", `<Rule><ID>a</ID>` + expire + `</Rule><Rule>` + expire + `</Rule>`,
			`<Rule><ID>a</ID>` + expire + `</Rule><Rule><ID>id1</ID>` + expire + `</Rule>`},
		{"two unnamed, spaced", "<Rule>\n " + expire + "</Rule>\n<Rule>" + expire + "<Filter><ID>x</ID></Filter></Rule>",
			"<Rule><ID>id1</ID>\n " + expire + "</Rule>\n<Rule><ID>id2</ID>" + expire + "<Filter><ID>x</ID></Filter></Rule>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			got, err := WithRuleIDs(doc(tc.rules), func() string { n++; return fmt.Sprintf("id%d", n) })
			if err != nil || string(got) != string(doc(tc.want)) {
				t.Fatalf("got %s, %v\nwant %s", got, err, doc(tc.want))
			}
		})
	}
}
