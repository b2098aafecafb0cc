package policy

import "strings"

// IsPublic reports whether the policy grants access to anyone: an Allow
// statement whose principal is "*" (or a NotPrincipal) and that no
// condition pins to fixed callers or networks. It decides
// GetBucketPolicyStatus and the BlockPublicPolicy and
// RestrictPublicBuckets settings.
func (p *Policy) IsPublic() bool {
	for i := range p.Statements {
		if p.Statements[i].IsPublic() {
			return true
		}
	}
	return false
}

// IsPublic reports whether the statement is a public Allow (see
// Policy.IsPublic). As for S3, a statement is not public when a condition
// fixes the caller's address to ranges no wider than /8 (IPv4) or /32
// (IPv6) with IpAddress, or fixes aws:username, aws:userid or
// aws:PrincipalArn to values without wildcards with StringEquals or
// ArnEquals; IfExists and set operators fix nothing.
func (st *Statement) IsPublic() bool {
	if st.Effect != Allow {
		return false
	}
	if !st.NotPrincipal && !containsStar(st.Principals) {
		return false
	}
	for i := range st.Conditions {
		if st.Conditions[i].restrictsCaller() {
			return false
		}
	}
	return true
}

func containsStar(values []string) bool {
	for _, v := range values {
		if v == "*" {
			return true
		}
	}
	return false
}

func (c *Condition) restrictsCaller() bool {
	if c.IfExists || c.Set != "" || c.negated {
		return false
	}
	switch c.Key {
	case "aws:sourceip":
		if c.kind != kindIP {
			return false
		}
		for _, p := range c.prefixes {
			if p.Addr().Is4() && p.Bits() < 8 || !p.Addr().Is4() && p.Bits() < 32 {
				return false
			}
		}
		return true
	case "aws:username", "aws:userid", "aws:principalarn":
		if c.kind != kindString && c.kind != kindArn {
			return false
		}
		for _, v := range c.Values {
			if strings.ContainsAny(v, "*?") || strings.Contains(v, "${") {
				return false
			}
		}
		return true
	}
	return false
}
