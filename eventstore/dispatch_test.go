package eventstore

import (
	"strings"
	"testing"
	"time"
)

func validDispatch() DispatchContext {
	return DispatchContext{OriginSurface: OriginMobile, OriginProductID: "flowmonk", DispatchMode: DispatchQueued,
		InitiatedAt: "2026-11-24T08:00:00Z"}
}

// TestDispatchContextValidate: every bad shape of a dispatch context is
// refused with an error naming the field, and a header carrying one is
// refused as a whole.
func TestDispatchContextValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(d *DispatchContext)
		field string // "" for valid
		want  string
	}{
		{"valid queued", func(d *DispatchContext) {}, "", ""},
		{"valid scheduled", func(d *DispatchContext) {
			d.DispatchMode, d.ScheduledFor = DispatchScheduled, "2026-11-24T09:00:00+01:00"
		}, "", ""},
		{"valid fractional time", func(d *DispatchContext) { d.InitiatedAt = "2026-11-24T08:00:00.123Z" }, "", ""},
		{"missing surface", func(d *DispatchContext) { d.OriginSurface = "" }, "originSurface", "product-api"},
		{"unknown surface", func(d *DispatchContext) { d.OriginSurface = "tv" }, "originSurface", `"tv" is not accepted`},
		{"missing product", func(d *DispatchContext) { d.OriginProductID = "" }, "originProductId", "required"},
		{"long product", func(d *DispatchContext) { d.OriginProductID = strings.Repeat("a", 129) }, "originProductId", "1 to 128"},
		{"product with space", func(d *DispatchContext) { d.OriginProductID = "flow monk" }, "originProductId", "not accepted"},
		{"product with markup", func(d *DispatchContext) { d.OriginProductID = "<script>" }, "originProductId", "not accepted"},
		{"product leading dot", func(d *DispatchContext) { d.OriginProductID = ".hidden" }, "originProductId", "starting with a letter or digit"},
		{"product non-ASCII", func(d *DispatchContext) { d.OriginProductID = "flowmönk" }, "originProductId", "ASCII"},
		{"missing mode", func(d *DispatchContext) { d.DispatchMode = "" }, "dispatchMode", "interactive"},
		{"unknown mode", func(d *DispatchContext) { d.DispatchMode = "later" }, "dispatchMode", `"later" is not accepted`},
		{"missing initiatedAt", func(d *DispatchContext) { d.InitiatedAt = "" }, "initiatedAt", "RFC 3339"},
		{"bad initiatedAt", func(d *DispatchContext) { d.InitiatedAt = "yesterday" }, "initiatedAt", `"yesterday" is not an RFC 3339 time`},
		{"date only", func(d *DispatchContext) { d.InitiatedAt = "2026-11-24" }, "initiatedAt", "RFC 3339"},
		{"scheduled without time", func(d *DispatchContext) { d.DispatchMode = DispatchScheduled }, "scheduledFor", "required"},
		{"scheduled bad time", func(d *DispatchContext) {
			d.DispatchMode, d.ScheduledFor = DispatchScheduled, "2026-11-24 09:00"
		}, "scheduledFor", "RFC 3339"},
		{"scheduledFor when queued", func(d *DispatchContext) { d.ScheduledFor = "2026-11-24T09:00:00Z" }, "scheduledFor", "only with dispatchMode scheduled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := validDispatch()
			tc.edit(&d)
			err := d.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want a problem with %s", tc.field)
			}
			if !strings.Contains(err.Error(), `"dispatchContext.`+tc.field+`"`) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want field dispatchContext.%s and %q", err, tc.field, tc.want)
			}
			h := validRecords()[KindHeader].(*Header)
			h.DispatchContext = &d
			if err := Validate(h); err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate(header) = %v, want a problem with %s", err, tc.field)
			}
		})
	}
}

// TestHeaderDispatchContext: a header's dispatch context survives the
// round trip, and unknown fields inside it are refused.
func TestHeaderDispatchContext(t *testing.T) {
	h := validRecords()[KindHeader].(*Header)
	d := validDispatch()
	d.DispatchMode, d.ScheduledFor = DispatchScheduled, "2026-11-24T09:00:00Z"
	h.DispatchContext = &d
	data, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := r.(*Header).DispatchContext; got == nil || *got != d {
		t.Fatalf("decoded dispatchContext %+v, want %+v", got, d)
	}
	if got := r.(*Header).DispatchContext.Scheduled(); got.IsZero() || got.Hour() != 9 {
		t.Fatalf("Scheduled() = %v, want 09:00", got)
	}
	bad := strings.Replace(string(data), `"originSurface"`, `"priority":"high","originSurface"`, 1)
	if _, err := Decode([]byte(bad)); err == nil || !strings.Contains(err.Error(), "priority") {
		t.Fatalf("Decode(unknown field) = %v, want a refusal naming priority", err)
	}
}

// FuzzDispatchContext: validation never panics, and whatever it accepts
// has a known surface and mode, a safe product id and parseable times.
func FuzzDispatchContext(f *testing.F) {
	f.Add("mobile", "flowmonk", "queued", "2026-11-24T08:00:00Z", "")
	f.Add("web", "a", "scheduled", "2026-11-24T08:00:00Z", "2026-11-24T09:00:00+02:00")
	f.Add("tv", "", "later", "x", "y")
	f.Fuzz(func(t *testing.T, surface, product, mode, initiated, scheduled string) {
		d := DispatchContext{OriginSurface: OriginSurface(surface), OriginProductID: product, DispatchMode: DispatchMode(mode),
			InitiatedAt: initiated, ScheduledFor: scheduled}
		if d.Validate() != nil {
			return
		}
		if !safeProductID(product) || len(product) == 0 || len(product) > MaxOriginProductIDLength {
			t.Fatalf("accepted product id %q", product)
		}
		if _, err := time.Parse(time.RFC3339, scheduled); d.DispatchMode == DispatchScheduled && err != nil {
			t.Fatalf("accepted scheduled %q without a time", scheduled)
		}
		if d.DispatchMode != DispatchScheduled && scheduled != "" {
			t.Fatalf("accepted scheduledFor %q with mode %q", scheduled, mode)
		}
	})
}
