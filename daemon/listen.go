package daemon

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/agentjournal/agentjournal/api/wire"
)

// What guards the API's listener: the http.Server's timeouts
// (Config.ReadHeaderTimeout, ReadTimeout, IdleTimeout), its cap on
// connections (Config.MaxConns, a netutil.LimitListener), and the Host
// check.
//
// The Host check: a daemon on 127.0.0.1 is reached by any page a local
// browser opens once that page's DNS name is made to resolve to 127.0.0.1
// (DNS rebinding): the browser then takes the daemon for the page's own
// site. Such a request still names the page's site in its Host header, so
// only loopback names and addresses, the listener's own address and the
// names given in Config.AllowedHosts are answered.
//
// ReadTimeout bounds the reading of a request's headers and body, so that
// a client cannot hold a connection by sending its body a byte at a time.
// It does not end the event stream or a long poll: net/http lifts the read
// deadline once the body has been read (its background read, which watches
// for the client going away), and TestStreamOutlivesReadTimeout holds it
// to that. There is no WriteTimeout for the same reason; the stream bounds
// each of its writes itself.

// guard wraps the API's handler for the listener at addr.
func (d *Daemon) guard(next http.Handler, addr net.Addr) http.Handler {
	hosts := hostPolicy{allowed: d.cfg.AllowedHosts}
	if ta, ok := addr.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ta.IP); ok && !ip.Unmap().IsUnspecified() {
			hosts.listener = ip.Unmap()
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.allows(r.Host) {
			writeRefusal(w, http.StatusMisdirectedRequest, wire.CodeForbidden, fmt.Sprintf(
				"this daemon does not answer to the host %q (want localhost, a loopback address%s%s); a page whose name was made to point here is refused so, "+
					"and a name this daemon is reached by is given with serve --allowed-host NAME",
				clipHost(r.Host), hosts.listenerText(), hosts.allowedText()))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostPolicy is which Host headers the listener answers.
type hostPolicy struct {
	listener netip.Addr // invalid when it listens on every address
	allowed  []string
}

func (p hostPolicy) allows(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "" {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// RFC 6761: these resolve to loopback and to nothing else.
		return true
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		ip = ip.Unmap()
		if ip.IsLoopback() || ip == p.listener {
			return true
		}
	}
	return slices.ContainsFunc(p.allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "."), host) })
}

func (p hostPolicy) listenerText() string {
	if !p.listener.IsValid() || p.listener.IsLoopback() {
		return ""
	}
	return ", " + p.listener.String()
}

func (p hostPolicy) allowedText() string {
	if len(p.allowed) == 0 {
		return ""
	}
	return ", " + strings.Join(p.allowed, ", ")
}

// checkAllowedHost refuses what cannot be a Host header's name.
func checkAllowedHost(h string) error {
	if h == "" {
		return fmt.Errorf("an empty name (want a host name or address, e.g. agentjournal.internal or 10.0.0.5)")
	}
	if _, _, err := net.SplitHostPort(h); err == nil || strings.ContainsAny(h, "/ \t") {
		return fmt.Errorf("%q is not a host name or address (give it without a scheme or port, e.g. agentjournal.internal)", h)
	}
	return nil
}

// clipHost bounds a Host header quoted in a refusal.
func clipHost(h string) string {
	if len(h) > 128 {
		return h[:128] + "..."
	}
	return h
}

// writeRefusal answers in the API's error shape.
func writeRefusal(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(wire.ErrorBody{Error: wire.ErrorDetail{Code: code, Message: message}}) // the client is gone if this fails
}
