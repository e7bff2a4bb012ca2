package tools

import (
	"path/filepath"
	"strings"
)

// envAllowOS are the variables Windows programs need to start and find
// their files (without SystemRoot, say, a program cannot load its
// libraries or open a socket): the system's directories, the user's
// profile and application data (where npm, pip and cargo keep theirs),
// and the machine's description.
var envAllowOS = []string{"SystemRoot", "windir", "SystemDrive", "ComSpec", "PATHEXT",
	"ProgramFiles", "ProgramFiles(x86)", "ProgramW6432", "CommonProgramFiles", "CommonProgramFiles(x86)",
	"CommonProgramW6432", "ProgramData", "ALLUSERSPROFILE", "PUBLIC",
	"USERPROFILE", "HOMEDRIVE", "HOMEPATH", "USERNAME", "USERDOMAIN", "COMPUTERNAME", "APPDATA", "LOCALAPPDATA",
	"OS", "PROCESSOR_ARCHITECTURE", "PROCESSOR_IDENTIFIER", "PROCESSOR_LEVEL", "PROCESSOR_REVISION", "NUMBER_OF_PROCESSORS"}

// envNameMatch matches a variable's name against a pattern of the
// allowlist; Windows names are case-insensitive (PATH is Path).
func envNameMatch(pattern, name string) bool {
	ok, _ := filepath.Match(strings.ToUpper(pattern), strings.ToUpper(name))
	return ok
}

// cmdExe says commands run through cmd.exe (the box on Windows), not
// /bin/sh: run_command's description names the shell.
const cmdExe = true
