package policy

// Match reports whether s matches pattern, where '*' matches any run of
// bytes (the empty one too) and '?' exactly one byte. It keeps only the
// position of the last '*', so it runs in O(len(pattern)·len(s)) time at
// worst and constant space.
func Match(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]):
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
