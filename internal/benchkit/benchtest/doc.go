// Package benchtest holds the checks the benchmark packages' tests share:
// that a run left no goroutine and no file behind, and that a
// configuration's error names every problem. Stacks, the process's
// goroutine stacks one by one, serves other tests that count goroutines.
//
// It is for tests only; the benchmarks themselves use benchkit.
package benchtest
