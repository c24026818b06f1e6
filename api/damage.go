package api

import (
	"fmt"
	"net/http"

	"github.com/agentjournal/agentjournal/api/wire"
	"github.com/agentjournal/agentjournal/integrity"
)

// maxDamageListed bounds the damaged journals /healthz names.
const maxDamageListed = 100

// damaged is what the checks found, bounded for /healthz.
func (s *Server) damaged() []string {
	if s.cfg.Damage == nil {
		return nil
	}
	var list []string
	for i, f := range s.cfg.Damage.Findings() {
		if i == maxDamageListed {
			list = append(list, fmt.Sprintf("… and %d more", len(s.cfg.Damage.Findings())-i))
			break
		}
		list = append(list, f.String())
	}
	return list
}

// refuseDamaged answers a write to a journal found damaged.
func (s *Server) refuseDamaged(id string) error {
	if s.cfg.Damage == nil {
		return nil
	}
	if f, ok := s.cfg.Damage.Damaged(id); ok {
		return damagedError(&integrity.DamageError{Finding: f})
	}
	return nil
}

// damagedError answers a write refused because its journal lost records.
func damagedError(err error) *apiError {
	return &apiError{status: http.StatusInternalServerError, code: wire.CodeDamaged, message: err.Error()}
}
