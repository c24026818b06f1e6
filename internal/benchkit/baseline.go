package benchkit

// Versus is how a result compares with its baseline, another result of the
// same report.
type Versus struct {
	Base Result
	// RateRatio is the result's rate over the baseline's, and P99Ratio its
	// p99 over the baseline's; each 0 when the baseline's is.
	RateRatio, P99Ratio float64
}

// Versus compares res with its baseline among r's results; ok is false
// when res names none there (no baseline, or a figure measured beside it
// such as "raw").
func (r Report) Versus(res Result) (v Versus, ok bool) {
	if v.Base, ok = r.Result(res.Baseline); !ok || res.Baseline == "" {
		return Versus{}, false
	}
	if v.Base.Rate > 0 {
		v.RateRatio = res.Rate / v.Base.Rate
	}
	if v.Base.P99 > 0 {
		v.P99Ratio = float64(res.P99) / float64(v.Base.P99)
	}
	return v, true
}
