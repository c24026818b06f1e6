package storebench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentjournal/agentjournal/internal/benchkit"
)

// WriteText writes the report as an aligned table, one row per result,
// followed by what each raw figure is.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "journal store vs raw JetStream: %s\n", r.Host)
	fmt.Fprintf(&b, "%d-byte records; every figure is the median of %d rounds; the run took %s\n\n",
		r.RecordBytes, r.Rounds, r.Elapsed.Round(100*time.Millisecond))

	rows := [][]string{{"NAME", "RECORDS", "STORE REC/S", "RAW REC/S", "RATIO", "TARGET", "RESULT"}}
	for _, res := range r.Results {
		target, verdict := "-", "-"
		if res.Target > 0 {
			target, verdict = fmt.Sprintf("%.2f", res.Target), res.Verdict()
		}
		rows = append(rows, []string{
			res.Name,
			strconv.Itoa(res.Records),
			fmt.Sprintf("%.0f", res.PerSecond),
			fmt.Sprintf("%.0f", res.RawPerSecond),
			fmt.Sprintf("%.2f", res.Ratio),
			target,
			verdict,
		})
	}
	// The verdict, a word, reads best aligned left.
	benchkit.WriteTable(&b, rows, len(rows[0])-1)

	peers := [][]string{{"NAME", "STORE REC/S", "PEER REC/S", "RATIO", "TARGET", "RESULT"}}
	for _, res := range r.Results {
		if res.PeerPerSecond == 0 {
			continue
		}
		peers = append(peers, []string{
			res.Name,
			fmt.Sprintf("%.0f", res.PerSecond),
			fmt.Sprintf("%.0f", res.PeerPerSecond),
			fmt.Sprintf("%.2f", res.PeerRatio),
			fmt.Sprintf("%.2f", res.PeerTarget),
			res.PeerVerdict(),
		})
	}
	if len(peers) > 1 {
		fmt.Fprintf(&b, "\ndurable appends vs the SQLite peer, same run (%s):\n", peerDescription)
		benchkit.WriteTable(&b, peers, len(peers[0])-1)
	}

	b.WriteString("\nraw baselines:\n")
	names, notes := make([]string, len(r.Results)), make([]string, len(r.Results))
	for i, res := range r.Results {
		names[i], notes[i] = res.Name, res.Baseline
	}
	benchkit.WriteNotes(&b, names, notes)
	_, err := io.WriteString(w, b.String())
	return err
}

// jsonReport is the JSON form of a Report. Durations are seconds.
type jsonReport struct {
	benchkit.Host
	Started        time.Time    `json:"started"`
	ElapsedSeconds float64      `json:"elapsedSeconds"`
	Rounds         int          `json:"rounds"`
	RecordBytes    int          `json:"recordBytes"`
	Config         jsonConfig   `json:"config"`
	Results        []jsonResult `json:"results"`
}

type jsonConfig struct {
	Records      int `json:"records"`
	ReadRecords  int `json:"readRecords"`
	Journals     int `json:"journals"`
	Writers      int `json:"writers"`
	PayloadBytes int `json:"payloadBytes"`
}

type jsonResult struct {
	Name              string  `json:"name"`
	Records           int     `json:"records"`
	ElapsedSeconds    float64 `json:"elapsedSeconds"`
	RawElapsedSeconds float64 `json:"rawElapsedSeconds"`
	PerSecond         float64 `json:"perSecond"`
	RawPerSecond      float64 `json:"rawPerSecond"`
	Ratio             float64 `json:"ratio"`
	Target            float64 `json:"target,omitempty"`
	Verdict           string  `json:"verdict,omitempty"`
	Baseline          string  `json:"baseline"`
	PeerPerSecond     float64 `json:"peerPerSecond,omitempty"`
	PeerRatio         float64 `json:"peerRatio,omitempty"`
	PeerTarget        float64 `json:"peerTarget,omitempty"`
	PeerVerdict       string  `json:"peerVerdict,omitempty"`
}

// WriteJSON writes the report as one indented JSON object.
func (r Report) WriteJSON(w io.Writer) error {
	out := jsonReport{
		Host:           r.Host,
		Started:        r.Started,
		ElapsedSeconds: r.Elapsed.Seconds(),
		Rounds:         r.Rounds,
		RecordBytes:    r.RecordBytes,
		Config: jsonConfig{
			Records:      r.Config.Records,
			ReadRecords:  r.Config.ReadRecords,
			Journals:     r.Config.Journals,
			Writers:      r.Config.Writers,
			PayloadBytes: r.Config.PayloadBytes,
		},
		Results: make([]jsonResult, len(r.Results)),
	}
	for i, res := range r.Results {
		out.Results[i] = jsonResult{
			Name:              res.Name,
			Records:           res.Records,
			ElapsedSeconds:    res.Elapsed.Seconds(),
			RawElapsedSeconds: res.RawElapsed.Seconds(),
			PerSecond:         res.PerSecond,
			RawPerSecond:      res.RawPerSecond,
			Ratio:             res.Ratio,
			Target:            res.Target,
			Verdict:           res.Verdict(),
			Baseline:          res.Baseline,
			PeerPerSecond:     res.PeerPerSecond,
			PeerRatio:         res.PeerRatio,
			PeerTarget:        res.PeerTarget,
			PeerVerdict:       res.PeerVerdict(),
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
