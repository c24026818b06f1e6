package api

import (
	"net/http"
	"testing"
)

// TestOwnPaceNamesRoutes: every route excused from waiting for the read
// models is registered under that pattern; a renamed route would
// otherwise start waiting without anyone noticing.
func TestOwnPaceNamesRoutes(t *testing.T) {
	s := &Server{mux: http.NewServeMux(), access: map[string]access{}}
	s.routes()
	for pattern := range ownPace {
		if _, ok := s.access[pattern]; !ok {
			t.Errorf("ownPace names %q, which is not a registered route", pattern)
		}
	}
}
