package web

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// AssetPrefix is the path under which the console's scripts and styles are
// served; the page itself is served at /.
const AssetPrefix = "/console/"

// indexFile is the console page.
const indexFile = "index.html"

// vendorDir holds the third-party scripts and styles, each beside its
// licence (static/vendor/README.md names their versions).
const vendorDir = "vendor/"

// contentTypes are the types of the console's scripts and styles, set
// here instead of taken from the host's MIME tables: the browser runs a
// module script only when it is served as JavaScript, and nosniff holds
// stylesheets to text/css.
var contentTypes = map[string]string{
	".js":  "text/javascript; charset=utf-8",
	".css": "text/css; charset=utf-8",
}

// noncePlaceholder is replaced in the page by the nonce of its response.
var noncePlaceholder = []byte("{{style-nonce}}")

//go:embed static
var files embed.FS

// contentSecurityPolicy lets the page load only its own assets and call
// only its own origin. The page's own answer adds a per-response nonce for
// <style> elements: the terminal renderer (xterm.js) writes its colours and
// cell sizes into such elements, and the console stamps the nonce on each.
// Style attributes are allowed for its 24-bit colours; HTML from agents'
// messages is sanitized with every style attribute removed.
func contentSecurityPolicy(nonce string) string {
	styles := "style-src 'self'; "
	if nonce != "" {
		styles = "style-src 'self' 'nonce-" + nonce + "'; style-src-attr 'unsafe-inline'; "
	}
	return "default-src 'none'; script-src 'self'; " + styles + "img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// Handler serves the console: the page at / and its assets under
// AssetPrefix (vendored ones under AssetPrefix+"vendor/"). Any other path
// is not found.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		// The directory is embedded at build time: it is always there.
		panic("web: " + err.Error())
	}
	page, err := fs.ReadFile(static, indexFile)
	if err != nil {
		panic("web: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		if r.URL.Path == "/" {
			servePage(w, r, page)
			return
		}
		name, ok := strings.CutPrefix(r.URL.Path, AssetPrefix)
		if !ok || !asset(name) {
			http.NotFound(w, r)
			return
		}
		if info, err := fs.Stat(static, name); err != nil || info.IsDir() {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Security-Policy", contentSecurityPolicy(""))
		if t, ok := contentTypes[path.Ext(name)]; ok {
			h.Set("Content-Type", t)
		}
		http.ServeFileFS(w, r, static, name)
	})
}

// asset reports whether name may be served: a file of static other than
// the page, or a file of its vendor directory.
func asset(name string) bool {
	name = strings.TrimPrefix(name, vendorDir)
	return name != "" && name != indexFile && !strings.Contains(name, "/")
}

// servePage writes the page with a fresh style nonce in it and in its
// policy.
func servePage(w http.ResponseWriter, r *http.Request, page []byte) {
	nonce := base64.RawURLEncoding.EncodeToString(randomBytes(16))
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy(nonce))
	h.Set("Content-Type", "text/html; charset=utf-8")
	body := bytes.ReplaceAll(page, noncePlaceholder, []byte(nonce))
	if r.Method == http.MethodHead {
		return
	}
	w.Write(body)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	// crypto/rand.Read never fails on the platforms Go supports.
	rand.Read(b)
	return b
}
