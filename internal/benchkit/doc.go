// Package benchkit holds what the four benchmark packages (storebench,
// projbench, apibench, fleetbench) share: the description of the machine a
// report was measured on, configuration checks, the statistics (rate,
// median, percentile) and the aligned text tables of their reports.
package benchkit
