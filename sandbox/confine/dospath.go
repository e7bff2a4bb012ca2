package confine

import "strings"

// dosPath turns the \\?\ form of a path GetFinalPathNameByHandle gives
// into the form the model and the settings use (\\?\C:\x → C:\x,
// \\?\UNC\s\x → \\s\x); false when the result is not an absolute
// Windows path (a volume GUID path, say).
func dosPath(p string) (string, bool) {
	switch {
	case strings.HasPrefix(p, `\\?\UNC\`):
		p = `\\` + p[len(`\\?\UNC\`):]
	case strings.HasPrefix(p, `\\?\`):
		p = p[len(`\\?\`):]
	}
	drive := len(p) >= 3 && p[1] == ':' && p[2] == '\\' && ('a' <= p[0]|0x20 && p[0]|0x20 <= 'z')
	unc := len(p) > 2 && strings.HasPrefix(p, `\\`) && p[2] != '?' && p[2] != '.'
	if !drive && !unc {
		return "", false
	}
	return p, true
}
