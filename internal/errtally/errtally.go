package errtally

// Count is one message among errors: the first error with it and how many
// errors had it.
type Count struct {
	Err error
	N   int
}

// Tally counts errs by message, in the order each message first came; nil
// errors are left out.
func Tally(errs []error) []Count {
	var out []Count
	at := map[string]int{}
	for _, err := range errs {
		if err == nil {
			continue
		}
		msg := err.Error()
		if i, ok := at[msg]; ok {
			out[i].N++
			continue
		}
		at[msg] = len(out)
		out = append(out, Count{Err: err, N: 1})
	}
	return out
}
