package box

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// proxy is an HTTP proxy (CONNECT and plain HTTP) that lets a box reach
// only the hosts its policy allows.
type proxy struct {
	allow  Hosts
	srv    *http.Server
	mu     sync.Mutex
	denied []string
	conns  sync.WaitGroup
}

type hostRule struct {
	host string // lower case; "*.example.com" matches subdomains
	port string // "" means 80 and 443
}

// Hosts are the allow_hosts rules of the settings: what the box's proxy
// lets a command reach, and what web_fetch may fetch without asking.
type Hosts []hostRule

// ParseHosts reads allow_hosts entries: "example.com" (ports 80 and
// 443), "*.example.com" (its subdomains), "host:8080" (that port only).
func ParseHosts(hosts []string) Hosts {
	var out Hosts
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			continue
		}
		r := hostRule{host: h}
		if host, port, err := net.SplitHostPort(h); err == nil {
			r.host, r.port = host, port
		}
		out = append(out, r)
	}
	return out
}

// Allows reports whether hostport ("example.com:443") is allowed.
func (hs Hosts) Allows(hostport string) bool {
	return hs.match(hostport, func(r hostRule) bool { return true })
}

// Names reports whether one rule names hostport exactly: the host
// without a wildcard and the port written out ("127.0.0.1:8080"). Only
// such a rule lets web_fetch reach a loopback or private address: the
// user wrote that very address down.
func (hs Hosts) Names(hostport string) bool {
	return hs.match(hostport, func(r hostRule) bool { return r.port != "" && !strings.HasPrefix(r.host, "*.") })
}

func (hs Hosts) match(hostport string, also func(hostRule) bool) bool {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range hs {
		if r.port == "" && port != "80" && port != "443" || r.port != "" && r.port != port {
			continue
		}
		if (r.host == host || strings.HasPrefix(r.host, "*.") && strings.HasSuffix(host, r.host[1:])) && also(r) {
			return true
		}
	}
	return false
}

func (p *proxy) allowed(hostport string) bool { return p.allow.Allows(hostport) }

func (p *proxy) deny(w http.ResponseWriter, hostport string) {
	p.mu.Lock()
	if !slices.Contains(p.denied, hostport) {
		p.denied = append(p.denied, hostport)
	}
	p.mu.Unlock()
	http.Error(w, fmt.Sprintf("bridle: %s is not in this session's allowed hosts", hostport), http.StatusForbidden)
}

// Denied returns the hosts refused so far.
func (p *proxy) Denied() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.denied...)
}

func newProxy(hosts []string) *proxy {
	p := &proxy{allow: ParseHosts(hosts)}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	return p
}

// serve runs the proxy on ln until close.
func (p *proxy) serve(ln net.Listener) {
	go p.srv.Serve(ln)
}

func (p *proxy) close() {
	p.srv.Close()
	p.conns.Wait()
}

var dialer = net.Dialer{Timeout: 15 * time.Second}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Host == "" {
		http.Error(w, "bridle: this is a proxy; send absolute URLs", http.StatusBadRequest)
		return
	}
	hostport := r.URL.Host
	if _, _, err := net.SplitHostPort(hostport); err != nil {
		hostport = net.JoinHostPort(r.URL.Hostname(), "80")
	}
	if r.URL.Scheme != "http" || !p.allowed(hostport) {
		p.deny(w, hostport)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.Header.Del("Proxy-Connection")
	out.Header.Del("Proxy-Authorization")
	tr := &http.Transport{Proxy: nil, DialContext: dialer.DialContext}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(out)
	if err != nil {
		http.Error(w, "bridle proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

func (p *proxy) connect(w http.ResponseWriter, r *http.Request) {
	hostport := r.Host
	if !p.allowed(hostport) {
		p.deny(w, hostport)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	up, err := dialer.DialContext(ctx, "tcp", hostport)
	cancel()
	if err != nil {
		http.Error(w, "bridle proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "bridle proxy: cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	down.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n"))
	p.conns.Add(1)
	go func() {
		defer p.conns.Done()
		done := make(chan struct{}, 2)
		go func() {
			if n := buf.Reader.Buffered(); n > 0 {
				b, _ := buf.Reader.Peek(n)
				up.Write(b)
			}
			io.Copy(up, down)
			done <- struct{}{}
		}()
		go func() { io.Copy(down, up); done <- struct{}{} }()
		<-done
		up.Close()
		down.Close()
		<-done
	}()
}
