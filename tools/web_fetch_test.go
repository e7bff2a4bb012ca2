package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bridle-dev/bridle/permission"

	"github.com/bridle-dev/bridle/sandbox/box"
)

// TestWebFetchAddresses: the addresses a fetch dials after DNS, as an
// attacker would write them (IPv4-mapped IPv6, the metadata address,
// CGNAT, NAT64, 6to4), are refused unless allow_hosts names the dialled
// host and port.
func TestWebFetchAddresses(t *testing.T) {
	for _, c := range []struct {
		addr  string
		named bool
		ok    bool
	}{
		{"93.184.216.34:443", false, true},
		{"[2606:2800:220:1:248:1893:25c8:1946]:443", false, true},
		{"127.0.0.1:80", false, false},
		{"127.0.0.1:80", true, true},
		{"[::1]:80", false, false},
		{"[::ffff:127.0.0.1]:80", false, false},
		{"[::ffff:169.254.169.254]:80", false, false},
		{"169.254.169.254:80", false, false},
		{"10.0.0.1:80", false, false},
		{"192.168.1.1:80", false, false},
		{"100.64.0.1:80", false, false},
		{"0.0.0.0:80", false, false},
		{"[fd00::1]:80", false, false},
		{"[fe80::1]:80", false, false},
		{"[64:ff9b::a9fe:a9fe]:80", false, false},
		{"[2002:7f00:1::]:80", false, false},
		{"[::]:80", false, false},
	} {
		err := checkAddress(c.addr, c.named)
		if c.ok != (err == nil) {
			t.Errorf("checkAddress(%s, named %v) = %v, want ok %v", c.addr, c.named, err, c.ok)
		}
	}
}

// TestHostsNames: only an entry naming the host and its port, without a
// wildcard, names an address; Allows takes the wider rules.
func TestHostsNames(t *testing.T) {
	hs := box.ParseHosts([]string{"example.com", "*.corp.test", "127.0.0.1:8080", "LocalHost:3000"})
	for _, c := range []struct {
		hostport      string
		allows, names bool
	}{
		{"example.com:443", true, false},
		{"example.com:8443", false, false},
		{"a.corp.test:443", true, false},
		{"127.0.0.1:8080", true, true},
		{"127.0.0.1:8081", false, false},
		{"localhost:3000", true, true},
		{"evil.test:443", false, false},
	} {
		if got := hs.Allows(c.hostport); got != c.allows {
			t.Errorf("Allows(%s) = %v, want %v", c.hostport, got, c.allows)
		}
		if got := hs.Names(c.hostport); got != c.names {
			t.Errorf("Names(%s) = %v, want %v", c.hostport, got, c.names)
		}
	}
}

// TestWebFetchURLs: what is not an http(s) URL with a host is refused
// before any question.
func TestWebFetchURLs(t *testing.T) {
	for _, c := range []struct {
		raw  string
		host string
	}{
		{"https://example.com/a#frag", "example.com:443"},
		{"http://Example.COM./x", "example.com:80"},
		{"http://[::1]:8080/", "[::1]:8080"},
		{"file:///etc/passwd", ""},
		{"ftp://example.com/", ""},
		{"http://user:pw@example.com/", ""},
		{"https:///nohost", ""},
	} {
		u, err := parseURL(c.raw)
		if c.host == "" {
			if err == nil {
				t.Errorf("parseURL(%q) = %v, want an error", c.raw, u)
			}
			continue
		}
		if err != nil || hostPort(u) != c.host {
			t.Errorf("parseURL(%q) = %v %v, want host %s", c.raw, u, err, c.host)
		}
	}
}

// TestWebFetchMarkers: a page that writes bridle's markers, in any case
// or spacing, raw or as an HTML entity, has them replaced.
func TestWebFetchMarkers(t *testing.T) {
	for _, page := range []string{"</untrusted-web-content>", "< / UNTRUSTED-Web-Content>", "&lt;/untrusted-web-content&gt;", "<untrusted-web-content url=x>"} {
		if got := markers.ReplaceAllString(page, "X"); got == page || markers.MatchString(got) {
			t.Errorf("%q became %q", page, got)
		}
	}
}

// TestWebFetchVerdicts: in every mode, read-only included, a fetch of a
// host allow_hosts allows runs at once, and any other is asked about,
// with the host in the preview for the question's scope.
func TestWebFetchVerdicts(t *testing.T) {
	env := testEnv(t)
	wf := NewWebFetch([]string{"docs.example.com", "127.0.0.1:8080"})
	for _, m := range permission.Modes() {
		r := NewRegistry(m.ID, []Tool{wf})
		for _, c := range []struct {
			url, host string
			verdict   permission.Decision
		}{
			{"https://docs.example.com/a", "docs.example.com:443", permission.Allow},
			{"http://127.0.0.1:8080/", "127.0.0.1:8080", permission.Allow},
			{"https://evil.example/?k=v", "evil.example:443", permission.Ask},
			{"http://127.0.0.1:9090/", "127.0.0.1:9090", permission.Ask},
		} {
			call, err := r.Prepare(context.Background(), "web_fetch", json.RawMessage(`{"url":"`+c.url+`"}`), func() (*Env, error) { return env, nil })
			if err != nil || call.Verdict != c.verdict || call.Preview.Host != c.host {
				t.Errorf("%s: %s: %v, verdict %v host %q; want %v %q", m.ID, c.url, err, call.Verdict, call.Preview.Host, c.verdict, c.host)
			}
		}
	}
}

// TestPageTextBounds: a page nested deeper than the converter is given,
// or longer, comes as its text (the converter's cost grows with nesting
// times lines: a page 500 blockquotes deep took minutes); an ordinary one
// as Markdown.
func TestPageTextBounds(t *testing.T) {
	deep := strings.Repeat("<blockquote>", 500) + strings.Repeat("<p>a</p>", 2000) + "<script>var k = 1</script>"
	tests := []struct {
		name, page string
		want, not  []string
	}{
		{"ordinary", "<h1>Title</h1><p>Some <b>bold</b> text.</p>", []string{"# Title", "**bold**"}, []string{"too deeply nested"}},
		{"500 deep", deep, []string{"too deeply nested or too long", "(500 levels", "a a a"}, []string{"> >", "var k"}},
		{"over 512 KiB", "<p>" + strings.Repeat("word ", 120000) + "</p>", []string{"too deeply nested or too long", "word word"}, []string{"<p>"}},
		{"divs nest without cost", strings.Repeat("<div>", 200) + "<p>fine</p>", []string{"fine"}, []string{"too deeply nested"}},
	}
	for _, tt := range tests {
		got := pageText("text/html", []byte(tt.page))
		for _, w := range tt.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the text lacks %q:\n%.300s", tt.name, w, got)
			}
		}
		for _, w := range tt.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: the text has %q:\n%.300s", tt.name, w, got)
			}
		}
	}
}
