package store

// ValidName tells whether s may name a project's app, platform, batch, workunit or
// file: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,max-1}$, so that it is safe as a file name and
// in the names made from it. Not a regexp: compiling `{0,250}` costs thousands of
// allocations at start-up in every program that links the package, and the
// toolkit's programs start often.
func ValidName(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case i > 0 && (c == '_' || c == '.' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// MaxFileNameLen is the longest name of a file in a project's directories.
const MaxFileNameLen = 251
