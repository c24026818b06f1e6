// Package benchtest holds the checks the benchmark packages' tests share:
// a run at a test's sizes (RunSmall) that left no goroutine and no file
// behind (Scratch, or WaitGoroutines and EmptyDir), one progress line a
// result (ProgressLines), that its report prints as text and as JSON with
// every result (Reports), that a configuration's error names every
// problem and that Run refuses it (Validates), and the full run at default
// sizes that an environment variable asks for (RunDefaults). Stacks, the
// process's goroutine stacks one by one, serves other tests that count
// goroutines.
//
// It is for tests only; the benchmarks themselves use benchkit.
package benchtest
