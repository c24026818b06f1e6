// Package agenttest is the contract every agent's reader keeps, and the
// helpers its tests share: TestReader runs the contract on the captures
// under a CLI folder's testdata, FuzzReader and BenchmarkReader fuzz and
// measure a reader on them, and Parse, Describe and the usage folds check
// and render what a reader found.
package agenttest
