package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

// AssetPrefix is the path under which the console's scripts and styles are
// served; the page itself is served at /.
const AssetPrefix = "/console/"

// indexFile is the console page.
const indexFile = "index.html"

//go:embed static
var files embed.FS

// contentSecurityPolicy lets the page load only its own assets and call
// only its own origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Handler serves the console: the page at / and its assets under
// AssetPrefix. Any other path is not found.
func Handler() http.Handler {
	static, err := fs.Sub(files, "static")
	if err != nil {
		// The directory is embedded at build time: it is always there.
		panic("web: " + err.Error())
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := indexFile
		if r.URL.Path != "/" {
			var ok bool
			name, ok = strings.CutPrefix(r.URL.Path, AssetPrefix)
			if !ok || name == "" || name == indexFile || strings.Contains(name, "/") {
				http.NotFound(w, r)
				return
			}
		}
		if _, err := fs.Stat(static, name); err != nil {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, static, name)
	})
}
