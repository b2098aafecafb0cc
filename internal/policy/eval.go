package policy

import (
	"net/netip"
	"strconv"
	"strings"
)

// Decision is what a policy says about a request.
type Decision uint8

const (
	// NotApplicable: no statement matched; the ACL decides.
	NotApplicable Decision = iota
	// Allowed: an Allow statement matched and no Deny did.
	Allowed
	// Denied: a Deny statement matched. It wins over everything.
	Denied
)

func (d Decision) String() string {
	switch d {
	case Allowed:
		return "Allow"
	case Denied:
		return "Deny"
	}
	return "NotApplicable"
}

// Principal is the caller. An anonymous caller has every field empty.
type Principal struct {
	AccessKey   string
	CanonicalID string
	Name        string
}

// Anonymous reports whether the request was unsigned.
func (p Principal) Anonymous() bool { return p.AccessKey == "" }

// Request describes one access to evaluate.
type Request struct {
	Principal Principal
	// Action is the S3 action, "s3:GetObject".
	Action string
	// Resource is the ARN acted on: "arn:aws:s3:::bucket" or
	// "arn:aws:s3:::bucket/key".
	Resource string
	// Context holds the condition keys of the request under their
	// NormalizeKey form; a key absent from it is absent from the request.
	Context map[string][]string
	// IgnorePublic skips public Allow statements (Statement.IsPublic), as
	// Block Public Access's RestrictPublicBuckets asks.
	IgnorePublic bool
}

// Evaluate applies the policy to r: Denied if any Deny statement
// matches, else Allowed if any Allow statement does, else NotApplicable.
func (p *Policy) Evaluate(r *Request) Decision {
	d := NotApplicable
	action := strings.ToLower(r.Action)
	for i := range p.Statements {
		st := &p.Statements[i]
		if !p.matches(st, r, action) || r.IgnorePublic && st.IsPublic() {
			continue
		}
		if st.Effect == Deny {
			return Denied
		}
		d = Allowed
	}
	return d
}

// matches reports whether the statement applies to r (action is
// r.Action lower-cased).
func (p *Policy) matches(st *Statement, r *Request, action string) bool {
	return matchPrincipal(st.Principals, r.Principal) != st.NotPrincipal &&
		matchAction(st.Actions, action) != st.NotAction &&
		p.matchResource(st.Resources, r) != st.NotResource &&
		p.matchConditions(st.Conditions, r)
}

func matchPrincipal(values []string, who Principal) bool {
	for _, v := range values {
		if principalMatches(v, who) {
			return true
		}
	}
	return false
}

// principalMatches: "*" is everyone, anonymous included; a user is named
// by access key, canonical id, name, or a user ARN ending in either.
func principalMatches(v string, who Principal) bool {
	if v == "*" {
		return true
	}
	if who.Anonymous() {
		return false
	}
	if v == who.AccessKey || v == who.CanonicalID || (who.Name != "" && v == who.Name) {
		return true
	}
	if rest, ok := strings.CutPrefix(v, "arn:aws:iam::"); ok {
		if _, user, ok := strings.Cut(rest, ":user/"); ok {
			if i := strings.LastIndexByte(user, '/'); i >= 0 {
				user = user[i+1:]
			}
			return user == who.AccessKey || (who.Name != "" && user == who.Name)
		}
	}
	return false
}

func matchAction(patterns []string, action string) bool {
	for _, p := range patterns {
		if Match(p, action) {
			return true
		}
	}
	return false
}

func (p *Policy) matchResource(patterns []string, r *Request) bool {
	for _, pat := range patterns {
		if p.variables {
			var ok bool
			if pat, ok = substitute(pat, r.Context, true); !ok {
				continue
			}
		}
		if Match(pat, r.Resource) {
			return true
		}
	}
	return false
}

