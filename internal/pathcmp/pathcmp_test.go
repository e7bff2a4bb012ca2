package pathcmp

import "testing"

// TestInside compares both systems' paths, on whichever system the test
// runs: every spelling Windows reads as a path (a hidden one, say) must
// match it; on Unix only the bytes themselves do.
func TestInside(t *testing.T) {
	tests := []struct {
		p, dir string
		sep    byte
		fold   bool
		want   bool
	}{
		{"/home/u/.ssh", "/home/u/.ssh", '/', false, true},
		{"/home/u/.ssh/id_ed25519", "/home/u/.ssh", '/', false, true},
		{"/home/u/.sshx", "/home/u/.ssh", '/', false, false},
		{"/home/u/.SSH/id", "/home/u/.ssh", '/', false, false}, // another name on Unix
		{"/home/u/.ssh./id", "/home/u/.ssh", '/', false, false},
		{"/anything", "/", '/', false, true},
		{"/home", "/home/u", '/', false, false},

		{`C:\Users\u\.ssh`, `C:\Users\u\.ssh`, '\\', true, true},
		{`C:\Users\u\.ssh\id_ed25519`, `C:\Users\u\.ssh`, '\\', true, true},
		{`c:\users\U\.SSH\id_ed25519`, `C:\Users\u\.ssh`, '\\', true, true},
		{`C:\Users\u\.ssh.\id`, `C:\Users\u\.ssh`, '\\', true, true},
		{`C:\Users\u\.ssh . .\id`, `C:\Users\u\.ssh`, '\\', true, true},
		{`C:\Users\u\AppData\Roaming\bridle\settings.json.`, `C:\Users\u\AppData\Roaming\bridle\settings.json`, '\\', true, true},
		{`C:\Users\u\AppData\Roaming\bridle\SETTINGS.JSON `, `C:\Users\u\AppData\Roaming\bridle\settings.json`, '\\', true, true},
		{`C:\Users\u\.sshx`, `C:\Users\u\.ssh`, '\\', true, false},
		{`C:\Users\u\x.ssh`, `C:\Users\u\.ssh`, '\\', true, false},
		{`D:\Users\u\.ssh`, `C:\Users\u\.ssh`, '\\', true, false},
		{`C:\anything\at\all`, `C:\`, '\\', true, true},
		{`c:\anything`, `C:\`, '\\', true, true},
		{`D:\anything`, `C:\`, '\\', true, false},
		{`\\server\share\secret\x`, `\\server\share\secret`, '\\', true, true},
		{`\\SERVER\Share\Secret.\x`, `\\server\share\secret`, '\\', true, true},
		{`C:\Users`, `C:\Users\u`, '\\', true, false},
	}
	for _, tt := range tests {
		if got := inside(tt.p, tt.dir, tt.sep, tt.fold); got != tt.want {
			t.Errorf("inside(%q, %q, fold %v) = %v, want %v", tt.p, tt.dir, tt.fold, got, tt.want)
		}
	}
}
