//go:build unix

package tools

import "path/filepath"

// envAllowOS are the variables a command needs on this system beyond
// envAllow: none on Unix.
var envAllowOS []string

// envNameMatch matches a variable's name against a pattern of the
// allowlist; Unix names are case-sensitive.
func envNameMatch(pattern, name string) bool {
	ok, _ := filepath.Match(pattern, name)
	return ok
}

// cmdExe says commands run through cmd.exe (the box on Windows), not
// /bin/sh: run_command's description names the shell.
const cmdExe = false