// substitute replaces the policy variables ${key} in s with their values
// from ctx; ${*}, ${?} and ${$} stand for the character. In a wildcard
// pattern a value holding '*' or '?' cannot be matched literally, so it
// matches nothing, as does a variable absent from the request.
func substitute(s string, ctx map[string][]string, wildcard bool) (string, bool) {
	if !strings.Contains(s, "${") {
		return s, true
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), true
		}
		b.WriteString(s[:i])
		name := s[i+2 : i+j]
		s = s[i+j+1:]
		switch name {
		case "*", "?", "$":
			b.WriteString(name)
			continue
		}
		vals, ok := ctx[NormalizeKey(name)]
		if !ok || len(vals) != 1 {
			return "", false
		}
		if wildcard && strings.ContainsAny(vals[0], "*?") {
			return "", false
		}
		b.WriteString(vals[0])
	}
}

func (p *Policy) matchConditions(conds []Condition, r *Request) bool {
	for i := range conds {
		if !p.holds(&conds[i], r.Context) {
			return false
		}
	}
	return true
}

// holds evaluates one condition against the request context.
func (p *Policy) holds(c *Condition, ctx map[string][]string) bool {
	got, present := ctx[c.Key]
	if c.kind == kindNull {
		wantAbsent := strings.EqualFold(c.Values[0], "true")
		return wantAbsent == !present
	}
	switch c.Set {
	case "ForAllValues":
		// Every request value must match one policy value; no values
		// at all satisfies it (as IAM does).
		for _, v := range got {
			if !c.matchOne(p, v, ctx) {
				return false
			}
		}
		return true
	case "ForAnyValue":
		if !present {
			return c.IfExists
		}
		for _, v := range got {
			if c.matchOne(p, v, ctx) {
				return true
			}
		}
		return false
	}
	if !present {
		return c.IfExists || c.negated
	}
	for _, v := range got {
		if c.matchOne(p, v, ctx) {
			return true
		}
	}
	return false
}

// matchOne decides one request value: for positive operators, whether it
// matches any policy value; for negated ones, whether it matches none.
func (c *Condition) matchOne(p *Policy, v string, ctx map[string][]string) bool {
	any := false
	for i, want := range c.Values {
		if c.valueMatches(p, i, want, v, ctx) {
			any = true
			break
		}
	}
	return any != c.negated
}

func (c *Condition) valueMatches(p *Policy, i int, want, got string, ctx map[string][]string) bool {
	switch c.kind {
	case kindString, kindStringIgnoreCase, kindStringLike, kindArn:
		if p.variables {
			var ok bool
			if want, ok = substitute(want, ctx, c.kind == kindStringLike || c.kind == kindArn); !ok {
				return false
			}
		}
		switch c.kind {
		case kindString:
			return want == got
		case kindStringIgnoreCase:
			return strings.EqualFold(want, got)
		}
		return Match(want, got)
	case kindBinary:
		return want == got
	case kindBool:
		return strings.EqualFold(want, got)
	case kindIP:
		a, err := netip.ParseAddr(got)
		return err == nil && c.prefixes[i].Contains(a.Unmap())
	case kindNumeric:
		n, err := strconv.ParseFloat(got, 64)
		return err == nil && compare(c.cmp, cmpFloat(n, c.numbers[i]))
	case kindDate:
		t, ok := parseDate(got)
		return ok && compare(c.cmp, t.Compare(c.dates[i]))
	}
	return false
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compare(op comparison, c int) bool {
	switch op {
	case cmpLt:
		return c < 0
	case cmpLe:
		return c <= 0
	case cmpGt:
		return c > 0
	case cmpGe:
		return c >= 0
	}
	return c == 0
}

// Uses reports whether any condition of the policy tests a key beginning
// with prefix (normalised): the caller gathers costly context (an
// object's existing tags) only when it will be read.
func (p *Policy) Uses(prefix string) bool {
	prefix = NormalizeKey(prefix)
	for i := range p.Statements {
		for j := range p.Statements[i].Conditions {
			if strings.HasPrefix(p.Statements[i].Conditions[j].Key, prefix) {
				return true
			}
		}
	}
	return false
}
