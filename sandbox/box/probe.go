package box

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Probe runs the box's doctor report in the background, so that
// initialize can name the missing layers without waiting on a cold start
// more than it must.
type Probe struct {
	done chan struct{}
	rep  Report
}

// StartProbe starts probing b.
func StartProbe(b *Box) *Probe {
	p := &Probe{done: make(chan struct{})}
	go func() {
		p.rep = b.Report()
		close(p.done)
	}()
	return p
}

// Report waits for the probe and returns its report.
func (p *Probe) Report() Report {
	<-p.done
	return p.rep
}

// MarshalJSON renders the report for initialize's _meta: the layers, the
// missing ones with what bridle does without them, and whether commands
// are kept in at all.
func (p *Probe) MarshalJSON() ([]byte, error) {
	r := p.Report()
	missing := r.MissingLayers()
	if missing == nil {
		missing = []string{}
	}
	return json.Marshal(struct {
		Layers  []Layer  `json:"layers"`
		Missing []string `json:"missing"`
		// Unconfined says why commands are not kept in, when they are not
		// (full-auto then asks once per session).
		Unconfined string `json:"unconfined,omitempty"`
	}{r.Layers, missing, r.Unconfined()})
}

// Probing the box means starting a confined process, which costs from a
// few to a few hundred milliseconds depending on the machine; an editor
// waits for initialize meanwhile. What the box can do changes only with
// the kernel, its settings, the user and the binary, so the report is
// kept for the rest of the boot, keyed by all of them. A stale answer
// cannot hide a missing layer for long: every command's result names the
// layers it actually ran without.

// StartProbeCached is StartProbe with the report kept in cacheDir (use
// "" to always probe).
func StartProbeCached(b *Box, cacheDir string) *Probe {
	if cacheDir == "" {
		return StartProbe(b)
	}
	path := filepath.Join(cacheDir, "sandbox-probe-"+probeKey()+".json")
	if data, err := os.ReadFile(path); err == nil {
		var rep Report
		if json.Unmarshal(data, &rep) == nil && len(rep.Layers) > 0 {
			p := &Probe{done: make(chan struct{}), rep: rep}
			close(p.done)
			return p
		}
	}
	p := &Probe{done: make(chan struct{})}
	go func() {
		p.rep = b.Report()
		close(p.done)
		if data, err := json.Marshal(p.rep); err == nil && os.MkdirAll(cacheDir, 0o700) == nil {
			// Written whole then renamed, so a reader never sees half of it.
			tmp := path + fmt.Sprintf(".%d", os.Getpid())
			if os.WriteFile(tmp, data, 0o600) == nil {
				os.Rename(tmp, path)
			}
		}
	}()
	return p
}

// probeKey names what the probe's answer depends on: this boot, the
// kernel, the user, and this bridle binary.
func probeKey() string {
	h := sha256.New()
	for _, f := range []string{"/proc/sys/kernel/random/boot_id", "/proc/sys/kernel/osrelease",
		"/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces"} {
		b, _ := os.ReadFile(f)
		h.Write([]byte(strings.TrimSpace(string(b)) + "\n"))
	}
	fmt.Fprintf(h, "boot=%s\n", bootStamp())
	fmt.Fprintf(h, "uid=%d\n", os.Getuid())
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			fmt.Fprintf(h, "exe=%s %d %d\n", exe, st.Size(), st.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
